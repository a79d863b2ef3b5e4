"""Model contexts: the agent's short-term memory, and the view of it the model is sent.

Every context keeps all messages added to it; ``get_messages`` returns the view the model gets:
everything (unbounded), the last N (buffered), what fits a token budget (token-limited), or the first
and last few (head and tail). A view never begins with tool results whose call was cut away, nor
ends its head with calls whose results were cut: the OpenAI API rejects both.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import (
    Awaitable,
    Callable,
    Generator,
    Mapping,
    MutableMapping,
    MutableSequence,
    MutableSet,
    Sequence,
)
from typing import TYPE_CHECKING, Any, Self

from pydantic import BaseModel

from . import _check as check
from .components import Component, ComponentModel, dump_nested, load_nested
from .hooks import Hook
from .messages import (
    TWIN,
    AssistantMessage,
    FunctionCall,
    FunctionExecutionResultMessage,
    Image,
    LLMMessage,
    SystemMessage,
    UserMessage,
    llm_messages_adapter,
)

_LLM_MESSAGES = (SystemMessage, UserMessage, AssistantMessage, FunctionExecutionResultMessage)
_LLM_TYPES = frozenset(_LLM_MESSAGES)
_LLM_EXPECTED = "an LLM message (SystemMessage, UserMessage, AssistantMessage, FunctionExecutionResultMessage)"


def _initial(where: str, initial_messages: object) -> list[LLMMessage]:
    """``initial_messages``: None or a list of LLM messages."""
    if initial_messages is None:
        return []
    expected = "a list of LLM messages (UserMessage...) or None"
    items = check.sequence(where, "initial_messages", initial_messages, expected)
    return [as_llm_message(where, f"initial_messages[{index}]", item) for index, item in enumerate(items)]


def as_llm_message(where: str, param: str, message: object) -> LLMMessage:
    """An LLM message: nbagent's as it is, another library's twin (AutoGen's ``autogen_core.models``)
    converted field by field (:data:`~nbagent.messages.TWIN`); anything else a ``TypeError`` naming ``param``."""
    if isinstance(message, _LLM_MESSAGES):
        return message
    converted = TWIN(message, "LLMMessage")
    if not isinstance(converted, _LLM_MESSAGES):
        check.fail_type(where, param, _LLM_EXPECTED, message)
    return converted


def message_text(message: LLMMessage) -> str:
    """The text of an LLM message as the model would read it (tool calls as JSON)."""
    content = message.content
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for item in content:
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, Image):
            parts.append(f"[image {item.mime_type}]")
        elif isinstance(item, FunctionCall):
            parts.append(item.to_text())
        else:
            parts.append(item.content)
    return "\n".join(parts)


def estimate_tokens(message: LLMMessage) -> int:
    """A model-independent token estimate: four characters a token plus a per-message overhead."""
    text = message_text(message)
    # isinstance, not getattr/hasattr: a missing attribute goes through pydantic's slow __getattr__.
    thought = (message.thought or "") if isinstance(message, AssistantMessage) else ""
    return (len(text) + len(thought) + 3) // 4 + 4


def _drop_orphan_results(messages: list[LLMMessage]) -> list[LLMMessage]:
    """Remove tool results at the start of a view: their call is not in it."""
    start = 0
    while start < len(messages) and isinstance(messages[start], FunctionExecutionResultMessage):
        start += 1
    return messages[start:]


def _drop_unanswered_calls(messages: list[LLMMessage]) -> list[LLMMessage]:
    """Remove tool calls at the end of a head: their results are not in it."""
    end = len(messages)
    while end and isinstance(messages[end - 1], AssistantMessage) and not isinstance(messages[end - 1].content, str):
        end -= 1
    return messages[:end]


MESSAGE_BACK: Hook[[object], Callable[[LLMMessage], Any]] = Hook("message back")
"""For another library's LLM message added to a context: the converter of nbagent's LLM messages to
that library's (registered by :mod:`nbagent.autogen`: AutoGen's agent is given back AutoGen's
messages, which its own model clients check); ``None`` for any other message."""


def _answering_back(
    method: Callable[[Any], Awaitable[list[LLMMessage]]],
) -> Callable[[Any], Awaitable[list[LLMMessage]]]:
    """``get_messages`` of a context class: its view, in another library's types once that library's
    messages were added (:data:`MESSAGE_BACK`); converted once, by the class of the context itself (a
    subclass's ``super().get_messages()`` gets nbagent's messages)."""

    @functools.wraps(method)
    async def get_messages(self: ChatCompletionContext) -> list[LLMMessage]:
        view = await method(self)
        back = self.answers_back
        if back is None or type(self).get_messages is not get_messages:
            return view
        return [back(message) if type(message) in _LLM_TYPES else message for message in view]

    _UNCONVERTED[get_messages] = method
    return get_messages


_UNCONVERTED: dict[Callable[..., Any], Callable[[Any], Awaitable[list[LLMMessage]]]] = {}
"""Each ``get_messages`` :func:`_answering_back` made, to the method it converts the view of."""


class ChatCompletionContext(Component):
    """Holds the messages of a conversation; subclasses decide what the model sees.

    ``_messages`` is only ever appended to; ``clear`` and ``load_state`` replace the list rather than
    change it, so that a trace can keep the lists as the history of the context without copying.

    What went in comes out: once another library's LLM messages are added (AutoGen's agent holding
    nbagent's context), ``get_messages`` gives that library's messages (:attr:`answers_back`) until
    ``clear``; the context holds nbagent's (``messages``, the trace).
    """

    # ``_messages`` is a slot so that ``message_log`` reads it as fast as an attribute (the trace
    # reads it at every move and event); ``__dict__`` leaves subclasses free to add attributes.
    __slots__ = ("_messages", "_parts_read", "__dict__", "__weakref__")
    component_type = "chat_completion_context"

    answers_back: Callable[[LLMMessage], Any] | None = None
    """The converter ``get_messages`` gives its view through (another library's messages were added:
    :data:`MESSAGE_BACK`); ``None``: nbagent's messages."""

    def __init__(self, initial_messages: Sequence[LLMMessage] | None = None) -> None:
        self._messages: list[LLMMessage] = _initial(type(self).__name__, initial_messages)
        # (log, messages of it read, a user message of parts among them): read_parts's memo
        self._parts_read: tuple[list[LLMMessage] | None, int, bool] = (None, 0, False)
        self._initial_messages = list(self._messages)  # what a component config keeps

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("get_messages")
        if own is not None:
            cls.get_messages = _answering_back(own)  # type: ignore[method-assign]

    async def add_message(self, message: LLMMessage) -> None:
        if type(message) not in _LLM_TYPES:  # the loop's own messages pass on a set lookup
            back = MESSAGE_BACK(message)
            message = as_llm_message(f"{type(self).__name__}.add_message", "message", message)
            if back is not None:
                self.answers_back = back
        self._messages.append(message)

    @_answering_back
    async def get_messages(self) -> list[LLMMessage]:
        """The messages the model is sent."""
        return list(self._messages)

    @property
    def messages(self) -> list[LLMMessage]:
        """Every message held, in order (not only the view); a copy."""
        return list(self._messages)

    if TYPE_CHECKING:

        @property
        def message_log(self) -> list[LLMMessage]:
            """The list the messages are held in, not a copy: only ever appended to (``clear`` and
            ``load_state`` replace it), so a reader (the trace) can keep it as the context's history.
            Read it; never change it. (At run time the slot ``_messages`` itself, see below.)"""
            ...

    async def clear(self) -> None:
        self._clear()

    def _clear(self) -> None:
        self._messages = []
        vars(self).pop("answers_back", None)  # the class's None again

    async def save_state(self) -> dict[str, Any]:
        return {"messages": llm_messages_adapter.dump_python(self._messages, mode="json")}

    async def load_state(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict) or not isinstance(state.get("messages"), list):
            raise ValueError("a context state is a dict with a 'messages' list")
        self._messages = llm_messages_adapter.validate_python(state["messages"])

    def fresh(self) -> Self:
        """A new context of this kind and settings as it was made: its initial messages, none added since.

        A copy that shares no container with this one (its mutable sequences, mappings and sets, a
        deque or a defaultdict too, are copies), but the objects it was given are the same (a model
        client, ``count_tokens``, the messages); a subclass that keeps more state than its messages and
        settings overrides :meth:`_start_over`.
        """
        new: Self = copy.copy(self)
        new._start_over()
        return new

    def _start_over(self) -> None:
        """A copy made by :meth:`fresh`: containers of its own (a copy's were its original's), and the
        initial messages only."""
        for name, value in list(vars(self).items()):
            if isinstance(value, (MutableSequence, MutableMapping, MutableSet)):
                setattr(self, name, copy.copy(value))
        self._messages = list(self._initial_messages)
        vars(self).pop("answers_back", None)  # the class's None again: the settings are the original's

    def read_parts(self) -> bool:
        """Whether a user message of parts (texts and images) is among the messages held: the messages
        added since the last call are read, the others were (a new log, after ``clear`` or
        ``load_state``, is read from its start)."""
        log = self._messages
        read = self._parts_read
        if read[0] is log:
            if read[2] or read[1] == len(log):
                return read[2]
            start = read[1]
        else:
            start = 0
        found = False
        for message in log[start:] if start else log:
            # a text first: isinstance() against a pydantic class costs a Python call
            if type(message.content) is not str and isinstance(message, UserMessage):
                found = True
                break
        self._parts_read = (log, len(log), found)
        return found

    def __len__(self) -> int:
        return len(self._messages)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self._messages)} messages)"


# ``message_log``: the slot's own descriptor under a public name (a property would cost a function call).
ChatCompletionContext.message_log = ChatCompletionContext.__dict__["_messages"]  # type: ignore[method-assign]


def own_view(context: ChatCompletionContext) -> Awaitable[list[LLMMessage]]:
    """``context.get_messages()`` in nbagent's types (what nbagent's loop sends its model), also after
    another library's messages were added to it (:attr:`ChatCompletionContext.answers_back`).

    With nbagent's messages alone (the usual case) it is the class's own ``get_messages`` under the
    layer that would convert its view (and change nothing): one coroutine before each model call, not three.
    """
    unconverted = _UNCONVERTED.get(type(context).get_messages)
    if unconverted is not None and context.answers_back is None and "get_messages" not in context.__dict__:
        return unconverted(context)
    return _converted_back(context)


async def _converted_back(context: ChatCompletionContext) -> list[LLMMessage]:
    view = await context.get_messages()
    if context.answers_back is None:
        return view
    where = f"{type(context).__name__}.get_messages()"
    return [m if type(m) in _LLM_TYPES else as_llm_message(where, f"[{i}]", m) for i, m in enumerate(view)]


def holds_parts(context: ChatCompletionContext) -> bool | None:
    """Whether a user message of parts (texts and images) is among the messages ``context`` holds, for
    nbagent's own contexts, whose views hold only messages they hold (and a text note); each message is
    looked at once while the context is only appended to (:meth:`ChatCompletionContext.read_parts`).
    ``None`` for any other context (its view may hold messages it does not)."""
    return context.read_parts() if type(context) in OWN_CONTEXTS else None


class _Done:
    """An awaitable already done: ``await`` of it returns ``None`` at once, with no coroutine made."""

    __slots__ = ()
    if TYPE_CHECKING:

        def __await__(self) -> Generator[None, None, None]: ...

    else:
        __await__ = staticmethod(().__iter__)  # an empty iterator: the await ends at once


_DONE = _Done()


def add_to(context: ChatCompletionContext, message: LLMMessage) -> Awaitable[None]:
    """``context.add_message(message)``, done at once (no coroutine) where it would only append nbagent's
    ``message`` (the context's class and the context itself keep nbagent's own ``add_message``): the loop
    adds two messages a model call."""
    if type(message) in _LLM_TYPES and type(context).add_message is _OWN_ADD and "add_message" not in context.__dict__:
        context.message_log.append(message)
        return _DONE
    return context.add_message(message)


def clear(context: ChatCompletionContext) -> Awaitable[None]:
    """``context.clear()``, done at once (no coroutine) where the context keeps nbagent's own ``clear``."""
    if type(context).clear is _OWN_CLEAR and "clear" not in context.__dict__:
        context._clear()  # noqa: SLF001 (the class's own, in its module)
        return _DONE
    return context.clear()


def plain_view(context: ChatCompletionContext) -> list[LLMMessage] | None:
    """What ``own_view(context)`` gives, read without a coroutine, for an ``UnboundedChatCompletionContext``
    of nbagent's messages whose ``get_messages`` is its class's (the list it holds, not a copy: read it,
    never change it); ``None`` for any other context (await :func:`own_view`)."""
    if (
        type(context) is UnboundedChatCompletionContext
        and context.answers_back is None
        and "get_messages" not in context.__dict__
    ):
        return context.message_log
    return None


CONTEXT_MEMBERS = ("add_message", "get_messages", "clear", "save_state", "load_state")
"""AutoGen's ``ChatCompletionContext`` protocol: what a model context nbagent did not make must have."""

FOREIGN_CONTEXT: Hook[[object, str], ChatCompletionContext] = Hook("model context")
"""Another library's model context as nbagent's (registered by :mod:`nbagent.autogen`: AutoGen's own
contexts become their exact twins); ``None`` for any other object. Its second argument names the
entry point, for its errors."""


FOREIGN_VIEW: Hook[[object], ChatCompletionContext] = Hook("model context view")
"""Another library's model context used in place (not copied) by its protocol, its messages converted
both ways (registered by :mod:`nbagent.autogen` for AutoGen's contexts); ``None`` for any other object."""


def context_view(value: object) -> ChatCompletionContext:
    """A model context to read and add to in place (what another library's agent gives nbagent's
    memory): nbagent's as it is; another library's through :data:`FOREIGN_VIEW`; any other object by
    its protocol (:class:`ProtocolContext`)."""
    if issubclass(type(value), ChatCompletionContext):
        return value  # type: ignore[return-value]
    view = FOREIGN_VIEW(value)  # not `or`: a context with no messages is falsy (its len)
    return ProtocolContext(value) if view is None else view


def as_model_context(where: str, value: object) -> ChatCompletionContext:
    """``model_context``: nbagent's as it is; another library's through :data:`FOREIGN_CONTEXT`; any
    other object with the protocol's members (a ``MagicMock(spec=...)`` included) in a
    :class:`ProtocolContext`; a ``TypeError`` naming the members it lacks otherwise."""
    if issubclass(type(value), ChatCompletionContext):  # not a MagicMock(spec=...): one made by its protocol
        return value  # type: ignore[return-value]
    foreign = FOREIGN_CONTEXT(value, where)
    if foreign is not None:
        return foreign
    missing = [name for name in CONTEXT_MEMBERS if not callable(getattr(value, name, None))]
    if missing:
        expected = "a ChatCompletionContext (UnboundedChatCompletionContext(), BufferedChatCompletionContext(10)...)"
        hint = ""
        if len(missing) < len(CONTEXT_MEMBERS):
            hint = f"It lacks {', '.join(missing)} of the model context protocol ({', '.join(CONTEXT_MEMBERS)})"
        raise check.wrong_type(where, "model_context", expected, value, hint)
    return ProtocolContext(value)


class ProtocolContext(ChatCompletionContext):
    """A model context nbagent did not make, used by its protocol (AutoGen's ``ChatCompletionContext``):
    ``inner`` keeps the messages and says what the model sees (its ``get_messages``); nbagent keeps a
    log of what it added, which the trace reads (``message_log``). ``message_in`` converts what
    ``inner`` returns, ``message_out`` what it is given (an adapter's conversions; none: nbagent's
    messages as they are)."""

    component_type = "chat_completion_context"

    def __init__(
        self,
        inner: object,
        *,
        message_out: Callable[[LLMMessage], Any] | None = None,
        message_in: Callable[[Any], LLMMessage] | None = None,
    ) -> None:
        super().__init__()
        self.inner: Any = inner
        self._message_out = message_out
        self._message_in = message_in

    async def add_message(self, message: LLMMessage) -> None:
        await super().add_message(message)
        await self.inner.add_message(message if self._message_out is None else self._message_out(message))

    async def get_messages(self) -> list[LLMMessage]:
        got = await self.inner.get_messages()
        where = f"{type(self.inner).__name__}.get_messages()"
        if not isinstance(got, Sequence) or isinstance(got, str):
            raise TypeError(f"{where} returned {type(got).__name__}, not a list of LLM messages")
        convert = self._message_in
        return [
            as_llm_message(
                where, f"[{index}]", item if convert is None or isinstance(item, _LLM_MESSAGES) else convert(item)
            )
            for index, item in enumerate(got)
        ]

    async def clear(self) -> None:
        await super().clear()
        await self.inner.clear()

    async def save_state(self) -> Any:
        return await self.inner.save_state()

    async def load_state(self, state: Any) -> None:
        await self.inner.load_state(state)
        self._messages = []

    def fresh(self) -> Self:
        """Refused: nbagent cannot make a context it did not make again (give the copy its own)."""
        raise TypeError(
            f"nbagent cannot make a fresh {type(self.inner).__name__} (a model context it did not make) for a "
            "copy of the agent, a fork or a batch: give the agent one of nbagent's model contexts"
        )

    def dump_component(self, *, include_secrets: bool | None = None) -> ComponentModel:
        """The context's own component config."""
        return dump_nested(self.inner)

    def __repr__(self) -> str:
        return f"ProtocolContext({self.inner!r})"


class UnboundedChatCompletionContextConfig(BaseModel):
    initial_messages: list[LLMMessage] | None = None


class UnboundedChatCompletionContext(ChatCompletionContext):
    """The model sees every message."""

    component_config_schema = UnboundedChatCompletionContextConfig
    component_provider_override = "nbagent.UnboundedChatCompletionContext"
    component_aliases = ("autogen_core.model_context.UnboundedChatCompletionContext",)

    def _to_config(self) -> UnboundedChatCompletionContextConfig:
        return UnboundedChatCompletionContextConfig(initial_messages=self._initial_messages or None)

    @classmethod
    def _from_config(cls, config: UnboundedChatCompletionContextConfig) -> Self:
        return cls(initial_messages=config.initial_messages)


class BufferedChatCompletionContextConfig(BaseModel):
    buffer_size: int
    initial_messages: list[LLMMessage] | None = None


class BufferedChatCompletionContext(ChatCompletionContext):
    """The model sees the last ``buffer_size`` messages."""

    component_config_schema = BufferedChatCompletionContextConfig
    component_provider_override = "nbagent.BufferedChatCompletionContext"
    component_aliases = ("autogen_core.model_context.BufferedChatCompletionContext",)

    def __init__(self, buffer_size: int, initial_messages: Sequence[LLMMessage] | None = None) -> None:
        check.integer(type(self).__name__, "buffer_size", buffer_size, minimum=1)
        super().__init__(initial_messages)
        self.buffer_size = buffer_size

    async def get_messages(self) -> list[LLMMessage]:
        return _drop_orphan_results(self._messages[-self.buffer_size :])

    def _to_config(self) -> BufferedChatCompletionContextConfig:
        return BufferedChatCompletionContextConfig(
            buffer_size=self.buffer_size, initial_messages=self._initial_messages or None
        )

    @classmethod
    def _from_config(cls, config: BufferedChatCompletionContextConfig) -> Self:
        return cls(config.buffer_size, initial_messages=config.initial_messages)


def _knows_its_window(model_client: object) -> bool:
    """Whether ``model_client`` tells the tokens left (``remaining_tokens``): AutoGen's clients, the replay
    client, nbagent's OpenAI clients for a model whose window is known (``context_window`` not ``None``)."""
    if not callable(getattr(model_client, "remaining_tokens", None)):
        return False
    return getattr(model_client, "context_window", 0) is not None


class TokenLimitedChatCompletionContextConfig(BaseModel):
    model_client: ComponentModel | None = None
    token_limit: int | None = None
    tool_schema: list[dict[str, Any]] | None = None
    initial_messages: list[LLMMessage] | None = None


class TokenLimitedChatCompletionContext(ChatCompletionContext):
    """The model sees the newest messages that fit in ``token_limit`` tokens.

    AutoGen's signature: ``TokenLimitedChatCompletionContext(model_client, token_limit=...,
    tool_schema=..., initial_messages=...)``. Messages are counted one by one, newest first:
    by ``count_tokens`` (a function of one message) if given, else by the model client's
    ``count_tokens``, else by :func:`estimate_tokens`; the tools in ``tool_schema`` are counted
    against the limit too. Without ``token_limit`` the budget is what the model client's
    ``remaining_tokens`` says is left (AutoGen's clients and nbagent's OpenAI clients know it for the
    models whose context window is known; for another model ``token_limit`` is needed).
    The view keeps the newest messages whole (AutoGen drops messages from the middle, which can
    part a tool call from its result).
    """

    component_config_schema = TokenLimitedChatCompletionContextConfig
    component_provider_override = "nbagent.TokenLimitedChatCompletionContext"
    component_aliases = ("autogen_core.model_context.TokenLimitedChatCompletionContext",)

    def __init__(
        self,
        model_client: Any = None,
        *,
        token_limit: int | None = None,
        tool_schema: Sequence[Mapping[str, Any]] | None = None,
        initial_messages: Sequence[LLMMessage] | None = None,
        count_tokens: Callable[[LLMMessage], int] | None = None,
    ) -> None:
        where = type(self).__name__
        if model_client is not None and not callable(getattr(model_client, "count_tokens", None)):
            check.fail_type(where, "model_client", "a model client (with count_tokens) or None", model_client)
        check.integer(where, "token_limit", token_limit, minimum=1, none=True)
        check.function(where, "count_tokens", count_tokens, "a function (message) -> int", none=True)
        tools = [] if tool_schema is None else check.sequence(where, "tool_schema", tool_schema, "a list of schemas")
        for index, tool in enumerate(tools):
            check.mapping(where, f"tool_schema[{index}]", tool, "a tool schema (a dict)")
        if token_limit is None and not _knows_its_window(model_client):
            raise check.wrong_value(
                where,
                "token_limit",
                "a number of tokens",
                token_limit,
                "Without it the model client must tell how many tokens are left (remaining_tokens), "
                f"which {type(model_client).__name__} cannot for its model (its context window is not "
                "known): pass token_limit=...",
            )
        super().__init__(initial_messages)
        self.model_client = model_client
        self.token_limit = token_limit
        self.tool_schema = [dict(tool) for tool in tools]
        self._count_tokens = count_tokens

    def _start_over(self) -> None:
        super()._start_over()
        self.tool_schema = [dict(tool) for tool in self.tool_schema]  # each schema its own, as __init__ makes them

    def count_tokens(self, message: LLMMessage) -> int:
        """The tokens one message costs."""
        if self._count_tokens is not None:
            return self._count_tokens(message)
        if self.model_client is not None:
            return int(self.model_client.count_tokens([message]))
        return estimate_tokens(message)

    def _budget(self) -> int:
        if self.token_limit is None:  # checked in __init__: the client knows what is left
            return int(self.model_client.remaining_tokens([], tools=self.tool_schema))
        if not self.tool_schema:
            return self.token_limit
        if self.model_client is not None:
            return self.token_limit - int(self.model_client.count_tokens([], tools=self.tool_schema))
        return self.token_limit - (len(json.dumps(self.tool_schema)) + 3) // 4

    async def get_messages(self) -> list[LLMMessage]:
        budget = self._budget()
        total = 0
        start = len(self._messages)
        while start > 0:
            cost = self.count_tokens(self._messages[start - 1])
            if total + cost > budget:
                break
            total += cost
            start -= 1
        return _drop_orphan_results(self._messages[start:])

    def _to_config(self) -> TokenLimitedChatCompletionContextConfig:
        if self._count_tokens is not None:
            raise TypeError(
                "TokenLimitedChatCompletionContext: a count_tokens function cannot be written to a config; "
                "count with the model client (model_client=...) to dump this context"
            )
        return TokenLimitedChatCompletionContextConfig(
            model_client=None if self.model_client is None else dump_nested(self.model_client),
            token_limit=self.token_limit,
            tool_schema=self.tool_schema,
            initial_messages=self._initial_messages or None,
        )

    @classmethod
    def _from_config(cls, config: TokenLimitedChatCompletionContextConfig) -> Self:
        client = None if config.model_client is None else load_nested(config.model_client, object)
        return cls(
            client,
            token_limit=config.token_limit,
            tool_schema=config.tool_schema,
            initial_messages=config.initial_messages,
        )


class HeadAndTailChatCompletionContextConfig(BaseModel):
    head_size: int
    tail_size: int
    initial_messages: list[LLMMessage] | None = None


class HeadAndTailChatCompletionContext(ChatCompletionContext):
    """The model sees the first ``head_size`` and last ``tail_size`` messages, with a note between."""

    component_config_schema = HeadAndTailChatCompletionContextConfig
    component_provider_override = "nbagent.HeadAndTailChatCompletionContext"
    component_aliases = ("autogen_core.model_context.HeadAndTailChatCompletionContext",)

    def __init__(self, head_size: int, tail_size: int, initial_messages: Sequence[LLMMessage] | None = None) -> None:
        check.integer(type(self).__name__, "head_size", head_size, minimum=1)
        check.integer(type(self).__name__, "tail_size", tail_size, minimum=1)
        super().__init__(initial_messages)
        self.head_size = head_size
        self.tail_size = tail_size

    async def get_messages(self) -> list[LLMMessage]:
        messages = self._messages
        if len(messages) <= self.head_size + self.tail_size:
            return list(messages)
        head = _drop_unanswered_calls(messages[: self.head_size])
        tail = _drop_orphan_results(messages[-self.tail_size :])
        skipped = len(messages) - len(head) - len(tail)
        note = UserMessage(content=f"Skipped {skipped} messages.", source="System")
        return [*head, note, *tail]

    def _to_config(self) -> HeadAndTailChatCompletionContextConfig:
        return HeadAndTailChatCompletionContextConfig(
            head_size=self.head_size, tail_size=self.tail_size, initial_messages=self._initial_messages or None
        )

    @classmethod
    def _from_config(cls, config: HeadAndTailChatCompletionContextConfig) -> Self:
        return cls(config.head_size, config.tail_size, initial_messages=config.initial_messages)


OWN_CONTEXTS = frozenset(
    {
        ChatCompletionContext,
        UnboundedChatCompletionContext,
        BufferedChatCompletionContext,
        TokenLimitedChatCompletionContext,
        HeadAndTailChatCompletionContext,
    }
)
"""nbagent's own context classes (not subclasses): their ``message_log`` is only appended to, and replaced by
``clear`` and ``load_state``; their views hold its messages (and a text note)."""
_OWN_ADD = ChatCompletionContext.add_message
_OWN_CLEAR = ChatCompletionContext.clear
