"""The protocol every model client follows, its capabilities, and its errors."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from pydantic import BaseModel

from ..cancellation import CancellationToken
from ..messages import CreateResult, LLMMessage, RequestUsage
from ..tools import ToolSchema

ToolChoice = Literal["auto", "required", "none"] | str


class ModelInfo(TypedDict, total=False):
    """What a model can do; the agent checks it before offering tools or asking for JSON."""

    vision: bool
    function_calling: bool
    json_output: bool
    structured_output: bool
    family: str


@dataclass(frozen=True)
class ModelRequest:
    """What one call sent to the model: the messages, tools, tool_choice and output format.

    ``messages`` is a list, or in a trace's records a ``recording.SentMessages`` that reads like one.
    """

    messages: Sequence[LLMMessage]
    tools: list[ToolSchema]
    tool_choice: ToolChoice
    json_output: bool | type[BaseModel] | None


class ModelError(RuntimeError):
    """A model call failed; ``status`` is the HTTP status when there was one."""

    def __init__(self, message: str, *, status: int | None = None, model: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.model = model


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


class ChatCompletionClient(ABC):
    """Turns LLM messages (and tool schemas) into a :class:`CreateResult`, at once or streamed."""

    model_info: ModelInfo
    provider: str = "unknown"
    """Who serves the model as this client knows it, OpenTelemetry's ``gen_ai.provider.name``: the
    trace records it with every LLM call."""
    _secrets: Sequence[str] = ()
    """Backing store of :attr:`secrets`; a client that holds credentials sets it in ``__init__``."""

    def __init__(self) -> None:
        self._total_usage = RequestUsage()
        self._actual_usage = RequestUsage()

    @abstractmethod
    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[ToolSchema] = (),
        tool_choice: ToolChoice = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult: ...

    @abstractmethod
    def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[ToolSchema] = (),
        tool_choice: ToolChoice = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> AsyncIterator[str | CreateResult]:
        """Text pieces as they come, then the :class:`CreateResult` last."""

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

    async def close(self) -> None:
        """Release connections; nothing by default."""
