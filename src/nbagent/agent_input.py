"""What an agent is given, checked and converted: the constructor's arguments, tasks, chat messages,
cancellation tokens, and AutoGen's objects (messages, tools, contexts) in their nbagent twins' places.

A wrong argument raises before anything runs, naming the entry point and the parameter.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any, Protocol

from pydantic import BaseModel

from . import _check as check
from .cancellation import CancellationToken
from .context import ChatCompletionContext
from .hooks import HINT, Hook
from .messages import (
    AssistantMessage,
    BaseChatMessage,
    FunctionExecutionResultMessage,
    SystemMessage,
    TextMessage,
    UserMessage,
    agent_message,
)
from .models.base import ChatCompletionClient
from .models.bridge import BridgedClient, as_model_client
from .tools import FOREIGN_TOOL, BaseTool, Handoff, as_tool

Task = str | BaseChatMessage | Sequence[BaseChatMessage] | None

_AGENT = "AssistantAgent"
SUMMARY_PLACEHOLDERS = ("tool_name", "arguments", "result", "is_error")
TASK_EXPECTED = "a str, a chat message (TextMessage...) or a list of chat messages"
MESSAGES_EXPECTED = "a list of chat messages (TextMessage, HandoffMessage...)"


class ItemsOut(Protocol):
    """Converts the items of one run to a caller's types (:data:`CALLER`)."""

    def item(self, item: Any) -> Any:
        """An event, chat message or ``Response`` of the run in the caller's types."""
        ...


CHAT_IN: Hook[[object], BaseChatMessage] = Hook("chat message")
"""Another library's chat message as nbagent's (AutoGen's ``TextMessage``... field by field, ids kept);
``None`` for any other object (registered by :mod:`nbagent.autogen`)."""

CALLER: Hook[[Sequence[Any], object], ItemsOut] = Hook("caller")
"""For ``on_messages``/``on_messages_stream`` called with ``(messages, cancellation_token)``: when the
caller is another library's (its chat messages; none and its token: AutoGen's team containers), the
converter of the run's items to its types; ``None`` for nbagent's callers."""


def client_hint(value: object) -> str:
    if isinstance(value, str):
        return f"To use the model {value!r}, pass OpenAIChatCompletionClient(model={value!r})"
    if value is None:
        return "nbagent.default_model() gives the model the environment names (offline: a replay model)"
    return "A model client is an OpenAIChatCompletionClient, a ReplayChatCompletionClient, a cassette client..."


def check_arguments(
    name: object,
    model_client: object,
    tools: object,
    model_context: object,
    description: object,
    system_message: object,
    model_client_stream: object,
    reflect_on_tool_use: object,
    max_tool_iterations: object,
    tool_call_summary_format: object,
    tool_call_summary_formatter: object,
    output_content_type: object,
    output_content_type_format: object,
    metadata: object,
) -> ChatCompletionClient:
    """The constructor's arguments, each of the type (and in the range) it takes; memory, workbench
    and handoffs are checked where they are read. Returns the model client as nbagent's (AutoGen's
    and duck-typed clients bridged: :func:`~nbagent.models.bridge.as_model_client`)."""
    check.string(_AGENT, "name", name)
    assert isinstance(name, str)
    if not name.isidentifier():
        raise check.wrong_value(_AGENT, "name", "a valid Python identifier (letters, digits and _)", name)
    client = as_model_client(model_client, _AGENT, hint=client_hint(model_client))
    if model_client_stream is True and isinstance(client, BridgedClient) and not client.streams:
        raise check.wrong_value(
            _AGENT,
            "model_client_stream",
            "False for a model client without create_stream()",
            model_client_stream,
            f"{type(client.inner).__name__} has no create_stream(): it cannot stream",
        )
    if tools is not None:
        items = check.sequence(
            _AGENT,
            "tools",
            tools,
            "a list of tools (functions or BaseTool objects) or None",
            hint=f"Pass tools=[{getattr(tools, '__name__', '...')}]" if callable(tools) else "",
        )
        check.each(_AGENT, "tools", items, _check_tool)
    check.optional(
        _AGENT,
        "model_context",
        model_context,
        ChatCompletionContext,
        "a ChatCompletionContext (UnboundedChatCompletionContext(), BufferedChatCompletionContext(10)...)",
    )
    check.string(_AGENT, "description", description)
    check.string(_AGENT, "system_message", system_message, none=True)
    check.boolean(_AGENT, "model_client_stream", model_client_stream)
    check.boolean(_AGENT, "reflect_on_tool_use", reflect_on_tool_use, none=True)
    try:
        check.integer(_AGENT, "max_tool_iterations", max_tool_iterations, minimum=1)
    except ValueError as error:  # AutoGen's words too, for code that matches them
        autogen = f"Maximum number of tool iterations must be greater than or equal to 1, got {max_tool_iterations}"
        raise ValueError(f"{error}. {autogen}") from None
    _check_summary_format(tool_call_summary_format)
    check.function(
        _AGENT,
        "tool_call_summary_formatter",
        tool_call_summary_formatter,
        "a function (call, result) -> str",
        none=True,
    )
    if output_content_type is not None and not (
        isinstance(output_content_type, type) and issubclass(output_content_type, BaseModel)
    ):
        check.fail_type(_AGENT, "output_content_type", "a pydantic model class or None", output_content_type)
    check.string(_AGENT, "output_content_type_format", output_content_type_format, none=True)
    check.mapping(_AGENT, "metadata", metadata, "a dict of str to str", none=True)
    return client


def _check_tool(param: str, tool: object) -> object:
    if isinstance(tool, BaseTool) or callable(tool):  # a callable becomes a FunctionTool, as in AutoGen
        return tool
    if FOREIGN_TOOL(tool) is not None:  # AutoGen's FunctionTool...: run by itself
        return tool
    # AutoGen raises ValueError here ("Unsupported tool type"): the error is a ValueError too, and says it.
    raise check.ItemTypeError(
        check.message(_AGENT, param, "a function or a BaseTool", check.given(tool), "Unsupported tool type")
    )


def as_tools(tools: Sequence[Any] | None) -> list[BaseTool]:
    """The ``tools`` argument (checked) as tools: a callable becomes a FunctionTool, or the error names it."""
    found: list[BaseTool] = []
    for index, tool in enumerate(tools or ()):
        try:
            found.append(as_tool(tool))
        except (TypeError, ValueError) as error:  # no signature Python can read, a parameter with no JSON schema...
            expected = "a function whose parameters make a JSON schema"
            hint = f"{type(error).__name__}: {error}"
            raise check.wrong_value(_AGENT, f"tools[{index}]", expected, tool, hint) from None
    return found


def _check_summary_format(value: object) -> None:
    check.string(_AGENT, "tool_call_summary_format", value)
    assert isinstance(value, str)
    try:  # the values a summary line is made of (their types, as the summary passes them)
        value.format(tool_name="add", arguments="{}", result="3", is_error=False)
    except (KeyError, IndexError, AttributeError, ValueError, TypeError) as error:
        listed = ", ".join("{" + name + "}" for name in SUMMARY_PLACEHOLDERS)
        raise check.wrong_value(
            _AGENT,
            "tool_call_summary_format",
            f"a format string with the placeholders {listed}",
            value,
            f"{type(error).__name__}: {error}",
        ) from None


def as_handoffs(handoffs: object) -> list[Handoff]:
    """The ``handoffs`` argument as Handoff objects: a target name becomes one, as does AutoGen's Handoff."""
    if handoffs is None:
        return []
    items = check.sequence(
        _AGENT,
        "handoffs",
        handoffs,
        "a list of Handoff objects or target names (str) or None",
        hint=f"Pass handoffs=[{handoffs!r}]" if isinstance(handoffs, str) else "",
    )
    return check.each(_AGENT, "handoffs", items, _as_handoff)


def _as_handoff(param: str, handoff: object) -> Handoff:
    if isinstance(handoff, Handoff):
        return handoff
    if isinstance(handoff, str):
        return Handoff(target=handoff)
    fields: dict[str, Any] = {key: getattr(handoff, key, None) for key in ("target", "description", "name", "message")}
    if all(isinstance(v, str) for v in fields.values()):
        return Handoff(**fields)  # AutoGen's Handoff (HandoffBase), any object with its four fields
    expected = "a Handoff or a target name (str)"  # AutoGen's ValueError: "Unsupported handoff type"
    raise check.ItemTypeError(check.message(_AGENT, param, expected, check.given(handoff), "Unsupported handoff type"))


def task_messages(task: Task, where: str = "AssistantAgent.run") -> list[BaseChatMessage]:
    """A task as the list of chat messages it stands for (a string is a user's TextMessage).

    A wrong task raises a ``TypeError`` naming ``where`` (the entry point) before anything runs.
    """
    if task is None:
        return []
    if type(task) is str:
        return [agent_message(TextMessage, task, "user")]
    if isinstance(task, str):
        return [TextMessage(content=task, source="user")]
    if isinstance(task, BaseChatMessage):
        return [task]
    foreign = CHAT_IN(task)  # AutoGen's TextMessage...: converted field by field
    if foreign is not None:
        return [foreign]
    items = check.sequence(where, "task", task, TASK_EXPECTED, hint=_llm_message_hint(task))
    return check.each(where, "task", items, partial(_chat_message, where))


def check_messages(where: str, messages: object) -> list[BaseChatMessage]:
    """``messages`` of ``on_messages``/``on_messages_stream``/``iter``: a list of chat messages (a copy)."""
    if type(messages) is list:  # the common case, on every run: no more than the copy iter() always made
        for message in messages:
            if not isinstance(message, BaseChatMessage):
                break
        else:
            return list(messages)
    hint = ""
    if isinstance(messages, str):
        text = check.short_repr(messages)
        hint = f"To send a text, pass [TextMessage(content={text}, source='user')] or use run(task=...)"
    elif isinstance(messages, BaseChatMessage):
        hint = "Pass a list: [message]"
    items = check.sequence(where, "messages", messages, MESSAGES_EXPECTED, hint=hint)
    return check.each(where, "messages", items, partial(_chat_message, where))


def _chat_message(where: str, param: str, message: object) -> BaseChatMessage:
    if isinstance(message, BaseChatMessage):
        return message
    foreign = CHAT_IN(message)  # AutoGen's chat message: converted field by field (ids kept)
    if foreign is not None:
        return foreign
    # AutoGen raises ValueError for a wrong item of a task list: the error is a ValueError too.
    raise check.ItemTypeError(
        check.message(where, param, "a chat message (TextMessage...)", check.given(message), _llm_message_hint(message))
    )


MESSAGE_TYPE_IN: Hook[[type], type[BaseChatMessage]] = Hook("message type")
"""nbagent's chat message class that another library's class stands for (AutoGen's ``HandoffMessage``
for nbagent's); ``None`` for any other class (registered by :mod:`nbagent.autogen`)."""


class ProducedTypes(tuple[type[BaseChatMessage], ...]):
    """nbagent's message types; ``in`` also finds another library's class that stands for one of them
    (:data:`MESSAGE_TYPE_IN`: AutoGen's ``Swarm`` asks ``HandoffMessage in agent.produced_message_types``
    with AutoGen's class)."""

    __slots__ = ()

    def __contains__(self, value: object) -> bool:
        if tuple.__contains__(self, value):
            return True
        if not isinstance(value, type):
            return False
        twin = MESSAGE_TYPE_IN(value)
        return twin is not None and tuple.__contains__(self, twin)


def caller_out(messages: object, token: object) -> ItemsOut | None:
    """For ``on_messages``/``on_messages_stream``: the converter of the run's items to the caller's
    types when another library calls (:data:`CALLER`), else ``None``."""
    if not CALLER or (type(messages) is list and messages and all(isinstance(m, BaseChatMessage) for m in messages)):
        return None
    return CALLER(messages if isinstance(messages, Sequence) else (), token)


_LLM_KINDS = (SystemMessage, UserMessage, AssistantMessage, FunctionExecutionResultMessage)


def _llm_message_hint(value: object) -> str:
    if isinstance(value, _LLM_KINDS):
        return (
            f"{type(value).__name__} is a message for the model: an agent is sent chat messages, "
            "TextMessage(content=..., source='user')"
        )
    return HINT(value, "chat message") or ""


def check_token(where: str, token: object) -> CancellationToken | None:
    """``cancellation_token``: None, a CancellationToken, or any object with AutoGen's token methods."""
    if token is None or type(token) is CancellationToken or isinstance(token, CancellationToken):
        return token
    if callable(getattr(token, "is_cancelled", None)) and callable(getattr(token, "add_callback", None)):
        return token  # type: ignore[return-value]  # AutoGen's CancellationToken, duck-typed
    raise check.wrong_type(where, "cancellation_token", "a CancellationToken or None", token)
