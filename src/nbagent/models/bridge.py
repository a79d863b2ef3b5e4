"""Model clients nbagent did not make, used as they are: another library's and duck-typed ones.

:func:`as_model_client` is what ``AssistantAgent(model_client=...)`` does with its argument:

* nbagent's :class:`~nbagent.models.base.ChatCompletionClient` (a subclass written for AutoGen's
  interface included) is used as it is;
* a client an adapter knows (:data:`FOREIGN_CLIENT`: :mod:`nbagent.autogen` registers AutoGen's
  ``autogen_core.models.ChatCompletionClient``, autogen-ext's OpenAI, Azure, Ollama, Anthropic...
  clients and its ``ReplayChatCompletionClient``) is wrapped in a :class:`BridgedClient` that sends
  it the adapter's own messages and ``CancellationToken`` and reads its ``CreateResult`` and stream
  back as nbagent's;
* any other object that has what AutoGen's agent uses (``create``, and ``create_stream`` when it
  streams, ``model_info``; ``close`` and the usage methods when it has them), a ``MagicMock`` built as
  AutoGen's tests build one for instance, is wrapped too: it is called with nbagent's messages
  (AutoGen's fields and names) and may answer with any object with ``CreateResult``'s fields.

Everything nbagent adds around a model call (the trace's ``LLMCall`` with its request, result,
usage, timing and chunks; cancellation; the live view; the stepper) is the loop's and works the
same through the bridge. The bridge reads a client's API key from its component config (AutoGen's
clients keep it there) so that traces and dumps mask it.
"""

from __future__ import annotations

import contextlib
import inspect
import time
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from .. import _check as check
from ..cancellation import CancellationToken
from ..components import ComponentModel, dump_nested
from ..hooks import Hook
from ..messages import (
    CreateResult,
    FunctionCall,
    LLMMessage,
    RequestUsage,
)
from ..redact import hold_secrets, redact
from .base import ChatCompletionClient, ModelInfo, ModelRequest, ModelResponseError, ModelStream

_perf = time.perf_counter

_REASONS = frozenset({"stop", "length", "function_calls", "content_filter", "unknown"})


FOREIGN_CLIENT: Hook[[object], BridgedClient] = Hook("model client")
"""Another library's model client as a :class:`BridgedClient` speaking its types (registered by
:mod:`nbagent.autogen` for AutoGen's clients); ``None`` for any other object."""


def client_config(client: object) -> Mapping[str, Any]:
    """The client's component config (its model, its key), or nothing when it has none."""
    dump = getattr(client, "dump_component", None)
    if not callable(dump):
        return {}
    try:
        config = dump().config
    except Exception:  # a client without a config: no model name or key to read
        return {}
    return config if isinstance(config, Mapping) else {}


def secret_text(value: Any) -> str | None:
    """The text of a secret config value (a pydantic ``SecretStr`` or a str), ``None`` if empty."""
    if value is None:
        return None
    reveal = getattr(value, "get_secret_value", None)
    text = reveal() if callable(reveal) else value
    return text if isinstance(text, str) and text else None


def client_secrets(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The credentials a client's config holds (``api_key``, ``azure_ad_token``)."""
    found = (secret_text(config.get(key)) for key in ("api_key", "azure_ad_token"))
    return tuple(secret for secret in found if secret)


def as_model_client(value: object, where: str = "AssistantAgent", *, hint: str = "") -> ChatCompletionClient:
    """``value`` as nbagent's model client: itself, or bridged (see the module); a ``TypeError``
    naming the parameter and the member it lacks otherwise (``hint`` for a value no client at all)."""
    if isinstance(value, ChatCompletionClient):
        return value
    foreign = FOREIGN_CLIENT(value)
    if foreign is not None:
        return foreign
    members = [name for name in ("create", "create_stream", "model_info") if _has(value, name)]
    if not members:
        raise check.wrong_type(where, "model_client", "a ChatCompletionClient", value, hint)
    if not callable(getattr(value, "create", None)):
        raise check.wrong_type(
            where,
            "model_client",
            "a ChatCompletionClient (or an object with AutoGen's create, create_stream and model_info)",
            value,
            f"It has {', '.join(members)} but no create(messages, ...) method",
        )
    info = getattr(value, "model_info", None)
    if info is None:
        raise check.wrong_type(
            where,
            "model_client",
            "a ChatCompletionClient (or an object with AutoGen's create, create_stream and model_info)",
            value,
            "It has no model_info: give it one, e.g. model_info={'function_calling': True, 'vision': False, "
            "'json_output': False, 'family': 'unknown', 'structured_output': False}",
        )
    if not quacks_as_mapping(info):
        raise check.wrong_type(
            where,
            "model_client.model_info",
            "a ModelInfo dict ({'function_calling': ..., 'vision': ..., 'family': ...})",
            info,
        )
    return BridgedClient(value)


def quacks_as_mapping(value: object) -> bool:
    """Whether ``value`` reads as a ``ModelInfo`` dict: a mapping, or an object with ``get`` and ``[key]``
    (a ``MagicMock``, as AutoGen's tests give it)."""
    if isinstance(value, Mapping):
        return True
    return callable(getattr(value, "get", None)) and callable(getattr(type(value), "__getitem__", None))


def _has(value: object, name: str) -> bool:
    try:
        return getattr(value, name, None) is not None
    except Exception:  # a property that raises: not there
        return False


class BridgedClient(ChatCompletionClient):
    """Another library's (or a duck-typed) model client as nbagent's: ``inner`` is called as AutoGen's
    agent calls it, each message of a request converted by ``message_out`` and the token by
    ``token_out`` (an adapter's: :data:`FOREIGN_CLIENT`; none for a duck-typed client, which is given
    nbagent's messages and token).

    ``inner`` stays the user's object: its usage counters, ``close()``, ``create_calls`` (a replay
    client's) are its own. The stepper's Reset rewinds it only if it has nbagent's
    ``checkpoint()``/``restore()``; otherwise Reset says (a ``UserWarning``) that its next call
    continues from where it is.
    """

    component_type = "model"

    def __init__(
        self,
        inner: object,
        *,
        message_out: Callable[[LLMMessage], Any] | None = None,
        token_out: Callable[[CancellationToken], Any] | None = None,
        provider: str = "unknown",
    ) -> None:
        super().__init__()
        self.inner = inner
        self._message_out = message_out
        self._token_out = token_out
        self.provider = provider  # gen_ai.provider.name: the adapter knows its library's clients
        self._config: Mapping[str, Any] | None = None  # read when first needed (_read_config)
        self._secrets: tuple[str, ...] = ()
        self._last: tuple[list[LLMMessage], list[Any]] = ([], [])  # the last call's messages, both ways

    def _read_config(self, dumped: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
        """The client's component config (its model name, its key), read once: before its first call, at
        the first read of :attr:`model_name`, or from its first dump (``dumped``), never at construction
        (AutoGen's agent calls no ``dump_component`` of its client until it is dumped itself). Its secrets
        are masked in every view and artefact of the process from then on, before the client says anything."""
        if self._config is None:
            self._config = client_config(self.inner) if dumped is None else dumped
            self._secrets = client_secrets(self._config)
            hold_secrets(self._secrets)
        return self._config

    @property
    def model_name(self) -> str:
        config = self._read_config()
        model = config.get("model") or config.get("azure_deployment") or getattr(self.inner, "model", None)
        return model if isinstance(model, str) and model else type(self.inner).__name__

    @property
    def model_info(self) -> ModelInfo:  # type: ignore[override]  # read from the client each time, as AutoGen's agent does
        info = getattr(self.inner, "model_info", None)
        return info if quacks_as_mapping(info) else {}  # type: ignore[return-value]  # a MagicMock's, as AutoGen reads it

    @property
    def streams(self) -> bool:
        """Whether the client has a ``create_stream`` (``model_client_stream=True`` needs it)."""
        return callable(getattr(self.inner, "create_stream", None))

    # ------------------------------------------------------------------ the calls

    def _kwargs(self, request: ModelRequest, cancellation_token: CancellationToken | None) -> dict[str, Any]:
        """The keywords AutoGen's agent passes: tools (not in a call with ``tool_choice='none'`` and
        no tools), ``tool_choice`` when not ``auto``, ``json_output``, the token; the extra arguments
        when there are some."""
        kwargs: dict[str, Any] = {}
        if request.tools or request.tool_choice != "none":
            kwargs["tools"] = list(request.tools)
        if request.tool_choice != "auto":
            kwargs["tool_choice"] = request.tool_choice
        kwargs["json_output"] = request.json_output
        if request.extra_create_args:
            kwargs["extra_create_args"] = dict(request.extra_create_args)
        kwargs["cancellation_token"] = self._token(cancellation_token)
        return kwargs

    def _token(self, token: CancellationToken | None) -> Any:
        """The adapter's own token (fired when nbagent's fires); nbagent's (which has AutoGen's
        methods) for a duck-typed client."""
        if self._token_out is None or token is None:
            return token
        return self._token_out(token)

    def _messages(self, messages: Sequence[LLMMessage]) -> list[Any]:
        """The request's messages as the client takes them: the adapter's types (AutoGen's for an
        AutoGen client), each converted once while it stays in the context: the last call's conversions
        are reused, those of the common start by position (a growing context), the others by identity."""
        convert = self._message_out
        if convert is None:
            return list(messages)
        last_in, last_out = self._last
        same = 0
        for mine, before in zip(messages, last_in, strict=False):
            if mine is not before:
                break
            same += 1
        out = last_out[:same]
        if same < len(messages):
            kept = {id(message): (message, theirs) for message, theirs in zip(last_in[same:], last_out[same:])}
            for message in messages[same:]:
                pair = kept.get(id(message))
                out.append(pair[1] if pair is not None and pair[0] is message else convert(message))
        self._last = (list(messages), out)
        return list(out)  # the client's own list: what it does with it changes nothing here

    async def complete(
        self, request: ModelRequest, cancellation_token: CancellationToken | None = None
    ) -> CreateResult:
        self._read_config()
        answer = self.inner.create(  # type: ignore[attr-defined]
            self._messages(request.messages), **self._kwargs(request, cancellation_token)
        )
        if not inspect.isawaitable(answer):
            raise ModelResponseError(
                f"{type(self.inner).__name__}.create() returned {type(answer).__name__}, not an awaitable "
                "(AutoGen's create is async: an AsyncMock, or an async def)"
            )
        try:
            value = await answer
        except Exception as error:
            self._scrub(error)
            raise
        result = from_autogen_result(value, self.model_name)
        self._count_usage(result.usage, actual=not result.cached)
        return result

    def _scrub(self, error: Exception) -> None:
        """Mask the client's secrets in the text of ``error`` (raised on as it is, its type kept for the
        caller's ``except``): the trace records it, and a server's error may echo the key (nbagent's own
        clients mask it where they raise)."""
        texts = [arg for arg in error.args if isinstance(arg, str)]
        if self._secrets and texts:
            error.args = tuple(redact(arg, self._secrets) if isinstance(arg, str) else arg for arg in error.args)
            message = getattr(error, "message", None)
            if isinstance(message, str):
                with contextlib.suppress(AttributeError):
                    error.message = redact(message, self._secrets)  # type: ignore[attr-defined]

    async def complete_stream(
        self,
        request: ModelRequest,
        cancellation_token: CancellationToken | None = None,
        stream: ModelStream | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        create_stream = getattr(self.inner, "create_stream", None)
        if not callable(create_stream):
            raise TypeError(
                f"{type(self.inner).__name__} has no create_stream(): it cannot stream (use model_client_stream=False)"
            )
        self._read_config()
        items = create_stream(self._messages(request.messages), **self._kwargs(request, cancellation_token))
        if not isinstance(items, AsyncIterator) and not hasattr(items, "__aiter__"):
            raise ModelResponseError(
                f"{type(self.inner).__name__}.create_stream() returned {type(items).__name__}, not an async "
                "iterator of text pieces and a CreateResult"
            )
        try:
            async for item in items:
                if stream is not None and stream.first_chunk_perf is None:
                    stream.first_chunk_perf = _perf()
                if isinstance(item, str):
                    yield item
                elif looks_like_result(item):
                    result = from_autogen_result(item, self.model_name)
                    self._count_usage(result.usage, actual=not result.cached)
                    yield result
                else:
                    yield item  # the loop raises AutoGen's "Invalid chunk type" for it
        except Exception as error:
            self._scrub(error)
            raise
        finally:
            close = getattr(items, "aclose", None)
            if close is not None:
                await close()

    # ------------------------------------------------------------------ AutoGen's other members

    def total_usage(self) -> RequestUsage:
        """The client's own count when it keeps one (AutoGen's clients do), else the bridge's."""
        usage = _call(self.inner, "total_usage")
        return from_autogen_usage(usage) if usage is not None else super().total_usage()

    def actual_usage(self) -> RequestUsage:
        usage = _call(self.inner, "actual_usage")
        return from_autogen_usage(usage) if usage is not None else super().actual_usage()

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Any] = ()) -> int:
        count = getattr(self.inner, "count_tokens", None)
        if callable(count):
            return int(count(self._messages(messages), tools=list(tools)))
        return super().count_tokens(messages, tools=tools)

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Any] = ()) -> int:
        """What the client says is left of its model's window (AutoGen's clients know it)."""
        remaining = getattr(self.inner, "remaining_tokens", None)
        if not callable(remaining):
            raise NotImplementedError(f"{type(self.inner).__name__} has no remaining_tokens()")
        return int(remaining(self._messages(messages), tools=list(tools)))

    async def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            done = close()
            if inspect.isawaitable(done):
                await done

    def _own(self, name: str) -> Any:
        """The client's method ``name`` if its class defines one (not an attribute a mock makes up)."""
        return getattr(self.inner, name) if callable(getattr(type(self.inner), name, None)) else None

    def checkpoint(self) -> object | None:
        own = self._own("checkpoint")
        return own() if own is not None else None

    def restore(self, checkpoint: object | None) -> None:
        """Rewind the client with its own ``restore()``; a client without one cannot be rewound, and
        a ``UserWarning`` says so (its next call continues from where it is)."""
        own = self._own("restore")
        if own is not None:
            own(checkpoint)
            return
        warnings.warn(
            f"the model client {type(self.inner).__name__} cannot rewind (it has no checkpoint()/restore()): "
            "the context is put back, but the client's next call continues from where it is "
            "(a replay script's next answer, a real model called again)",
            UserWarning,
            stacklevel=2,
        )

    def dump_component(self, *, include_secrets: bool | None = None) -> ComponentModel:
        """The client's own component config (AutoGen's ``dump_component()``, as nbagent's
        ``ComponentModel``: an agent's dump holds its client's AutoGen provider and config)."""
        dumped = dump_nested(self.inner)
        self._read_config(dumped.config)  # its first dump tells its key, without asking it again
        return dumped

    def __repr__(self) -> str:
        return f"BridgedClient({self.inner!r})"


def _call(inner: object, name: str) -> Any:
    method = getattr(inner, name, None)
    if not callable(method):
        return None
    value = method()
    counts = (getattr(value, "prompt_tokens", None), getattr(value, "completion_tokens", None))
    return value if all(type(count) is int for count in counts) else None  # not a MagicMock's answer


# ---------------------------------------------------------------------- conversions


def from_autogen_usage(value: Any) -> RequestUsage:
    """A usage with ``prompt_tokens``/``completion_tokens`` (AutoGen's) as nbagent's."""
    if value is None:
        return RequestUsage()
    if type(value) is RequestUsage:
        return value
    return RequestUsage(
        prompt_tokens=int(getattr(value, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(value, "completion_tokens", 0) or 0),
    )


def looks_like_result(value: object) -> bool:
    """Whether ``value`` is a ``CreateResult`` or has its fields (AutoGen's, a mock's)."""
    return isinstance(value, CreateResult) or (hasattr(value, "finish_reason") and hasattr(value, "content"))


def from_autogen_result(value: Any, model: str = "the model client") -> CreateResult:
    """AutoGen's ``CreateResult`` (or nbagent's, or any object with its fields) as nbagent's; a
    :class:`ModelResponseError` naming what came back otherwise."""
    if type(value) is CreateResult:
        return value
    if not looks_like_result(value):
        raise ModelResponseError(f"{model} answered {type(value).__name__}, not a CreateResult")
    content = value.content
    if not isinstance(content, str):
        if not isinstance(content, Sequence):
            raise ModelResponseError(f"{model} answered a CreateResult whose content is {type(content).__name__}")
        content = [
            call
            if isinstance(call, FunctionCall)
            else FunctionCall(id=str(call.id), name=str(call.name), arguments=str(call.arguments))
            for call in content
        ]
    reason = getattr(value, "finish_reason", "unknown")
    thought = getattr(value, "thought", None)
    return CreateResult(
        finish_reason=reason if reason in _REASONS else "unknown",  # type: ignore[arg-type]  # checked: one of them
        content=content,
        usage=from_autogen_usage(getattr(value, "usage", None)),
        cached=bool(getattr(value, "cached", False)),
        thought=thought if isinstance(thought, str) else None,
    )
