"""Model clients: the protocol, the offline replay model, and the OpenAI-compatible client."""

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
    ModelTimeoutError,
)
from .openai import OpenAIChatCompletionClient
from .replay import ReplayChatCompletionClient, ReplayExhaustedError

__all__ = [
    "ChatCompletionClient",
    "ModelAuthenticationError",
    "ModelBadRequestError",
    "ModelConnectionError",
    "ModelError",
    "ModelInfo",
    "ModelNotFoundError",
    "ModelRateLimitError",
    "ModelRequest",
    "ModelResponseError",
    "ModelServerError",
    "ModelTimeoutError",
    "OpenAIChatCompletionClient",
    "ReplayChatCompletionClient",
    "ReplayExhaustedError",
]
