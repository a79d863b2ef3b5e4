"""The building blocks of every view: values with "show all", STEP badges, event blocks, tool cards.

Each returns :class:`~nbagent.render.markup.Markup` built with :func:`~nbagent.render.markup.el`,
so every text in it is escaped. CSS classes (stable, tests assert on them): ``nba-event`` on every
block plus one kind class (``nba-user``, ``nba-text``, ``nba-thought``, ``nba-memory``,
``nba-tool-card``, ``nba-tool-group``, ``nba-handoff``, ``nba-final``, ``nba-error``); ``data-*``
attributes carry the values (``data-tool-name``, ``data-call-id``, ``data-state``, ``data-target``,
``data-step``). Colours come from the stylesheet (:mod:`nbagent.render.style`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from ..language import words
from ..messages import FunctionCall, FunctionExecutionResult, RequestUsage
from ..records import MOVES, MoveName
from ..redact import mask, redact_data
from .markup import EMPTY, Child, Markup, el, escape

__all__ = [
    "ANSWER_CHARS",
    "MAX_CHARS",
    "PREVIEW_CHARS",
    "block",
    "expand_toggle",
    "footer",
    "format_duration",
    "object_table",
    "pretty_arguments",
    "step_badge",
    "stream_head",
    "stream_segment",
    "tool_card",
    "tool_group",
    "tool_group_head",
    "truncate",
    "value",
]

PREVIEW_CHARS = 800
"""How much of a long value the views show before "show all"."""
MAX_CHARS = 20_000
"""The most "show all" reveals; the rest stays in the trace."""
ANSWER_CHARS = 10_000
"""The most of an answer the views show (about 1,600 words, in a box with "expand"); the rest stays in
the trace. A saved notebook holds a finished run's static copy, and its widget state where that is
saved: ten runs of 200 KB answers make a notebook of about 0.8 MB, not 4.8 MB."""


def truncate(text: str, limit: int = PREVIEW_CHARS) -> tuple[str, bool]:
    """The first ``limit`` characters of ``text`` and whether anything was cut."""
    if len(text) <= limit:
        return text, False
    return text[:limit], True


def value(text: str, *, limit: int = PREVIEW_CHARS, max_chars: int = MAX_CHARS, css: str = "nba-value") -> Markup:
    """``text`` in a ``<pre>``; past ``limit`` a "show all" ``<details>`` reveals up to ``max_chars``.

    Secrets are masked before the text is cut (a cut never leaves part of a key)."""
    text = mask(text)
    head, cut = truncate(text, limit)
    if not cut:
        return el("pre", text, class_=css)
    full, capped = truncate(text, max_chars)
    note = f" ({len(text) - max_chars:,} more characters in the trace)" if capped else ""
    return el("pre", head, "…", class_=f"{css} nba-preview") + el(
        "details",
        el("summary", f"show all ({len(text):,} characters){note}"),
        el("pre", full, class_=css),
        class_="nba-show-all",
    )


def pretty_arguments(arguments: str) -> str:
    """A tool call's JSON arguments indented for reading, the values of secret-named keys masked (as
    in the trace); invalid JSON is returned as it is."""
    try:
        return json.dumps(redact_data(json.loads(arguments)), indent=2, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return arguments


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def plural(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def step_badge(move: MoveName | str | None = None, step: int | None = None) -> Markup:
    """A small badge naming the STEP (and move) that produced an item."""
    if move is not None and move in MOVES:
        info = MOVES[move]
        badge = el(
            "span", f"STEP {info.step}", class_="nba-step", data_step=info.step, data_move=move, title=info.title
        )
        return badge + _SPACE
    if step is not None:
        return el("span", f"STEP {step}", class_="nba-step", data_step=step) + _SPACE
    return EMPTY


_SPACE = Markup(" ")
"""After a badge or a label: what keeps it apart from the next text where no stylesheet spaces them
(an untrusted notebook's sanitized copy, a text reader, copy and paste)."""


def label(text: str) -> Markup:
    return el("span", text, class_="nba-label") + _SPACE


def muted(text: str, **attributes: object) -> Markup:
    return el("span", text, class_="nba-muted", **attributes)


def block(kind: str, *body: Child, badge: Markup = EMPTY, title: str = "", **attributes: object) -> Markup:
    """An event block: ``<div class="nba-event <kind>">`` with its badge, a bold title and the body."""
    return el("div", badge, label(title) if title else None, *body, class_=f"nba-event {kind}", **attributes)


def tool_card(
    call: FunctionCall,
    result: FunctionExecutionResult | None = None,
    duration_s: float | None = None,
    *,
    cancelled: bool = False,
    running: bool = False,
) -> Markup:
    """One tool call: name, pretty arguments, then requested / running / its result or error and duration.

    A call is ``requested`` when the model asked for it (STEP 5's tool request) and ``running`` once
    its batch has started (the next move, the tool execution).
    """
    if result is None:
        state = "cancelled" if cancelled else "running" if running else "requested"
        text = {"cancelled": "cancelled", "running": "running…", "requested": "requested: runs at the next move"}
        outcome = el("div", words(text[state]), class_="nba-tool-status nba-muted")
    else:
        state = "error" if result.is_error else "ok"
        outcome = el(
            "div",
            label(words("error" if result.is_error else "result")),
            el("span", format_duration(duration_s), class_="nba-duration nba-muted"),
            value(result.content),
            class_="nba-tool-result",
            data_state=state,
        )
    return el(
        "div",
        muted(words("tool") + " "),
        label(call.name),
        value(pretty_arguments(call.arguments), limit=400, css="nba-tool-args"),
        outcome,
        class_="nba-event nba-tool-card",
        data_tool_name=call.name,
        data_call_id=call.id,
        data_state=state,
    )


def tool_group_head(count: int, badge: Markup = EMPTY) -> Markup:
    """The line above a batch of tool cards: its STEP badge and how many calls it holds."""
    what = words("tool call") if count == 1 else words("{count} tool calls, run in parallel").format(count=count)
    return el("div", badge, label(what), class_="nba-tool-head")


def tool_group(cards: Iterable[Markup], badge: Markup = EMPTY, **attributes: object) -> Markup:
    """Tool cards of one batch side by side under their head line (a parallel batch when more than one).

    The badge sits on the head line, not among the cards: the cards wrap onto more rows inside
    the group (``nba-tool-cards``), however many there are.
    """
    cards = list(cards)
    return el(
        "div",
        tool_group_head(len(cards), badge),
        el("div", cards, class_="nba-tool-cards"),
        class_="nba-event nba-tool-group",
        data_count=len(cards),
        **attributes,
    )


def object_table(obj: BaseModel | Mapping[str, Any]) -> Markup:
    """A structured object as a two-column table (field, value), every value escaped."""
    data = obj.model_dump(mode="json") if isinstance(obj, BaseModel) else dict(obj)
    rows = (el("tr", el("th", key), el("td", value(_cell_text(item), limit=300))) for key, item in data.items())
    return el("table", rows, class_="nba-table")


def _cell_text(item: Any) -> str:
    return item if isinstance(item, str) else json.dumps(item, ensure_ascii=False, default=str)


def expand_toggle() -> Markup:
    """A checkbox that lifts the height limit of the box it is in (CSS only: it works in a saved page too)."""
    return el("label", el("input", type="checkbox", class_="nba-expand-toggle"), "expand", class_="nba-expand")


def stream_head(badge: Markup = EMPTY, *, discarded: bool = False) -> Markup:
    """The line above text still streaming; ``discarded``: the run ended before the message was complete."""
    if discarded:
        note = el(
            "span",
            "never entered the model context: the run ended before this message was complete",
            class_="nba-muted nba-discarded-note",
        )
        return el("div", badge, label("streamed text, discarded"), note, expand_toggle(), class_="nba-stream-head")
    return el("div", badge, label("streaming"), expand_toggle(), class_="nba-stream-head")


def stream_segment(escaped: Markup) -> Markup:
    """Streamed text still arriving, escaped once by the caller as it came (the hot path); not yet
    Markdown. Secrets are masked in the whole segment again: a key split over chunks is caught too."""
    return Markup("".join((_SEGMENT_OPEN, mask(escape(escaped)), _SEGMENT_CLOSE)))


_SEGMENT_OPEN = Markup('<span class="nba-stream-text">')
_SEGMENT_CLOSE = Markup("</span>")


def streamed_chunks(chunks: list[str], badge: Markup = EMPTY) -> Markup:
    """Streamed chunks shown joined, as the text they built."""
    return block(
        "nba-text nba-streamed",
        label(f"{len(chunks)} streamed chunks"),
        value("".join(chunks)),
        badge=badge,
        data_count=len(chunks),
    )


def error_block(text: str) -> Markup:
    return block("nba-error", value(text), title="error")


def footer(
    usage: RequestUsage,
    llm_calls: int,
    tool_calls: int,
    elapsed_s: float | None,
    status: str = "",
    streaming_chunks: int | None = None,
) -> Markup:
    """Totals of a run; each number is in a ``span`` with a ``data-metric`` name.

    ``tokens`` counts the finished LLM calls; ``streaming_chunks`` (while a call streams) the
    chunks it has sent so far, shown next to them.
    """
    tokens = usage.prompt_tokens + usage.completion_tokens
    parts: list[tuple[str, str, object]] = [
        ("tokens", f"{tokens:,} tokens", tokens),
        ("prompt_tokens", f"{usage.prompt_tokens:,} prompt", usage.prompt_tokens),
        ("completion_tokens", f"{usage.completion_tokens:,} completion", usage.completion_tokens),
        ("llm_calls", plural(llm_calls, "LLM call"), llm_calls),
        ("tool_calls", plural(tool_calls, "tool call"), tool_calls),
    ]
    if streaming_chunks is not None:
        parts.insert(1, ("streaming_chunks", f"+ {plural(streaming_chunks, 'chunk')} streaming", streaming_chunks))
    if elapsed_s is not None:
        parts.append(("elapsed", f"{elapsed_s:.2f} s", f"{elapsed_s:.3f}"))
    spans = [el("span", text, class_="nba-metric", data_metric=name, data_value=number) for name, text, number in parts]
    if status:
        spans.append(el("span", status, class_="nba-metric nba-status", data_metric="status", data_value=status))
    return el("div", _SPACE.join(spans), class_="nba-footer")
