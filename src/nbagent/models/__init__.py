"""Model clients: the protocol, the offline replay model, and the OpenAI-compatible client."""

from .azure import AzureOpenAIChatCompletionClient
from .base import (
    ChatCompletionClient,
    ModelAuthenticationError,
    ModelBadRequestError,
    ModelConnectionError,
    ModelError,
    ModelInfo,
    ModelNotFoundError,
    ModelRateLimitError,
    ModelRequest,
    ModelResponseError,
    ModelServerError,
    ModelStream,
    ModelTimeoutError,
    UnreportedUsage,
)
from .cassette import (
    CassetteChatCompletionClient,
    CassetteError,
    CassetteExhaustedError,
    CassetteMismatchError,
    RecordingChatCompletionClient,
)
from .default import default_model
from .family import ModelFamily
from .info import validate_model_info
from .openai import OpenAIChatCompletionClient
from .replay import ReplayChatCompletionClient, ReplayExhaustedError

__all__ = [
    "AzureOpenAIChatCompletionClient",
    "CassetteChatCompletionClient",
    "CassetteError",
    "CassetteExhaustedError",
    "CassetteMismatchError",
    "ChatCompletionClient",
    "ModelAuthenticationError",
    "ModelBadRequestError",
    "ModelConnectionError",
    "ModelError",
    "ModelFamily",
    "ModelInfo",
    "ModelNotFoundError",
    "ModelRateLimitError",
    "ModelRequest",
    "ModelResponseError",
    "ModelServerError",
    "ModelStream",
    "ModelTimeoutError",
    "OpenAIChatCompletionClient",
    "RecordingChatCompletionClient",
    "ReplayChatCompletionClient",
    "ReplayExhaustedError",
    "UnreportedUsage",
    "default_model",
    "validate_model_info",
]
