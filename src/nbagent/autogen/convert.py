"""AutoGen's data as nbagent's: LLM messages, results, chat messages and events.

nbagent's types mirror AutoGen's (the same names, fields and ``type`` strings), so a conversion is
a field-by-field copy that keeps every id, source, usage, metadata and ``created_at``. AutoGen
types nbagent has no twin for (``StopMessage``, ``MultiModalMessage``, ``SelectSpeakerEvent``, a
custom message...) become :class:`ForeignMessage` or :class:`ForeignEvent`: their AutoGen
``type``, their text (``to_text()``) and their common fields.

The conversion goes one way: the trace, the views and the DataFrames read nbagent's types, and
``nbagent.autogen.run`` returns AutoGen's own ``TaskResult``. A :class:`Converter` converts each
AutoGen LLM message once (kept by identity), so the context log and the requests the trace keeps
share their messages, as they do for nbagent's own agents.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from autogen_agentchat import messages as ag
from autogen_core import CancellationToken as AgCancellationToken
from autogen_core import FunctionCall as AgFunctionCall
from autogen_core import Image as AgImage
from autogen_core import models as agm
from pydantic import BaseModel, PrivateAttr, create_model

from .. import messages as nb
from ..cancellation import CancellationToken as NbCancellationToken
from ..tools import ToolSchema

# gen_ai.provider.name of the clients autogen-ext ships, by class name.
PROVIDERS = {
    "OpenAIChatCompletionClient": "openai",
    "AzureOpenAIChatCompletionClient": "azure.ai.openai",
    "AzureAIChatCompletionClient": "azure.ai.inference",
    "AnthropicChatCompletionClient": "anthropic",
    "AnthropicBedrockChatCompletionClient": "aws.bedrock",
    "OllamaChatCompletionClient": "ollama",
    "LlamaCppChatCompletionClient": "llama.cpp",
    "SKChatCompletionAdapter": "semantic_kernel",
    "ReplayChatCompletionClient": "autogen.replay",
}


class ForeignMessage(nb.BaseChatMessage):
    """An AutoGen chat message nbagent has no type for (``StopMessage``, ``MultiModalMessage``, a
    custom one): its AutoGen ``type`` in ``autogen_type`` (and ``type``), its text in ``content``.

    Each AutoGen type gets a subclass of its name (:func:`foreign_class`), so the trace's ``kind``
    column names it as AutoGen does."""

    content: str
    autogen_type: str
    type: str = "ForeignMessage"
    _model_message: nb.UserMessage | None = PrivateAttr(default=None)

    def to_model_message(self) -> nb.UserMessage:
        """What AutoGen's own ``to_model_message()`` made of the message (a ``MultiModalMessage``'s
        images included), else its text."""
        return self._model_message if self._model_message is not None else super().to_model_message()


class ForeignEvent(nb.BaseAgentEvent):
    """An AutoGen event nbagent has no type for (``SelectSpeakerEvent``, ``CodeExecutionEvent``, a
    custom one): its AutoGen ``type`` in ``autogen_type`` (and ``type``), its text in ``content``;
    a subclass of the AutoGen type's name, as for :class:`ForeignMessage`."""

    content: str
    autogen_type: str
    type: str = "ForeignEvent"


F = TypeVar("F", ForeignMessage, ForeignEvent)
_FOREIGN: dict[tuple[type, str], type[Any]] = {}


def foreign_class(base: type[F], name: str) -> type[F]:
    """The subclass of ``base`` named ``name`` (an AutoGen type's name), made once."""
    made = _FOREIGN.get((base, name))
    if made is None:
        title = name if name.isidentifier() else base.__name__
        made = _FOREIGN[(base, name)] = create_model(title, __base__=base, __module__=__name__)
    return made


def usage(value: agm.RequestUsage | None) -> nb.RequestUsage | None:
    if value is None:
        return None
    return nb.RequestUsage(prompt_tokens=value.prompt_tokens or 0, completion_tokens=value.completion_tokens or 0)


def function_call(call: AgFunctionCall) -> nb.FunctionCall:
    return nb.FunctionCall(id=call.id, name=call.name, arguments=call.arguments)


def function_result(result: agm.FunctionExecutionResult) -> nb.FunctionExecutionResult:
    return nb.FunctionExecutionResult(
        content=result.content, name=result.name, call_id=result.call_id, is_error=bool(result.is_error)
    )


def image(value: AgImage) -> nb.Image:
    uri = value.data_uri  # data:<mime>;base64,<data>
    mime = uri[5 : uri.index(";")] if uri.startswith("data:") and ";" in uri else "image/png"
    return nb.Image(data=value.to_base64(), mime_type=mime)


def _user_content(content: str | Sequence[Any]) -> str | list[str | nb.Image]:
    if isinstance(content, str):
        return content
    return [image(part) if isinstance(part, AgImage) else str(part) for part in content]


def llm_message(message: Any) -> nb.LLMMessage:
    """An AutoGen LLM message as nbagent's."""
    if isinstance(message, agm.SystemMessage):
        return nb.SystemMessage(content=message.content)
    if isinstance(message, agm.UserMessage):
        return nb.UserMessage(content=_user_content(message.content), source=message.source)
    if isinstance(message, agm.AssistantMessage):
        content = message.content
        return nb.AssistantMessage(
            content=content if isinstance(content, str) else [function_call(call) for call in content],
            thought=message.thought,
            source=message.source,
        )
    if isinstance(message, agm.FunctionExecutionResultMessage):
        return nb.FunctionExecutionResultMessage(content=[function_result(result) for result in message.content])
    raise TypeError(f"not an AutoGen LLM message: {type(message).__name__}")


def llm_message_out(message: nb.LLMMessage) -> Any:
    """nbagent's LLM message as AutoGen's (``autogen_core.models``): the same fields."""
    if isinstance(message, nb.SystemMessage):
        return agm.SystemMessage(content=message.content)
    if isinstance(message, nb.UserMessage):
        content = message.content
        if isinstance(content, str):
            return agm.UserMessage(content=content, source=message.source)
        parts: list[str | AgImage] = [
            AgImage.from_base64(part.data) if isinstance(part, nb.Image) else part for part in content
        ]
        return agm.UserMessage(content=parts, source=message.source)
    if isinstance(message, nb.AssistantMessage):
        body = message.content
        return agm.AssistantMessage(
            content=body
            if isinstance(body, str)
            else [AgFunctionCall(id=call.id, name=call.name, arguments=call.arguments) for call in body],
            thought=message.thought,
            source=message.source,
        )
    if isinstance(message, nb.FunctionExecutionResultMessage):
        return agm.FunctionExecutionResultMessage(
            content=[
                agm.FunctionExecutionResult(
                    content=result.content, name=result.name, call_id=result.call_id, is_error=result.is_error
                )
                for result in message.content
            ]
        )
    raise TypeError(f"not an LLM message: {type(message).__name__}")


def create_result_out(result: nb.CreateResult) -> agm.CreateResult:
    """nbagent's ``CreateResult`` as AutoGen's (for AutoGen's agent calling nbagent's client)."""
    content = result.content
    return agm.CreateResult(
        finish_reason=result.finish_reason,
        content=content
        if isinstance(content, str)
        else [AgFunctionCall(id=call.id, name=call.name, arguments=call.arguments) for call in content],
        usage=agm.RequestUsage(
            prompt_tokens=result.usage.prompt_tokens, completion_tokens=result.usage.completion_tokens
        ),
        cached=result.cached,
        thought=result.thought,
    )


def autogen_token(token: AgCancellationToken | NbCancellationToken | None) -> AgCancellationToken:
    """AutoGen's ``CancellationToken``: ``token`` itself, or one that nbagent's ``token`` fires."""
    if isinstance(token, AgCancellationToken):
        return token
    made = AgCancellationToken()
    if token is not None:
        if token.is_cancelled():
            made.cancel()
        else:
            token.add_callback(made.cancel)
    return made


def create_result(result: agm.CreateResult) -> nb.CreateResult:
    content = result.content
    reason = result.finish_reason if result.finish_reason in _REASONS else "unknown"
    return nb.CreateResult(
        finish_reason=reason,
        content=content if isinstance(content, str) else [function_call(call) for call in content],
        usage=usage(result.usage) or nb.RequestUsage(),
        cached=result.cached,
        thought=result.thought,
    )


_REASONS = {"stop", "length", "function_calls", "content_filter", "unknown"}


def tool_schema(tool: Any) -> ToolSchema:
    """An AutoGen ``Tool`` or ``ToolSchema`` as nbagent's ``ToolSchema`` (a plain dict)."""
    schema: Mapping[str, Any] = tool.schema if hasattr(tool, "schema") else tool
    out = ToolSchema(name=str(schema["name"]))
    if "description" in schema:
        out["description"] = str(schema["description"])
    if "parameters" in schema:
        out["parameters"] = dict(schema["parameters"])
    if "strict" in schema:
        out["strict"] = bool(schema["strict"])
    return out


def tool_choice(value: Any) -> str:
    """``auto``, ``required``, ``none`` or a tool's name (AutoGen may pass the ``Tool`` itself)."""
    return value if isinstance(value, str) else str(getattr(value, "name", value))


def _text(message: ag.BaseMessage) -> str:
    try:
        return message.to_text()
    except Exception as error:  # a custom message whose to_text fails still gets a row
        return f"<{type(message).__name__}: to_text() failed: {error}>"


def _memory(item: Any) -> nb.MemoryContent:
    content = item.content
    if isinstance(content, AgImage):
        value: str | dict[str, Any] | nb.Image = image(content)
    elif isinstance(content, bytes):
        value = f"<{len(content)} bytes>"
    elif isinstance(content, (str, dict)):
        value = content
    else:
        value = str(content)
    mime = getattr(item.mime_type, "value", item.mime_type)
    metadata = item.metadata if isinstance(item.metadata, dict) else None
    return nb.MemoryContent(content=value, mime_type=str(mime), metadata=metadata)


def _common(message: ag.BaseChatMessage | ag.BaseAgentEvent) -> dict[str, Any]:
    return {
        "id": message.id,
        "source": message.source,
        "models_usage": usage(message.models_usage),
        "metadata": dict(message.metadata),
        "created_at": message.created_at,
    }


class Converter:
    """Converts AutoGen's items to nbagent's, each LLM message once (the same object every time).

    A converted LLM message is kept with the AutoGen message it came from (so its ``id`` stays its
    own): the model context's log and the requests of the LLM calls then hold the same nbagent
    messages, as the trace expects of a context that is only appended to.
    """

    def __init__(self) -> None:
        self._llm: dict[int, tuple[Any, nb.LLMMessage]] = {}

    def llm(self, message: Any) -> nb.LLMMessage:
        kept = self._llm.get(id(message))
        if kept is not None and kept[0] is message:
            return kept[1]
        converted = llm_message(message)
        self._llm[id(message)] = (message, converted)
        return converted

    def llms(self, messages: Sequence[Any]) -> list[nb.LLMMessage]:
        return [self.llm(message) for message in messages]

    def chat(self, message: ag.BaseChatMessage) -> nb.BaseChatMessage:
        """A chat message as nbagent's (an unknown type as a :class:`ForeignMessage`)."""
        common = _common(message)
        if isinstance(message, ag.HandoffMessage):
            return nb.HandoffMessage(
                target=message.target, content=message.content, context=self.llms(message.context), **common
            )
        if isinstance(message, ag.ToolCallSummaryMessage):
            return nb.ToolCallSummaryMessage(
                content=message.content,
                tool_calls=[function_call(call) for call in message.tool_calls],
                results=[function_result(result) for result in message.results],
                **common,
            )
        if isinstance(message, ag.StructuredMessage) and isinstance(message.content, BaseModel):
            kind: Any = nb.StructuredMessage[type(message.content)]  # type: ignore[misc]
            return kind(content=message.content, format_string=message.format_string, **common)  # type: ignore[no-any-return]
        if type(message) is ag.TextMessage:
            return nb.TextMessage(content=message.content, **common)
        kind = _type_of(message)
        foreign = foreign_class(ForeignMessage, kind)(content=_text(message), autogen_type=kind, type=kind, **common)
        try:
            model_message = llm_message(message.to_model_message())
        except Exception:  # noqa: BLE001 (a custom message whose to_model_message fails: its text)
            model_message = None
        if isinstance(model_message, nb.UserMessage):
            foreign._model_message = model_message  # noqa: SLF001 (its own class's private attribute, set as made)
        return foreign

    def event(self, event: ag.BaseAgentEvent) -> nb.BaseAgentEvent:
        """An event as nbagent's (an unknown type as a :class:`ForeignEvent`)."""
        common = _common(event)
        if isinstance(event, ag.ToolCallRequestEvent):
            return nb.ToolCallRequestEvent(content=[function_call(call) for call in event.content], **common)
        if isinstance(event, ag.ToolCallExecutionEvent):
            return nb.ToolCallExecutionEvent(content=[function_result(result) for result in event.content], **common)
        if isinstance(event, ag.ModelClientStreamingChunkEvent):
            return nb.ModelClientStreamingChunkEvent(
                content=event.content, full_message_id=event.full_message_id, **common
            )
        if isinstance(event, ag.ThoughtEvent):
            return nb.ThoughtEvent(content=event.content, **common)
        if isinstance(event, ag.MemoryQueryEvent):
            return nb.MemoryQueryEvent(content=[_memory(item) for item in event.content], **common)
        kind = _type_of(event)
        return foreign_class(ForeignEvent, kind)(content=_text(event), autogen_type=kind, type=kind, **common)

    def item(self, item: ag.BaseChatMessage | ag.BaseAgentEvent) -> nb.BaseChatMessage | nb.BaseAgentEvent:
        if isinstance(item, ag.BaseChatMessage):
            return self.chat(item)
        return self.event(item)


def _type_of(message: ag.BaseMessage) -> str:
    kind = getattr(message, "type", None)
    return kind if isinstance(kind, str) else type(message).__name__
