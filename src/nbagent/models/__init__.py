"""Model clients: the protocol, the offline replay model, and the OpenAI-compatible client."""

from typing import TYPE_CHECKING

from .._imports import lazy_names
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
from .default import default_model
from .family import ModelFamily
from .info import validate_model_info
from .openai import OpenAIChatCompletionClient
from .replay import ReplayChatCompletionClient, ReplayExhaustedError

if TYPE_CHECKING:  # loaded on first use (LOADED_ON_FIRST_USE)
    from .azure import AzureOpenAIChatCompletionClient
    from .cassette import (
        CassetteChatCompletionClient,
        CassetteError,
        CassetteExhaustedError,
        CassetteMismatchError,
        RecordingChatCompletionClient,
    )

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

LOADED_ON_FIRST_USE = {
    "AzureOpenAIChatCompletionClient": ".azure",
    **dict.fromkeys(
        (
            "CassetteChatCompletionClient",
            "CassetteError",
            "CassetteExhaustedError",
            "CassetteMismatchError",
            "RecordingChatCompletionClient",
        ),
        ".cassette",
    ),
}
"""What a first run does not need (Azure's client, the cassettes): the module of each, loaded when first read."""

if not TYPE_CHECKING:  # hidden from type checkers: a misspelt name is "no attribute", not ``object``
    __getattr__, __dir__ = lazy_names(__name__, LOADED_ON_FIRST_USE)
