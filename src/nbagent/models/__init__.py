"""Model clients: the protocol, the offline replay model, and the OpenAI-compatible client."""

from .base import ChatCompletionClient, ModelError, ModelInfo, ModelRequest
from .replay import ReplayChatCompletionClient, ReplayExhaustedError

__all__ = [
    "ChatCompletionClient",
    "ModelError",
    "ModelInfo",
    "ModelRequest",
    "ReplayChatCompletionClient",
    "ReplayExhaustedError",
]
