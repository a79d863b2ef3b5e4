"""The text of recorded items as the frames show it: always through the trace's redactor.

Redaction happens when rows become frames: every string that reaches a DataFrame, and so every
export, goes through the trace's :data:`~nbagent.redact.Redactor` first (by default
:class:`~nbagent.redact.DefaultRedactor`: API keys, bearer tokens and ``Authorization`` values are
masked, also when a key is split over several streamed chunks, see :func:`redact_chunks`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..messages import BaseAgentEvent, BaseChatMessage, FunctionCall, ToolCallExecutionEvent, ToolCallRequestEvent
from ..redact import DefaultRedactor, Redactor, redact_data


def optional_text(value: str | None, red: Redactor) -> str | None:
    """``value`` redacted (``None`` stays ``None``)."""
    return None if value is None else red(value)


def arguments_text(raw: str, red: Redactor) -> str:
    """A call's argument text, redacted; values of secret-named keys masked too (then re-serialised)."""
    if isinstance(red, DefaultRedactor):
        try:
            value = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):  # not JSON, or nested deeper than the decoder goes
            return red(raw)
        masked = redact_data(value, red.secrets)
        if masked != value:
            return red(json.dumps(masked, ensure_ascii=False))
    return red(raw)


def calls_text(calls: Sequence[FunctionCall], red: Redactor) -> str:
    """Tool calls as ``name(arguments)`` lines, redacted."""
    return "\n".join(f"{red(call.name)}({arguments_text(call.arguments, red)})" for call in calls)


def event_text(item: BaseAgentEvent | BaseChatMessage, red: Redactor) -> str:
    """An event's or a message's text (tool calls as :func:`calls_text`; the caller redacts the rest)."""
    if type(item) is ToolCallRequestEvent:
        return calls_text(item.content, red)
    if type(item) is ToolCallExecutionEvent:
        return "\n".join(result.content for result in item.content)
    return item.to_text()


def _redact_json(value: Any, red: Redactor) -> Any:
    if isinstance(value, str):
        return red(value)
    if isinstance(value, dict):
        return {key: _redact_json(item, red) for key, item in value.items()}
    if isinstance(value, list):
        return [_redact_json(item, red) for item in value]
    return value


def parse_arguments(raw: str, red: Redactor) -> Any:
    """Tool arguments as parsed JSON with every string redacted; the raw text if it is not JSON."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except (json.JSONDecodeError, RecursionError):  # not JSON, or nested deeper than the decoder goes
        return red(raw)
    return redacted_value(value, red)


def redacted_value(value: Any, red: Redactor) -> Any:
    """JSON-like ``value`` with every string redacted (by the default redactor, values of secret-named
    keys masked too)."""
    if isinstance(red, DefaultRedactor):
        value = redact_data(value, red.secrets)
    return _redact_json(value, red)


def redact_chunks(texts: list[str | None], chunks_of: Mapping[str | None, list[int]], red: Redactor) -> None:
    """Redact streamed chunks message by message, so a key split over chunks is caught too.

    ``chunks_of`` gives, per message, the positions of its chunks in ``texts``. Each chunk is redacted
    alone; if the redacted chunks do not join to the redacted message (a secret spans chunks), the
    whole redacted message goes to the first chunk and the others become empty, so the chunks still
    join to the message.
    """
    for indices in chunks_of.values():
        pieces = [texts[i] or "" for i in indices]
        joined = "".join(pieces)
        whole = red(joined)
        if whole == joined:
            continue
        pieces = [red(piece) for piece in pieces]
        if "".join(pieces) != whole:  # a secret spans chunks (or one chunk alone masks only its part)
            pieces = [whole] + [""] * (len(pieces) - 1)
        for i, piece in zip(indices, pieces):
            texts[i] = piece
