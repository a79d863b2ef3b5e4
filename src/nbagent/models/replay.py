"""``ReplayChatCompletionClient``: scripted answers, the offline default model."""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Any, Self

from pydantic import BaseModel

from .. import _check as check
from ..cancellation import CancellationToken, guarded
from ..context import estimate_tokens
from ..messages import CreateResult, LLMMessage, RequestUsage, text_result, usage
from .base import ChatCompletionClient, ModelError, ModelInfo, ModelRequest, ModelStream
from .bridge import from_autogen_result, looks_like_result

_CHUNK = re.compile(r"\S+\s*|\s+")
TOTAL_AVAILABLE_TOKENS = 10_000
"""The replay model's token budget, as AutoGen's (``remaining_tokens``)."""


class ReplayExhaustedError(ModelError, ValueError):
    """The script has no answer left for this call.

    Also a ``ValueError`` starting with AutoGen's words (``"No more mock responses available"``), as its
    replay client raises: ``except ValueError`` (and a match on those words) written for AutoGen catches it."""


class ReplayChatCompletionClientConfig(BaseModel):
    """AutoGen's replay config (``chat_completions``, ``model_info``) and nbagent's pacing."""

    chat_completions: list[str | CreateResult]
    model_info: dict[str, Any] | None = None
    latency: float | None = None
    chunk_delay: float | None = None
    stream_results: bool | None = None
    keep_requests: int | None = None


class ReplayChatCompletionClient(ChatCompletionClient):
    """Answers each call with the next item of ``chat_completions`` (text or a ``CreateResult``).

    ``create_stream`` yields a scripted text word by word, whose concatenation is exact, then the
    result; a scripted ``CreateResult`` comes whole, as AutoGen's replay client streams it (its text
    in pieces too with ``stream_results=True``, to stream a scripted thought's answer).
    The last ``keep_requests`` requests are kept in ``requests`` to show what the model was sent.
    ``latency`` (before each answer) and ``chunk_delay`` (between streamed words) slow it down
    for demos and cancellation tests.
    """

    provider = "nbagent.replay"
    component_type = "replay_chat_completion_client"  # AutoGen's
    component_config_schema = ReplayChatCompletionClientConfig
    component_provider_override = "nbagent.ReplayChatCompletionClient"
    component_aliases = ("autogen_ext.models.replay.ReplayChatCompletionClient",)

    def __init__(
        self,
        chat_completions: Sequence[str | CreateResult],
        *,
        model_info: ModelInfo | None = None,
        latency: float = 0.0,
        chunk_delay: float = 0.0,
        keep_requests: int = 100,
        stream_results: bool = False,
    ) -> None:
        super().__init__()
        where = "ReplayChatCompletionClient"
        # The hint is for a lone string (a repr of a whole script would cost more than the run).
        hint = (
            f"A script of one answer is [{check.short_repr(chat_completions)}]"
            if isinstance(chat_completions, str)
            else ""
        )
        expected = "a list of answers (str or CreateResult)"
        script = check.sequence(where, "chat_completions", chat_completions, expected, hint=hint)
        for index, item in enumerate(script):
            if type(item) is not CreateResult and looks_like_result(item):  # AutoGen's: the same fields
                script[index] = item = from_autogen_result(item)
            check.instance(where, f"chat_completions[{index}]", item, (str, CreateResult), "a str or a CreateResult")
        check.mapping(where, "model_info", model_info, "a ModelInfo dict", none=True)
        check.number(where, "latency", latency, minimum=0)
        check.number(where, "chunk_delay", chunk_delay, minimum=0)
        check.integer(where, "keep_requests", keep_requests, minimum=0)
        check.boolean(where, "stream_results", stream_results)
        self.chat_completions = script
        self.model_info = ModelInfo(
            vision=False, function_calling=True, json_output=True, structured_output=True, family="replay"
        ) | (model_info or {})
        self.latency = latency
        self.chunk_delay = chunk_delay
        self.stream_results = stream_results
        self.requests: deque[ModelRequest] = deque(maxlen=keep_requests)
        self._call_tokens: deque[tuple[ModelRequest, CancellationToken | None]] = deque(maxlen=keep_requests)
        self._index = 0
        # The messages of the last request, their estimated tokens position by position, and their sum:
        # a tool loop, or the next run, sends the same context again with a few messages more, so only
        # those are estimated (16 bytes a message kept: no per-message object).
        self._sent: list[LLMMessage] = []
        self._counts: list[int] = []
        self._sent_tokens = 0

    @property
    def model_name(self) -> str:
        return "replay"

    @property
    def create_calls(self) -> list[dict[str, Any]]:
        """The arguments of the calls made to ``create`` (AutoGen's): ``messages``, ``tools``,
        ``json_output``, ``extra_create_args`` and ``cancellation_token``, for the last
        ``keep_requests`` calls (``requests`` holds them as :class:`ModelRequest`)."""
        tokens = {id(request): token for request, token in self._call_tokens}
        return [
            {
                "messages": request.messages,
                "tools": request.tools,
                "json_output": request.json_output,
                "extra_create_args": dict(request.extra_create_args),
                "cancellation_token": tokens.get(id(request)),
            }
            for request in self.requests
        ]

    @property
    def remaining(self) -> int:
        """How many scripted answers are left."""
        return len(self.chat_completions) - self._index

    @property
    def position(self) -> int:
        """The index in ``chat_completions`` of the next answer (settable, to jump in the script)."""
        return self._index

    @position.setter
    def position(self, index: int) -> None:
        if not 0 <= index <= len(self.chat_completions):
            raise ValueError(f"position is between 0 and {len(self.chat_completions)}, got {index}")
        self._index = index

    def reset(self) -> None:
        """Start the script again from its first answer."""
        self._index = 0
        self.requests.clear()
        self._call_tokens.clear()

    def checkpoint(self) -> ReplayCheckpoint:
        """The script's position, the kept requests and the usage counters, for :meth:`restore`."""
        return ReplayCheckpoint(self, self._index, tuple(self.requests), self._total_usage, self._actual_usage)

    def restore(self, checkpoint: object | None) -> None:
        """Rewind (or forward) to a :meth:`checkpoint` of this client: the next answer is the one it was at."""
        if not isinstance(checkpoint, ReplayCheckpoint) or checkpoint.client is not self:
            raise TypeError("restore() takes a checkpoint() of this same ReplayChatCompletionClient")
        self._index = checkpoint.index
        self.requests.clear()
        self.requests.extend(checkpoint.requests)
        self._total_usage, self._actual_usage = checkpoint.total_usage, checkpoint.actual_usage

    def _next(self, request: ModelRequest) -> CreateResult:
        if self._index >= len(self.chat_completions):
            raise ReplayExhaustedError(
                f"No more mock responses available: ReplayChatCompletionClient has no answer left: all "
                f"{len(self.chat_completions)} scripted answers were used (call reset() or add more)"
            )
        item = self.chat_completions[self._index]
        self._index += 1
        self.requests.append(request)  # create() made it a snapshot
        prompt_tokens = self._prompt_tokens(request.messages)
        if isinstance(item, str):
            result = text_result(item, usage(prompt_tokens, (len(item) + 3) // 4))
        else:
            result = item
        self._count_usage(result.usage, actual=False)
        return result

    def _prompt_tokens(self, messages: Sequence[LLMMessage]) -> int:
        """The estimated prompt size, each message estimated once while it keeps being sent.

        A request that sends the last one's messages again with more after them (a tool loop, the next
        run) costs its new messages: the repeated ones are compared at C speed, by identity, and their
        sum is kept. Any other (a window that moved, a context replaced) looks its messages up by
        identity among the last request's."""
        sent, counts = self._sent, self._counts
        kept = len(sent)
        if kept and len(messages) >= kept and messages[kept - 1] is sent[-1]:
            head = messages[:kept]
            if (head if type(head) is list else list(head)) == sent:
                new = messages[kept:]
                added = [estimate_tokens(message) for message in new]
                sent.extend(new)
                counts.extend(added)
                self._sent_tokens += sum(added)
                return self._sent_tokens
        moved = dict(zip(map(id, sent), counts))  # (no comprehension: each is a Python call)
        new_counts: list[int] = []
        for message in messages:
            found = moved.get(id(message))
            new_counts.append(estimate_tokens(message) if found is None else found)
        # a copy: the caller's list may change (``moved`` is made before ``sent`` lets its messages go)
        self._sent, self._counts, self._sent_tokens = list(messages), new_counts, sum(new_counts)
        return self._sent_tokens

    async def complete(
        self, request: ModelRequest, cancellation_token: CancellationToken | None = None
    ) -> CreateResult:
        if self.latency:
            await guarded(asyncio.sleep(self.latency), cancellation_token)
        if cancellation_token is not None and cancellation_token.is_cancelled():
            raise asyncio.CancelledError()
        result = self._next(request)
        self._call_tokens.append((request, cancellation_token))
        return result

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Any] = ()) -> int:
        """AutoGen's replay count: the words (split on white space) of the messages' text contents;
        a message whose content is not a text (tool calls, results, images) counts none, nor do ``tools``."""
        return sum(len(message.content.split()) for message in messages if isinstance(message.content, str))

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Any] = ()) -> int:
        """AutoGen's replay budget: 10,000 tokens less every token used so far (``total_usage()``),
        whatever ``messages`` and ``tools`` are."""
        used = self._total_usage
        return max(0, TOTAL_AVAILABLE_TOKENS - used.prompt_tokens - used.completion_tokens)

    async def complete_stream(
        self,
        request: ModelRequest,
        cancellation_token: CancellationToken | None = None,
        stream: ModelStream | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        # A scripted text is streamed in pieces; a scripted CreateResult comes whole (AutoGen's rule).
        scripted_text = self.stream_results or (
            self._index < len(self.chat_completions) and isinstance(self.chat_completions[self._index], str)
        )
        # Through create(), as before: a subclass that overrides create() changes streamed answers too.
        result = await self.create(
            request.messages,
            tools=request.tools,
            tool_choice=request.tool_choice,
            json_output=request.json_output,
            extra_create_args=request.extra_create_args,
            cancellation_token=cancellation_token,
        )
        if scripted_text and isinstance(result.content, str):
            delay = self.chunk_delay
            if delay:
                for piece in _CHUNK.findall(result.content):
                    await guarded(asyncio.sleep(delay), cancellation_token)
                    yield piece
            else:
                for piece in _CHUNK.findall(result.content):
                    yield piece
        yield result

    def _to_config(self) -> ReplayChatCompletionClientConfig:
        return ReplayChatCompletionClientConfig(
            chat_completions=list(self.chat_completions),
            model_info=dict(self.model_info),
            latency=self.latency or None,
            chunk_delay=self.chunk_delay or None,
            stream_results=self.stream_results or None,
            keep_requests=None if self.requests.maxlen == 100 else self.requests.maxlen,
        )

    @classmethod
    def _from_config(cls, config: ReplayChatCompletionClientConfig) -> Self:
        return cls(
            config.chat_completions,
            model_info=config.model_info,  # type: ignore[arg-type]
            latency=config.latency or 0.0,
            chunk_delay=config.chunk_delay or 0.0,
            stream_results=bool(config.stream_results),
            keep_requests=100 if config.keep_requests is None else config.keep_requests,
        )


@dataclass(frozen=True)
class ReplayCheckpoint:
    """Where a :class:`ReplayChatCompletionClient` was: see :meth:`ReplayChatCompletionClient.checkpoint`."""

    client: ReplayChatCompletionClient
    index: int
    requests: tuple[ModelRequest, ...]
    total_usage: RequestUsage
    actual_usage: RequestUsage
