"""``ModelInfo``: what a model can do, as AutoGen's ``ModelInfo`` says it, and its check."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from typing_extensions import TypedDict

__all__ = ["ModelInfo", "validate_model_info"]


class ModelInfo(TypedDict, total=False):
    """What a model can do (AutoGen's ``ModelInfo``); the agent checks it before offering tools or images.

    A ``typing_extensions.TypedDict``, as AutoGen's is, so that pydantic takes it as a field type on
    every Python nbagent supports (``class Settings(BaseModel): info: ModelInfo``). Every key is
    optional here: a client fills the ones not given from what it knows of the model.
    """

    vision: bool
    """Whether the model reads images; without it the agent sends an image as the text ``<image>``."""
    function_calling: bool
    json_output: bool
    """JSON mode (``json_output=True``), not structured output."""
    structured_output: bool
    """Answers that follow a JSON schema (``output_content_type``)."""
    family: str
    """A :class:`~nbagent.models.family.ModelFamily` constant (``ModelFamily.GPT_4O``...) or any string."""
    multiple_system_messages: bool | None
    """Whether the model accepts several system messages that are not next to each other."""


_REQUIRED = ("vision", "function_calling", "json_output", "family")


def validate_model_info(model_info: Mapping[str, Any]) -> None:
    """AutoGen's check of a complete ``ModelInfo``: a ``ValueError`` naming the first missing required
    key (``vision``, ``function_calling``, ``json_output``, ``family``), a ``UserWarning`` when
    ``structured_output`` is missing. nbagent's clients do not need it (they fill missing keys)."""
    if not isinstance(model_info, Mapping):
        raise TypeError(f"validate_model_info: model_info must be a ModelInfo dict, got {type(model_info).__name__}")
    for key in _REQUIRED:
        if key not in model_info:
            raise ValueError(
                f"Missing required field '{key}' in ModelInfo. Starting in v0.4.7, the required fields are enforced."
            )
    if "structured_output" not in model_info:
        warnings.warn(
            "Missing required field 'structured_output' in ModelInfo. "
            "This field will be required in a future version of AutoGen.",
            UserWarning,
            stacklevel=2,
        )
