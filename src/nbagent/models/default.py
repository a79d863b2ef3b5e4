"""``default_model()``: a real model when one is configured, else an offline one, in one line."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TextIO

from ..redact import redact_config_text
from .base import ChatCompletionClient
from .openai import OpenAIChatCompletionClient
from .replay import ReplayChatCompletionClient

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
OFFLINE_ANSWER = (
    "This is nbagent's offline replay model: no OPENAI_API_KEY or NBAGENT_BASE_URL is set, so every "
    "answer is this scripted text."
)
_OFFLINE_ANSWERS = 1000


def default_model(
    model: str | None = None, *, cassette: str | Path | None = None, notice: bool = True
) -> ChatCompletionClient:
    """The model to use, from the environment.

    * ``NBAGENT_BASE_URL`` set: an OpenAI-compatible server (llama.cpp's ``llama-server``, Ollama,
      vLLM...), model ``NBAGENT_MODEL`` (or ``model``; ``llama-server`` serves the one model it
      loaded whatever the name), key ``NBAGENT_API_KEY`` if set (never ``OPENAI_API_KEY``: that key
      is OpenAI's, not the local server's). docs/servers.md says how to start ``llama-server`` with
      the SmolLM2-135M model the tests use;
    * else ``OPENAI_API_KEY`` set: OpenAI, model ``model`` / ``NBAGENT_MODEL`` / ``gpt-4o-mini``;
    * else offline: ``cassette`` replayed at its recorded pace if given, otherwise a replay model
      that answers every call with a fixed text; a one-line notice says so (``notice=False`` hides it).
    """
    name = model or os.environ.get("NBAGENT_MODEL") or None
    base_url = os.environ.get("NBAGENT_BASE_URL") or None
    if base_url is not None:
        key = os.environ.get("NBAGENT_API_KEY") or ""
        if name is None:
            raise ValueError(
                f"NBAGENT_BASE_URL is set ({redact_config_text(base_url)}) but no model: set NBAGENT_MODEL "
                "(e.g. llama3.1) or pass default_model('<model>')"
            )
        return OpenAIChatCompletionClient(name, base_url=base_url, api_key=key)
    if os.environ.get("OPENAI_API_KEY"):
        return OpenAIChatCompletionClient(name or DEFAULT_OPENAI_MODEL)
    offline: ChatCompletionClient
    if cassette is not None:
        from .cassette import CassetteChatCompletionClient  # loaded on first use: import nbagent does not need it

        offline = CassetteChatCompletionClient(cassette, pace=True)
        what = f"replaying the cassette {Path(cassette).name}"
    else:
        offline = ReplayChatCompletionClient([OFFLINE_ANSWER] * _OFFLINE_ANSWERS)
        what = "using the offline replay model (scripted answers)"
    if notice:
        print(f"nbagent: no OPENAI_API_KEY or NBAGENT_BASE_URL set, {what}.", file=_notice_stream())
    return offline


def _notice_stream() -> TextIO:
    """Where a notice goes: stderr in a terminal (apart from the program's output); in a notebook, whose
    stderr shows as an error (a pink box), stdout."""
    return sys.stdout if type(sys.stderr).__module__.startswith("ipykernel") else sys.stderr
