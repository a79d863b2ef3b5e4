"""The protocol every model client follows, its capabilities, and its errors."""

from __future__ import annotations

from abc import ABC
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, Self

from pydantic import BaseModel

from ..cancellation import CancellationToken
from ..components import Component
from ..context import estimate_tokens
from ..hooks import Hook
from ..messages import (
    TWIN,
    AssistantMessage,
    CreateResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from ..printable import printable
from ..tools import Tool, ToolSchema, request_tools
from .info import ModelInfo as ModelInfo  # re-exported: imported from here before models/info.py

ToolChoice = Literal["auto", "required", "none"] | str
_NO_ARGS: Mapping[str, Any] = MappingProxyType({})
_NEW_DICT: Any = MappingProxyType({})  # ModelRequest's extra_create_args not given: each request its own dict


@dataclass(frozen=True, slots=True, init=False)
class ModelRequest:
    """What one call sent to the model: the messages, tools, tool_choice, output format and extra arguments.

    :meth:`ChatCompletionClient.create` and ``create_stream`` build one from their keywords; a
    client's :meth:`~ChatCompletionClient.complete` receives it.

    ``messages`` is a list, or in a trace's records a ``recording.SentMessages`` that reads like one
    (a view of the context's log: what nbagent's own clients' ``complete`` get from the loop too, so
    that the requests the replay model keeps hold no copy of a long context each).
    """

    messages: Sequence[LLMMessage]
    tools: list[ToolSchema]
    tool_choice: ToolChoice
    json_output: bool | type[BaseModel] | None
    extra_create_args: Mapping[str, Any] = field(default_factory=dict)
    """Keyword arguments for this call only, passed to the server as they are (``temperature``...)."""

    def __init__(
        self,
        messages: Sequence[LLMMessage],
        tools: list[ToolSchema],
        tool_choice: ToolChoice,
        json_output: bool | type[BaseModel] | None,
        extra_create_args: Mapping[str, Any] = _NEW_DICT,
    ) -> None:
        # Each field set through its slot: a frozen dataclass's own __init__ calls object.__setattr__
        # for each (about 0.3 us a request, made before every model call). Not given: a new empty dict.
        _SET_MESSAGES(self, messages)
        _SET_TOOLS(self, tools)
        _SET_TOOL_CHOICE(self, tool_choice)
        _SET_JSON_OUTPUT(self, json_output)
        _SET_EXTRA(self, {} if extra_create_args is _NEW_DICT else extra_create_args)


_SET_MESSAGES, _SET_TOOLS, _SET_TOOL_CHOICE, _SET_JSON_OUTPUT, _SET_EXTRA = (
    ModelRequest.__dict__[name].__set__
    for name in ("messages", "tools", "tool_choice", "json_output", "extra_create_args")
)


class UnreportedUsage(RequestUsage):
    """The usage of a call whose server reported none (a stream without a usage chunk, as
    llama-cpp-python, fakellm and mock servers send): it counts as 0 tokens in sums, but it is not a
    measured 0. ``isinstance(result.usage, UnreportedUsage)`` tells the two apart; the trace shows
    such a call's tokens as missing."""


class ModelError(RuntimeError):
    """A model call failed; ``status`` is the HTTP status when there was one, ``retry_after`` the
    seconds the server asked to wait before trying again (its ``Retry-After`` header), if it did.

    Its message carries a server's words: their terminal controls, bidi and zero-width marks are
    shown, never obeyed (:func:`~nbagent.printable.printable`), wherever it is printed."""

    def __init__(
        self, message: str, *, status: int | None = None, model: str | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(printable(message))
        self.status = status
        self.model = model
        self.retry_after = retry_after


class ModelAuthenticationError(ModelError):
    """The server refused the credentials (HTTP 401 or 403)."""


class ModelNotFoundError(ModelError):
    """The model (or the endpoint) does not exist on that server (HTTP 404)."""


class ModelBadRequestError(ModelError):
    """The server rejected the request itself (HTTP 400, 422...)."""


class ModelRateLimitError(ModelError):
    """HTTP 429, still after the client's retries."""


class ModelServerError(ModelError):
    """The server failed (HTTP 5xx), still after the client's retries."""


class ModelTimeoutError(ModelError):
    """No answer (or no next chunk) within the client's timeout."""


class ModelConnectionError(ModelError):
    """The connection failed or broke, e.g. a stream cut mid-way."""


class ModelResponseError(ModelError):
    """The server answered something unusable: malformed JSON, no choices, a stream without an end."""


class ModelStream(AsyncIterator["str | CreateResult"]):
    """What :meth:`ChatCompletionClient.create_stream` returns: text pieces, then the ``CreateResult``.

    An async iterator like any other (``async for``, ``aclose()``); ``async for`` runs the client's
    own generator directly. ``first_chunk_perf`` is the ``time.perf_counter()`` at which the first
    delta of any kind arrived (text, reasoning or a tool call), when the client measures it (the
    OpenAI client does): a stream that carries only tool calls yields no text, yet has a first chunk.
    """

    __slots__ = ("_items", "first_chunk_perf")

    def __init__(
        self, client: ChatCompletionClient, request: ModelRequest, cancellation_token: CancellationToken | None
    ) -> None:
        self.first_chunk_perf: float | None = None
        self._items = client.complete_stream(request, cancellation_token, self)

    def __aiter__(self) -> AsyncIterator[str | CreateResult]:
        return self._items

    async def __anext__(self) -> str | CreateResult:
        return await self._items.__anext__()

    async def aclose(self) -> None:
        """Stop the stream early: the client closes its connection."""
        await self._items.aclose()


class Quirk(NamedTuple):
    """Something odd in an answer that the client read anyway: ``kind`` is ``"finish_reason"`` (tool calls
    with another finish reason: ``detail`` is that reason), ``"arguments"`` (a tool call's arguments given
    as a JSON object, not its text: ``detail`` is their ``str``) or ``"no_think"`` (a model of the R1 family
    answered text without a ``<think>`` block or a reasoning field)."""

    kind: Literal["finish_reason", "arguments", "no_think"]
    detail: str = ""


@dataclass(frozen=True)
class CallEvent:
    """One step of a model call, as a client tells :data:`CALL_EVENT`'s listeners.

    ``kind`` is ``"call"`` (a call answered at once: ``messages`` and ``tools`` as sent, ``response``
    the server's answer as JSON data), ``"stream_start"`` (the first chunk of a stream arrived:
    ``messages``) or ``"stream_end"`` (a stream finished: ``response`` its :class:`CreateResult`).
    ``usage`` is the call's (``"call"``, ``"stream_end"``); ``quirks`` what was odd in the answer.
    """

    kind: Literal["call", "stream_start", "stream_end"]
    messages: Sequence[Mapping[str, Any]] = ()
    response: Mapping[str, Any] | CreateResult | None = None
    usage: RequestUsage | None = None
    tools: Sequence[Mapping[str, Any]] = ()
    quirks: tuple[Quirk, ...] = ()


CALL_EVENT: Hook[[CallEvent], None] = Hook("call event")
"""Listeners of the model calls of nbagent's OpenAI clients: each registered listener is called with
every :class:`CallEvent` (they answer ``None``). :mod:`nbagent.autogen` logs them as AutoGen's client
does, once AutoGen is imported (its ``LLMCallEvent``... on its event logger)."""


def tell(event: Callable[[], CallEvent]) -> None:
    """Give :data:`CALL_EVENT`'s listeners the event ``event`` makes (made only when one listens)."""
    if CALL_EVENT:
        CALL_EVENT(event())


RESULT_OUT: Hook[[Sequence[object]], Callable[[CreateResult], Any]] = Hook("result out")
"""For ``create``/``create_stream`` called with another library's LLM messages (AutoGen's agent calling
nbagent's client): the converter of the answer to that library's ``CreateResult``; ``None`` for
nbagent's callers (registered by :mod:`nbagent.autogen`)."""

_LLM_TYPES = frozenset({SystemMessage, UserMessage, AssistantMessage, FunctionExecutionResultMessage})


def _messages_in(messages: Sequence[Any]) -> tuple[list[LLMMessage], Callable[[CreateResult], Any] | None]:
    """``messages`` as nbagent's, and the converter of the answer when a caller of another library's
    types sent them (:data:`RESULT_OUT`), else ``None``."""
    if all(type(message) in _LLM_TYPES for message in messages):
        return list(messages), None
    converted = [message if type(message) in _LLM_TYPES else TWIN(message, "LLMMessage") for message in messages]
    return [m if m is not None else original for m, original in zip(converted, messages, strict=True)], RESULT_OUT(
        messages
    )


async def _answers_out(
    stream: ModelStream, out: Callable[[CreateResult], Any]
) -> AsyncGenerator[str | CreateResult, None]:
    """The items of ``stream``, its ``CreateResult`` converted by ``out`` (the caller's type)."""
    try:
        async for item in stream:
            yield out(item) if isinstance(item, CreateResult) else item
    finally:
        await stream.aclose()


class ChatCompletionClient(Component, ABC):
    """Turns LLM messages (and tool schemas) into a :class:`CreateResult`, at once or streamed.

    Callers use AutoGen's signatures, :meth:`create` and :meth:`create_stream`. They are written
    here once: each builds one :class:`ModelRequest` and hands it to what a client implements,
    :meth:`complete` and :meth:`complete_stream` (optional: by default the answer of
    :meth:`complete` as one piece). A client whose calls change its state (a script's position)
    implements :meth:`checkpoint` and :meth:`restore`; one that holds credentials sets ``_secrets``.

    A class written for AutoGen's interface subclasses this one as it subclassed AutoGen's: it
    implements ``create`` (and ``create_stream`` if it streams) and ``model_info`` instead of
    :meth:`complete`; the other members AutoGen's interface asks for have defaults here. A class
    that implements neither ``complete`` nor ``create`` cannot be instantiated.
    """

    component_type = "model"
    model_info: ModelInfo
    provider: str = "unknown"
    """Who serves the model as this client knows it, OpenTelemetry's ``gen_ai.provider.name``: the
    trace records it with every LLM call."""
    _secrets: Sequence[str] = ()
    """Backing store of :attr:`secrets`; a client that holds credentials sets it in ``__init__``."""
    # Class-level starting counts: a subclass written for AutoGen's interface may not call __init__.
    _total_usage: RequestUsage = RequestUsage()
    _actual_usage: RequestUsage = RequestUsage()

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        base = ChatCompletionClient
        if cls.complete is base.complete and cls.create is base.create and cls.create_stream is base.create_stream:
            raise TypeError(
                f"Can't instantiate {cls.__name__}: a model client implements complete(request, "
                "cancellation_token) (nbagent's) or create(messages, ...) and/or create_stream(messages, ...) "
                "(AutoGen's interface)"
            )
        return super().__new__(cls)

    def __init__(self) -> None:
        self._total_usage = RequestUsage()
        self._actual_usage = RequestUsage()

    # ------------------------------------------------------------------ AutoGen's signatures

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[ToolSchema | Tool] = (),
        tool_choice: ToolChoice | Tool = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        """One answer for ``messages``: :meth:`complete` on the request they make (a snapshot: the
        lists are copied, so a client may keep it). Given AutoGen's messages (AutoGen's agent calling),
        it answers AutoGen's ``CreateResult`` (:data:`RESULT_OUT`)."""
        schemas, choice = request_tools(tools, tool_choice)  # AutoGen's: Tool objects or schemas
        sent, out = _messages_in(messages)
        request = ModelRequest(sent, schemas, choice, json_output, extra_create_args or _NO_ARGS)
        result = await self.complete(request, cancellation_token)
        return result if out is None else out(result)

    def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[ToolSchema | Tool] = (),
        tool_choice: ToolChoice | Tool = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> AsyncIterator[str | CreateResult]:
        """Text pieces as they come, then the :class:`CreateResult` last: :meth:`complete_stream`.

        The iterator is a :class:`ModelStream`, which also tells when the first delta arrived. Given
        AutoGen's messages, its last item is AutoGen's ``CreateResult`` (:data:`RESULT_OUT`).
        """
        schemas, choice = request_tools(tools, tool_choice)  # AutoGen's: Tool objects or schemas
        sent, out = _messages_in(messages)
        request = ModelRequest(sent, schemas, choice, json_output, extra_create_args or _NO_ARGS)
        stream = ModelStream(self, request, cancellation_token)
        return stream if out is None else _answers_out(stream, out)

    # ------------------------------------------------------------------ what a client implements

    async def complete(
        self, request: ModelRequest, cancellation_token: CancellationToken | None = None
    ) -> CreateResult:
        """The model's answer to ``request``; counts its usage (:meth:`_count_usage`).

        What a client implements. For a class written for AutoGen's interface (it implements
        ``create``, or only ``create_stream``) this default calls that with the request's fields.
        """
        cls = type(self)
        if cls.create is not ChatCompletionClient.create:
            return await self.create(request.messages, **_create_kwargs(request, cancellation_token))
        if cls.create_stream is not ChatCompletionClient.create_stream:
            result: CreateResult | None = None
            stream = self.create_stream(request.messages, **_create_kwargs(request, cancellation_token))
            try:
                async for item in stream:
                    if isinstance(item, CreateResult):
                        result = item
            finally:
                close = getattr(stream, "aclose", None)
                if close is not None:
                    await close()
            if result is None:
                raise ModelResponseError(f"the stream of {self.model_name} ended without a CreateResult")
            return result
        raise NotImplementedError(f"{cls.__name__} implements neither complete() nor create()")

    async def complete_stream(
        self,
        request: ModelRequest,
        cancellation_token: CancellationToken | None = None,
        stream: ModelStream | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        """Text pieces as they come, then the :class:`CreateResult` last.

        ``stream`` is the :class:`ModelStream` the caller reads, on which a client that measures it
        sets ``first_chunk_perf``. By default: the answer of :meth:`complete`, its text as one piece
        (the items of ``create_stream`` for a class written for AutoGen's interface that implements it).
        """
        if type(self).create_stream is not ChatCompletionClient.create_stream:
            items = self.create_stream(request.messages, **_create_kwargs(request, cancellation_token))
            try:
                async for item in items:
                    yield item
            finally:
                close = getattr(items, "aclose", None)
                if close is not None:
                    await close()
            return
        result = await self.complete(request, cancellation_token)
        if isinstance(result.content, str) and result.content:
            yield result.content
        yield result

    # ------------------------------------------------------------------ state

    @property
    def model_name(self) -> str:
        return type(self).__name__

    @property
    def secrets(self) -> tuple[str, ...]:
        """The secret values this client holds (API keys, secret header values), for redaction.

        Recorders, traces and cassettes mask every one of them wherever it appears. Empty for a
        client that holds no credentials (the replay and cassette clients); a wrapping client (the
        recording one) includes its inner client's.
        """
        return tuple(self._secrets)

    def checkpoint(self) -> object | None:
        """What :meth:`restore` needs to put this client back as it is now; ``None``: nothing to restore.

        A client whose answers depend on the calls it already served (a replay script's position,
        a cassette's next call) returns an opaque value, with its usage counters. A client of a
        real model returns ``None``: its calls happened and cannot be taken back (the default).
        The stepper's Reset takes a checkpoint before the first move and restores it.
        """
        return None

    def restore(self, checkpoint: object | None) -> None:
        """Put the client back as it was when :meth:`checkpoint` returned ``checkpoint``.

        ``None`` (what a stateless client's checkpoint is) restores nothing. A value taken from
        another client, or from another kind of client, raises ``TypeError``.
        """
        if checkpoint is not None:
            raise TypeError(f"{type(self).__name__} keeps no state to restore, got a {type(checkpoint).__name__}")

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Any] = ()) -> int:
        """An estimate of the tokens ``messages`` and ``tools`` take (AutoGen's signature): four
        characters a token, as :func:`~nbagent.context.estimate_tokens` counts a message."""
        tool_chars = sum(len(str(tool)) for tool in tools)
        return sum(estimate_tokens(message) for message in messages) + (tool_chars + 3) // 4

    def total_usage(self) -> RequestUsage:
        """Tokens counted over every call, cached ones included."""
        return self._total_usage

    def actual_usage(self) -> RequestUsage:
        """Tokens of calls that really reached a model (not cached or replayed)."""
        return self._actual_usage

    def _count_usage(self, usage: RequestUsage, *, actual: bool) -> None:
        self._total_usage = self._total_usage + usage
        if actual:
            self._actual_usage = self._actual_usage + usage

    async def close(self) -> None:  # noqa: B027 (a client with nothing to release keeps this one)
        """Release connections; nothing by default."""

    @property
    def reopens(self) -> bool:
        """Whether the client works after :meth:`close` (its next call opens new connections) and closing it
        touches no other object: a runner may then close a client made for one task when that task ends
        (:class:`~nbagent.models.per_task.PerTaskClients`). ``False`` by default: a wrapper's close closes
        what it wraps (perhaps shared), and an AutoGen client's close is for good."""
        return False

    @property
    def capabilities(self) -> ModelInfo:
        """AutoGen's deprecated name of :attr:`model_info`."""
        return self.model_info


def _create_kwargs(request: ModelRequest, cancellation_token: CancellationToken | None) -> dict[str, Any]:
    """``request``'s fields as the keywords of AutoGen's ``create``/``create_stream`` (``extra_create_args``
    only when there are some: a class written for AutoGen's interface may leave it out)."""
    kwargs: dict[str, Any] = {
        "tools": request.tools,
        "tool_choice": request.tool_choice,
        "json_output": request.json_output,
        "cancellation_token": cancellation_token,
    }
    if request.extra_create_args:
        kwargs["extra_create_args"] = dict(request.extra_create_args)
    return kwargs
