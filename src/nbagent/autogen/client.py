"""A model client that records every call of the AutoGen client it wraps, as nbagent ``LLMCall`` records.

:class:`RecordingClient` implements AutoGen's ``ChatCompletionClient`` interface around any AutoGen
client and passes every call through unchanged. For each call it builds an nbagent
:class:`~nbagent.records.LLMCall` when the call starts (the request: messages, tools,
``tool_choice``, output format), keeps the stream as it arrives (the text pieces and their
``perf_counter`` times, which give the time to the first token) and completes the record when the
call ends (duration, result with usage, or the error). It tells its :class:`CallSink` (the run that
records the agent) when a call starts, and waits before sending the call when the sink asks it to
(the step-by-step mode pauses there).
"""

from __future__ import annotations

import asyncio
import time
import weakref
from array import array
from collections.abc import AsyncGenerator, Awaitable, Mapping, Sequence
from typing import Any, Protocol

from autogen_core import CancellationToken
from autogen_core import models as agm
from autogen_core.models import ChatCompletionClient, CreateResult, LLMMessage, ModelInfo, RequestUsage
from pydantic import BaseModel

from .._ids import new_id
from ..cancellation import CANCELLED
from ..models.base import ModelRequest
from ..models.bridge import client_config, client_secrets
from ..records import LLMCall
from ..redact import hold_secrets
from .convert import PROVIDERS, Converter, create_result, tool_choice, tool_schema

_perf = time.perf_counter


class CallSink(Protocol):
    """Who hears of the calls of a :class:`RecordingClient` (the run recording its agent)."""

    def call_started(self, call: LLMCall) -> Awaitable[None] | None:
        """``call`` starts; an awaitable returned is awaited before the call is sent (whoever completes it
        sets the call's start time then: the wait is not the call's time)."""
        ...

    def call_ended(self, call: LLMCall) -> None:
        """``call`` ended (``call.result`` or ``call.error`` is set)."""
        ...


def error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


class RecordingClient(ChatCompletionClient):
    """An AutoGen ``ChatCompletionClient`` that records every call of ``inner`` (which it calls unchanged).

    ``calls`` holds every call's :class:`~nbagent.records.LLMCall`, in order. ``sink`` (set by the
    run recording the agent) hears when each call starts and ends.
    """

    component_type = "model"

    def __init__(self, inner: ChatCompletionClient, converter: Converter | None = None) -> None:
        self.inner = inner
        self.converter = converter or Converter()
        self._sink: weakref.ref[Any] | None = None
        self.calls: list[LLMCall] = []
        config = client_config(inner)
        model = config.get("model") or config.get("azure_deployment")
        self.model_name = str(model) if model else type(inner).__name__
        self.provider = PROVIDERS.get(type(inner).__name__, "unknown")
        self.secrets: tuple[str, ...] = client_secrets(config)
        hold_secrets(self.secrets)  # masked in every view and artefact of the process

    @property
    def sink(self) -> CallSink | None:
        """Who hears of the calls; held weakly: the agent holding this client does not keep alive a run
        its consumer left unfinished (so that the run, once collected, can put the agent back)."""
        return None if self._sink is None else self._sink()

    @sink.setter
    def sink(self, sink: CallSink | None) -> None:
        self._sink = None if sink is None else weakref.ref(sink)

    # ------------------------------------------------------------------ recording

    def _begin(
        self,
        messages: Sequence[LLMMessage],
        tools: Sequence[Any],
        choice: Any,
        json_output: bool | type[BaseModel] | None,
        extra_create_args: Mapping[str, Any],
        streaming: bool,
    ) -> LLMCall:
        request = ModelRequest(
            self.converter.llms(messages),
            [tool_schema(tool) for tool in tools],
            tool_choice(choice),
            json_output,
            dict(extra_create_args),
        )
        # The run, iteration, purpose and message id are the recording run's to fill in: the call
        # alone does not know which turn of its agent it belongs to.
        call = LLMCall("", 0, "initial", self.model_name, request, new_id(), streaming, self.provider)
        if streaming:
            call.chunks, call.chunk_perf, call.chunk_ids = [], array("d"), []
        self.calls.append(call)
        return call

    def _end(self, call: LLMCall, result: CreateResult | None, error: BaseException | None) -> None:
        if error is not None:
            call.finish(None, error_text(error))
        else:
            assert result is not None
            call.finish(create_result(result))
        sink = self.sink
        if sink is not None:
            sink.call_ended(call)

    async def _wait(self, call: LLMCall) -> None:
        sink = self.sink
        if sink is not None:
            gate = sink.call_started(call)
            if gate is not None:
                await gate  # the sink sets the call's start when it opens the gate (the pause is not its time)

    # ------------------------------------------------------------------ AutoGen's interface

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Any] = [],  # noqa: B006 (AutoGen's signature; never changed here)
        tool_choice: Any = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},  # noqa: B006
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        call = self._begin(messages, tools, tool_choice, json_output, extra_create_args, False)
        try:
            await self._wait(call)
            pending = asyncio.ensure_future(
                self.inner.create(
                    messages,
                    tools=tools,
                    tool_choice=tool_choice,
                    json_output=json_output,
                    extra_create_args=extra_create_args,
                    cancellation_token=cancellation_token,
                )
            )
            if cancellation_token is not None:  # cancelled at once, also for a client that does not link it
                cancellation_token.link_future(pending)
            result = await pending
        except BaseException as error:
            self._end(call, None, error)
            raise
        self._end(call, result, None)
        return result

    def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Any] = [],  # noqa: B006
        tool_choice: Any = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},  # noqa: B006
        cancellation_token: CancellationToken | None = None,
        include_usage: bool | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        call = self._begin(messages, tools, tool_choice, json_output, extra_create_args, True)
        kwargs: dict[str, Any] = {}
        if include_usage is not None:  # OpenAI's client takes it; AutoGen's interface does not name it
            kwargs["include_usage"] = include_usage
        return self._stream(
            call, messages, tools, tool_choice, json_output, extra_create_args, cancellation_token, kwargs
        )

    async def _stream(
        self,
        call: LLMCall,
        messages: Sequence[LLMMessage],
        tools: Sequence[Any],
        choice: Any,
        json_output: bool | type[BaseModel] | None,
        extra_create_args: Mapping[str, Any],
        cancellation_token: CancellationToken | None,
        kwargs: dict[str, Any],
    ) -> AsyncGenerator[str | CreateResult, None]:
        result: CreateResult | None = None
        pieces, times = call.chunks, call.chunk_perf
        assert isinstance(pieces, list) and isinstance(times, array)
        try:
            await self._wait(call)
            stream = self.inner.create_stream(
                messages,
                tools=tools,
                tool_choice=choice,
                json_output=json_output,
                extra_create_args=extra_create_args,
                cancellation_token=cancellation_token,
                **kwargs,
            )
            try:
                async for chunk in stream:
                    if isinstance(chunk, str):
                        pieces.append(chunk)
                        times.append(_perf())
                    elif isinstance(chunk, agm.CreateResult):
                        result = chunk
                    yield chunk
                    if cancellation_token is not None and cancellation_token.is_cancelled():
                        raise asyncio.CancelledError(CANCELLED)
            finally:
                close = getattr(stream, "aclose", None)
                if close is not None:
                    await close()
        except GeneratorExit:  # the caller stopped reading: the call did not end normally
            self._end(call, None, GeneratorExit("the stream was closed before its end"))
            raise
        except BaseException as error:
            self._end(call, None, error)
            raise
        if result is None:
            self._end(call, None, RuntimeError("the stream ended without a CreateResult"))
        else:
            self._end(call, result, None)

    async def close(self) -> None:
        await self.inner.close()

    def actual_usage(self) -> RequestUsage:
        return self.inner.actual_usage()

    def total_usage(self) -> RequestUsage:
        return self.inner.total_usage()

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Any] = []) -> int:  # noqa: B006
        return self.inner.count_tokens(messages, tools=tools)

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Any] = []) -> int:  # noqa: B006
        return self.inner.remaining_tokens(messages, tools=tools)

    @property
    def capabilities(self) -> Any:  # deprecated in AutoGen; model_info is read instead
        return self.inner.model_info

    @property
    def model_info(self) -> ModelInfo:
        return self.inner.model_info

    def dump_component(self) -> Any:
        """The inner client's component: an agent saved while it is recorded saves its own client."""
        return self.inner.dump_component()

    def __repr__(self) -> str:
        return f"RecordingClient({self.inner!r})"
