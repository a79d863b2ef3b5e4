"""nbagent's agents in AutoGen's teams: AutoGen's ``ChatAgent`` protocol, spoken with AutoGen's types.

AutoGen's group chats (``RoundRobinGroupChat``, ``SelectorGroupChat``, ``Swarm``...) hold each
participant in a container that calls ``agent.on_messages_stream(messages, cancellation_token)`` with
AutoGen's chat messages and AutoGen's ``CancellationToken``, and reads back AutoGen's events, chat
messages and ``Response`` (it publishes them through a ``MessageFactory`` that knows only AutoGen's
types). ``Swarm`` also checks ``isinstance(participant, ChatAgent)``.

So nbagent's ``AssistantAgent`` is registered as a virtual subclass of AutoGen's ``ChatAgent``
(``nbagent.agent`` does it when ``autogen_agentchat.base`` is imported, before or after the agents are
made: ``nbagent._imports.when_imported``), and
its ``on_messages``/``on_messages_stream`` answer in the caller's types: called with AutoGen's
messages (or, with no message, AutoGen's token), they convert the messages in (:func:`chat_in`,
exact: every field and id kept) and every item out (:class:`Outgoing`). The loop, its records and
the agent's trace are nbagent's as for any run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autogen_agentchat import messages as ag
from autogen_agentchat.base import Response as AgResponse
from autogen_agentchat.base import TaskResult as AgTaskResult
from autogen_core import FunctionCall as AgFunctionCall
from autogen_core import Image as AgImage
from autogen_core import models as agm
from autogen_core.memory import MemoryContent as AgMemoryContent

from .. import messages as nb
from .convert import Converter, llm_message_out


def is_autogen_message(value: object) -> bool:
    """Whether ``value`` is one of AutoGen's chat messages."""
    return isinstance(value, ag.BaseChatMessage)


def chat_in(message: ag.BaseChatMessage) -> nb.BaseChatMessage:
    """AutoGen's chat message as nbagent's: a twin type field by field (ids, sources, usage, metadata
    and times kept); another type (``MultiModalMessage``, ``StopMessage``, a custom one) as a
    ``ForeignMessage`` that enters a model context as AutoGen's own ``to_model_message()`` says."""
    return Converter().chat(message)


def chats_in(messages: Sequence[Any]) -> list[Any]:
    """``messages`` with each AutoGen chat message converted (nbagent's and anything else left as is)."""
    return [chat_in(message) if isinstance(message, ag.BaseChatMessage) else message for message in messages]


def _usage(value: nb.RequestUsage | None) -> agm.RequestUsage | None:
    if value is None:
        return None
    return agm.RequestUsage(prompt_tokens=value.prompt_tokens, completion_tokens=value.completion_tokens)


def _call(call: nb.FunctionCall) -> AgFunctionCall:
    return AgFunctionCall(id=call.id, name=call.name, arguments=call.arguments)


def _result(result: nb.FunctionExecutionResult) -> agm.FunctionExecutionResult:
    return agm.FunctionExecutionResult(
        content=result.content, name=result.name, call_id=result.call_id, is_error=result.is_error
    )


def memory_out(item: nb.MemoryContent) -> AgMemoryContent:
    """nbagent's memory content as AutoGen's."""
    content: Any = item.content
    if isinstance(content, nb.Image):
        content = AgImage.from_base64(content.data)
    return AgMemoryContent(content=content, mime_type=str(item.mime_type), metadata=item.metadata)


def _common(item: nb.BaseChatMessage | nb.BaseAgentEvent) -> dict[str, Any]:
    return {
        "id": item.id,
        "source": item.source,
        "models_usage": _usage(item.models_usage),
        "metadata": dict(item.metadata),
        "created_at": item.created_at,
    }


class Outgoing:
    """Converts the items of one nbagent run to AutoGen's, each once (a ``Response``'s inner messages
    are the very objects yielded before it, as in AutoGen's own runs)."""

    def __init__(self) -> None:
        self._done: dict[str, ag.BaseChatMessage | ag.BaseAgentEvent] = {}

    def item(self, item: Any) -> Any:
        """An event, chat message, ``Response`` or ``TaskResult`` as AutoGen's."""
        if isinstance(item, nb.TaskResult):
            return AgTaskResult(
                messages=[self.message(message) for message in item.messages], stop_reason=item.stop_reason
            )
        if isinstance(item, nb.Response):
            return AgResponse(
                chat_message=self.message(item.chat_message),  # type: ignore[arg-type]
                inner_messages=[self.message(inner) for inner in item.inner_messages],
            )
        if isinstance(item, (nb.BaseChatMessage, nb.BaseAgentEvent)):
            return self.message(item)
        return item

    def message(self, item: nb.BaseChatMessage | nb.BaseAgentEvent) -> ag.BaseChatMessage | ag.BaseAgentEvent:
        done = self._done.get(item.id)
        if done is None:
            done = self._done[item.id] = message_out(item)
        return done


def message_out(item: nb.BaseChatMessage | nb.BaseAgentEvent) -> ag.BaseChatMessage | ag.BaseAgentEvent:
    """nbagent's chat message or event as AutoGen's twin (every field and id kept)."""
    common = _common(item)
    if isinstance(item, nb.TextMessage):
        return ag.TextMessage(content=item.content, **common)
    if isinstance(item, nb.StructuredMessage):
        content = item.content
        kind: Any = ag.StructuredMessage[type(content)]  # type: ignore[misc]
        return kind(content=content, format_string=item.format_string, **common)  # type: ignore[no-any-return]
    if isinstance(item, nb.ToolCallSummaryMessage):
        return ag.ToolCallSummaryMessage(
            content=item.content,
            tool_calls=[_call(call) for call in item.tool_calls],
            results=[_result(result) for result in item.results],
            **common,
        )
    if isinstance(item, nb.HandoffMessage):
        return ag.HandoffMessage(
            target=item.target,
            content=item.content,
            context=[llm_message_out(message) for message in item.context],
            **common,
        )
    if isinstance(item, nb.ToolCallRequestEvent):
        return ag.ToolCallRequestEvent(content=[_call(call) for call in item.content], **common)
    if isinstance(item, nb.ToolCallExecutionEvent):
        return ag.ToolCallExecutionEvent(content=[_result(result) for result in item.content], **common)
    if isinstance(item, nb.ThoughtEvent):
        return ag.ThoughtEvent(content=item.content, **common)
    if isinstance(item, nb.MemoryQueryEvent):
        return ag.MemoryQueryEvent(content=[memory_out(entry) for entry in item.content], **common)
    if isinstance(item, nb.ModelClientStreamingChunkEvent):
        return ag.ModelClientStreamingChunkEvent(content=item.content, full_message_id=item.full_message_id, **common)
    raise TypeError(f"{type(item).__name__} has no AutoGen counterpart")
