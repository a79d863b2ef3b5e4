"""Cassettes: record a live model's answers to a JSON file, replay them offline.

:class:`RecordingChatCompletionClient` wraps any client and writes every call (request, streamed
pieces with their time since the call started, final result or error) to a plain JSON file after
each call. :class:`CassetteChatCompletionClient` serves a file back in order, optionally at the
recorded pace, and checks that each request is the recorded one. Secrets (API keys,
``Authorization`` values, ``sk-...``/``Bearer ...`` tokens) are masked before anything is written.
No pickle: a cassette is validated on load and a bad file raises :class:`CassetteError`.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import time
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .. import _check as check
from ..cancellation import CancellationToken, guarded
from ..messages import CreateResult, RequestUsage
from ..redact import REDACTED, known_secrets, process_secrets, redact_data
from . import base
from .base import ChatCompletionClient, ModelError, ModelInfo, ModelRequest, ModelStream

CASSETTE_FORMAT: Literal["nbagent-cassette"] = "nbagent-cassette"
CASSETTE_VERSION: Literal[1] = 1


class CassetteError(ValueError):
    """A cassette file that cannot be read: not JSON, not a cassette, or a malformed entry."""


class CassetteMismatchError(ModelError):
    """A request differs from the one recorded at that position of the cassette."""


class CassetteExhaustedError(ModelError):
    """Every recorded call was already replayed."""


class RecordedChunk(BaseModel):
    """One streamed text piece and its time (seconds) since the call started."""

    model_config = ConfigDict(extra="forbid")
    t: float = Field(ge=0, allow_inf_nan=False)
    text: str


class RecordedError(BaseModel):
    """A call that failed with a :class:`ModelError` (its class name, message and status)."""

    model_config = ConfigDict(extra="forbid")
    type: str
    message: str
    status: int | None = None


class Interaction(BaseModel):
    """One model call: what was asked, and what came back (a result or an error)."""

    model_config = ConfigDict(extra="forbid")
    request: dict[str, Any]
    stream: bool
    duration_s: float = Field(ge=0, allow_inf_nan=False)
    chunks: list[RecordedChunk] = Field(default_factory=list)
    result: CreateResult | None = None
    error: RecordedError | None = None

    @model_validator(mode="after")
    def _one_outcome(self) -> Interaction:
        if (self.result is None) == (self.error is None):
            raise ValueError("an interaction has exactly one of 'result' and 'error'")
        return self


class Cassette(BaseModel):
    """The whole file."""

    model_config = ConfigDict(extra="forbid")
    format: Literal["nbagent-cassette"]
    version: Literal[1]
    model: str
    # Who served the recording (gen_ai.provider.name); files written before it was kept came from
    # the OpenAI client, the only real one.
    provider: str = "openai"
    model_info: dict[str, Any]
    recorded_at: str
    interactions: list[Interaction]


def request_record(request: ModelRequest, secrets: Sequence[str] = ()) -> dict[str, Any]:
    """A call's request as JSON-ready data, secrets masked: what a cassette stores and compares."""
    json_output = request.json_output
    if isinstance(json_output, type) and issubclass(json_output, BaseModel):
        output: Any = {"model": json_output.__name__, "schema": json_output.model_json_schema()}
    else:
        output = json_output
    record: dict[str, Any] = {
        "messages": [message.model_dump(mode="json") for message in request.messages],
        "tools": [dict(tool) for tool in request.tools],
        "tool_choice": request.tool_choice,
        "json_output": output,
    }
    if request.extra_create_args:
        record["extra_create_args"] = dict(request.extra_create_args)
    masked: dict[str, Any] = redact_data(record, secrets)
    return masked


def first_difference(recorded: Any, actual: Any, where: str = "request") -> str | None:
    """Where two JSON values first differ, with both values; ``None`` when they are equal."""
    if isinstance(recorded, dict) and isinstance(actual, dict):
        for key in [*recorded, *(k for k in actual if k not in recorded)]:
            if key not in recorded or key not in actual:
                side = "the recording" if key not in recorded else "this request"
                return f"{where}.{key} is missing from {side}"
            found = first_difference(recorded[key], actual[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(actual, list):
        for index, (r, a) in enumerate(zip(recorded, actual)):
            found = first_difference(r, a, f"{where}[{index}]")
            if found:
                return found
        if len(recorded) != len(actual):
            return f"{where} has {len(actual)} items, the recording {len(recorded)}"
        return None
    if recorded != actual and not _redacted_match(recorded, actual):
        return f"{where}: recorded {_short(recorded)}, got {_short(actual)}"
    return None


def _redacted_match(recorded: Any, actual: Any) -> bool:
    """A recorded text with ``[REDACTED]`` in it matches any text that has something in those places."""
    if not (isinstance(recorded, str) and isinstance(actual, str) and REDACTED in recorded):
        return False
    pattern = ".+?".join(re.escape(part) for part in recorded.split(REDACTED))
    return re.fullmatch(pattern, actual, re.DOTALL) is not None


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 120 else text[:117] + "..."


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999: a paced replay would sleep for ever
        raise ValueError(f"{text} is not a finite number")
    return value


MAX_DEPTH = 64
"""The deepest nesting of lists and objects a cassette may have (a recorded request is a few levels)."""


def _depth(data: Any) -> int:
    """How deeply ``data`` nests lists and dicts (without recursion)."""
    deepest = 0
    stack = [(data, 1)]
    while stack:
        node, level = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            break
        stack.extend((child, level + 1) for child in children)
    return deepest


def load_cassette(path: str | Path) -> Cassette:
    """Read and validate a cassette file; :class:`CassetteError` says what is wrong with a bad one."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CassetteError(f"{path}: no such cassette file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise CassetteError(f"{path}: cannot read the cassette: {error}") from None
    try:
        data = json.loads(text, parse_constant=_reject_constant, parse_float=_finite)
    except RecursionError:
        raise CassetteError(f"{path}: not a valid nbagent cassette: nested too deeply") from None
    except json.JSONDecodeError as error:
        raise CassetteError(f"{path}: not JSON: {error.msg} at line {error.lineno} column {error.colno}") from None
    except ValueError as error:
        raise CassetteError(f"{path}: not JSON: {error}") from None
    if not isinstance(data, dict) or data.get("format") != CASSETTE_FORMAT:
        raise CassetteError(f'{path}: not an nbagent cassette (no "format": "{CASSETTE_FORMAT}")')
    if _depth(data) > MAX_DEPTH:
        raise CassetteError(f"{path}: not a valid nbagent cassette: nested more than {MAX_DEPTH} levels deep")
    if data.get("version") != CASSETTE_VERSION:
        raise CassetteError(
            f"{path}: cassette version {data.get('version')!r} is not supported (this nbagent reads {CASSETTE_VERSION})"
        )
    try:
        return Cassette.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in e['loc']) or 'file'}: {e['msg']}" for e in error.errors()[:3]
        )
        more = f" (and {error.error_count() - 3} more)" if error.error_count() > 3 else ""
        raise CassetteError(f"{path}: not a valid nbagent cassette: {problems}{more}") from None


def _error_class(name: str) -> type[ModelError]:
    """The error class a cassette names: one of nbagent's model errors (looked up among them as data,
    never as an attribute of a module), else ``ModelError``."""
    return _ERROR_CLASSES.get(name, ModelError)


_ERROR_CLASSES: dict[str, type[ModelError]] = {
    cls.__name__: cls
    for cls in (*vars(base).values(), CassetteMismatchError, CassetteExhaustedError)
    if isinstance(cls, type) and issubclass(cls, ModelError)
}


@dataclass(frozen=True)
class _RecordingCheckpoint:
    """What :meth:`RecordingChatCompletionClient.restore` puts back: the inner client's checkpoint, the usage."""

    client: RecordingChatCompletionClient
    inner: object
    total_usage: RequestUsage
    actual_usage: RequestUsage


class RecordingChatCompletionClient(ChatCompletionClient):
    """Passes every call to ``inner`` and records it to ``path`` (rewritten after each call).

    Streamed pieces are kept with their time since the call started; a call that fails with a
    :class:`ModelError` is recorded as that error; a cancelled call is not recorded. ``secrets``
    adds values to mask besides the inner client's key, the keys in the environment and anything
    that looks like a token.
    """

    def __init__(self, inner: ChatCompletionClient, path: str | Path, *, secrets: Sequence[str] = ()) -> None:
        super().__init__()
        where = "RecordingChatCompletionClient"
        check.instance(where, "inner", inner, ChatCompletionClient, "a ChatCompletionClient (the model to record)")
        check.instance(where, "path", path, (str, os.PathLike), "a file path (str or Path)")
        for index, secret in enumerate(check.sequence(where, "secrets", secrets, "a list of str")):
            check.string(where, f"secrets[{index}]", secret)
        self.inner = inner
        self.path = Path(path)
        self.model_info = inner.model_info
        self.provider = inner.provider
        self._secrets = known_secrets([*secrets, *inner.secrets])
        self._cassette = Cassette(
            format=CASSETTE_FORMAT,
            version=CASSETTE_VERSION,
            model=inner.model_name,
            provider=inner.provider,
            model_info=redact_data(dict(inner.model_info), self._secrets),
            recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
            interactions=[],
        )
        self._write()

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def interactions(self) -> list[Interaction]:
        return list(self._cassette.interactions)

    def __repr__(self) -> str:
        return f"RecordingChatCompletionClient({self.inner!r}, path={str(self.path)!r})"

    def checkpoint(self) -> object | None:
        """The inner client's checkpoint (a replay script's position...) and this client's usage
        counters; ``None`` if the inner client keeps no state (a real model). The calls already
        recorded stay in the cassette: they happened."""
        inner = self.inner.checkpoint()
        if inner is None:
            return None
        return _RecordingCheckpoint(self, inner, self._total_usage, self._actual_usage)

    def restore(self, checkpoint: object | None) -> None:
        """Rewind the inner client (and the usage counters) to a :meth:`checkpoint` of this client."""
        if checkpoint is None:
            self.inner.restore(None)
            return
        if not isinstance(checkpoint, _RecordingCheckpoint) or checkpoint.client is not self:
            raise TypeError("restore() takes a checkpoint() of this same RecordingChatCompletionClient")
        self.inner.restore(checkpoint.inner)
        self._total_usage, self._actual_usage = checkpoint.total_usage, checkpoint.actual_usage

    def _to_config(self) -> BaseModel:
        raise TypeError(
            "RecordingChatCompletionClient is not written to a component config: loading one would start a "
            "new recording over the cassette. Dump the model it records, recording.inner.dump_component(), or "
            "replay the cassette with CassetteChatCompletionClient(path)"
        )

    def _write(self) -> None:
        # the one secret rule: also the secrets of the process's other clients (an answer may echo them)
        data = redact_data(self._cassette.model_dump(mode="json"), process_secrets(self._secrets))
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text(json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8")
        os.replace(temporary, self.path)

    def _record(
        self,
        request: dict[str, Any],
        stream: bool,
        started: float,
        chunks: list[RecordedChunk],
        result: CreateResult | None,
        error: ModelError | None,
    ) -> None:
        recorded_error = None
        if error is not None:
            recorded_error = RecordedError(type=type(error).__name__, message=str(error), status=error.status)
        self._cassette.interactions.append(
            Interaction(
                request=request,
                stream=stream,
                duration_s=time.perf_counter() - started,
                chunks=chunks,
                result=result,
                error=recorded_error,
            )
        )
        self._write()
        if result is not None:
            self._count_usage(result.usage, actual=True)

    async def complete(
        self, request: ModelRequest, cancellation_token: CancellationToken | None = None
    ) -> CreateResult:
        record = request_record(request, self._secrets)
        started = time.perf_counter()
        try:
            result = await self.inner.complete(request, cancellation_token)
        except ModelError as error:
            self._record(record, False, started, [], None, error)
            raise
        self._record(record, False, started, [], result, None)
        return result

    async def complete_stream(
        self,
        request: ModelRequest,
        cancellation_token: CancellationToken | None = None,
        stream: ModelStream | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        record = request_record(request, self._secrets)
        started = time.perf_counter()
        chunks: list[RecordedChunk] = []
        result: CreateResult | None = None
        inner = self.inner.complete_stream(request, cancellation_token, stream)
        try:
            async for item in inner:
                if isinstance(item, str):
                    chunks.append(RecordedChunk(t=time.perf_counter() - started, text=item))
                else:
                    result = item
                yield item
        except ModelError as error:
            self._record(record, True, started, chunks, None, error)
            raise
        finally:
            await inner.aclose()
        if result is None:
            raise ModelError(f"the stream of {self.inner.model_name} ended without a result", model=self.model_name)
        self._record(record, True, started, chunks, result, None)

    async def close(self) -> None:
        await self.inner.close()


class CassetteChatCompletionClientConfig(BaseModel):
    path: str
    pace: bool = False
    check_requests: bool = True


class CassetteChatCompletionClient(ChatCompletionClient):
    """Replays a cassette's calls in order; each request must be the recorded one.

    ``pace=True`` waits as long as the recording did (before each streamed piece and before each
    result); otherwise everything comes at once. A recorded error is raised again. A request that
    differs raises :class:`CassetteMismatchError` naming the call and the first difference;
    running past the end raises :class:`CassetteExhaustedError`. ``check_requests=False`` serves
    the answers whatever is asked. A ``[REDACTED]`` secret in the recording matches any value.
    """

    component_config_schema = CassetteChatCompletionClientConfig
    component_provider_override = "nbagent.CassetteChatCompletionClient"

    def __init__(self, path: str | Path, *, pace: bool = False, check_requests: bool = True) -> None:
        super().__init__()
        where = "CassetteChatCompletionClient"
        check.instance(where, "path", path, (str, os.PathLike), "a cassette file path (str or Path)")
        check.boolean(where, "pace", pace)
        check.boolean(where, "check_requests", check_requests)
        self.path = Path(path)
        self.cassette = load_cassette(self.path)
        self.model_info = ModelInfo(**self.cassette.model_info)  # type: ignore[typeddict-item]
        self.provider = self.cassette.provider
        self.pace = pace
        self.check_requests = check_requests
        self._index = 0

    @property
    def model_name(self) -> str:
        return self.cassette.model

    def _to_config(self) -> CassetteChatCompletionClientConfig:
        return CassetteChatCompletionClientConfig(
            path=str(self.path), pace=self.pace, check_requests=self.check_requests
        )

    @classmethod
    def _from_config(cls, config: CassetteChatCompletionClientConfig) -> Self:
        return cls(config.path, pace=config.pace, check_requests=config.check_requests)

    @property
    def remaining(self) -> int:
        """How many recorded calls are left."""
        return len(self.cassette.interactions) - self._index

    def reset(self) -> None:
        """Start again from the first recorded call."""
        self._index = 0

    def __repr__(self) -> str:
        return (
            f"CassetteChatCompletionClient({str(self.path)!r}, model={self.model_name!r}, remaining={self.remaining})"
        )

    def checkpoint(self) -> CassetteCheckpoint:
        """The next call's position and the usage counters, for :meth:`restore`."""
        return CassetteCheckpoint(self, self._index, self._total_usage, self._actual_usage)

    def restore(self, checkpoint: object | None) -> None:
        """Go back (or forward) to a :meth:`checkpoint` of this client: the next call is the one it was at."""
        if not isinstance(checkpoint, CassetteCheckpoint) or checkpoint.client is not self:
            raise TypeError("restore() takes a checkpoint() of this same CassetteChatCompletionClient")
        self._index = checkpoint.index
        self._total_usage, self._actual_usage = checkpoint.total_usage, checkpoint.actual_usage

    def _next(self, request: ModelRequest) -> Interaction:
        number = self._index + 1
        if self._index >= len(self.cassette.interactions):
            raise CassetteExhaustedError(
                f"cassette {self.path.name}: call #{number} asked for, but only "
                f"{len(self.cassette.interactions)} were recorded (call reset() to start again)",
                model=self.model_name,
            )
        interaction = self.cassette.interactions[self._index]
        if self.check_requests:
            difference = first_difference(interaction.request, request_record(request, process_secrets()))
            if difference is not None:
                raise CassetteMismatchError(
                    f"cassette {self.path.name}: request #{number} differs from the recording: {difference}",
                    model=self.model_name,
                )
        self._index += 1
        return interaction

    def _outcome(self, interaction: Interaction) -> CreateResult:
        if interaction.error is not None:
            raise _error_class(interaction.error.type)(
                interaction.error.message, status=interaction.error.status, model=self.model_name
            )
        assert interaction.result is not None
        self._count_usage(interaction.result.usage, actual=False)
        return interaction.result

    async def complete(
        self, request: ModelRequest, cancellation_token: CancellationToken | None = None
    ) -> CreateResult:
        interaction = self._next(request)
        if self.pace:
            await guarded(asyncio.sleep(interaction.duration_s), cancellation_token)
        return self._outcome(interaction)

    async def complete_stream(
        self,
        request: ModelRequest,
        cancellation_token: CancellationToken | None = None,
        stream: ModelStream | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        interaction = self._next(request)
        started = time.perf_counter()
        chunks = interaction.chunks
        if not interaction.stream and interaction.result is not None and isinstance(interaction.result.content, str):
            text = interaction.result.content
            chunks = [RecordedChunk(t=interaction.duration_s, text=text)] if text else []
        for chunk in chunks:
            if self.pace and (wait := chunk.t - (time.perf_counter() - started)) > 0:
                await guarded(asyncio.sleep(wait), cancellation_token)
            yield chunk.text
        if self.pace and (wait := interaction.duration_s - (time.perf_counter() - started)) > 0:
            await guarded(asyncio.sleep(wait), cancellation_token)
        yield self._outcome(interaction)


@dataclass(frozen=True)
class CassetteCheckpoint:
    """Where a :class:`CassetteChatCompletionClient` was: see :meth:`CassetteChatCompletionClient.checkpoint`."""

    client: CassetteChatCompletionClient
    index: int
    total_usage: RequestUsage
    actual_usage: RequestUsage


__all__ = [
    "CASSETTE_FORMAT",
    "CassetteChatCompletionClient",
    "CassetteError",
    "CassetteExhaustedError",
    "CassetteMismatchError",
    "RecordingChatCompletionClient",
    "load_cassette",
]
