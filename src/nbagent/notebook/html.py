"""Safe HTML for everything a model or a tool says.

``widgets.HTML`` does not sanitise: an ``<img onerror=...>`` in its value runs in JupyterLab. So
every untrusted string goes through :func:`escape` (or through :func:`markdown_html`, which renders
Markdown with raw HTML disabled and then cleans the result with an nh3 allow-list) before it
becomes HTML. These helpers return plain strings and import no widget code, so the live view, the
step-by-step widget and the static (nbconvert) fallback share them.

CSS classes (stable, tests assert on them): ``nba-event`` on every fragment plus one kind class
(``nba-user``, ``nba-text``, ``nba-thought``, ``nba-memory``, ``nba-tool-card``, ``nba-tool-group``,
``nba-handoff``, ``nba-final``, ``nba-step``); ``data-*`` attributes carry the values
(``data-tool-name``, ``data-call-id``, ``data-state``, ``data-target``, ``data-step``).
"""

from __future__ import annotations

import html as _html
import json
from collections.abc import Mapping, Sequence
from typing import Any

import nh3
from markdown_it import MarkdownIt
from pydantic import BaseModel

from ..messages import (
    BaseAgentEvent,
    BaseChatMessage,
    FunctionCall,
    FunctionExecutionResult,
    HandoffMessage,
    MemoryQueryEvent,
    RequestUsage,
    StructuredMessage,
    TextMessage,
    ThoughtEvent,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
    ToolCallSummaryMessage,
)
from ..records import MOVES

PREVIEW_CHARS = 800
"""How much of a long value the view shows before "show all"."""
MAX_CHARS = 20_000
"""The most "show all" reveals; the rest stays in the trace."""

_ALLOWED_TAGS = {
    "a", "p", "br", "hr", "em", "strong", "b", "i", "s", "del", "code", "pre", "blockquote",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6",
    "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
_ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"style"}, "td": {"style"}}
_URL_SCHEMES = {"http", "https", "mailto"}
_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(["table", "strikethrough"])

STYLE = """<style>
.nba-view{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:13px;line-height:1.45}
.nba-event{margin:4px 0;padding:6px 8px;border-radius:6px;border-left:4px solid #bbb;background:rgba(127,127,127,.06)}
.nba-event pre{white-space:pre-wrap;word-break:break-word;margin:2px 0;font-size:12px}
.nba-user{border-left-color:#4a7bd0}
.nba-text,.nba-final{border-left-color:#2e9d5b}
.nba-stream{display:block !important}
.nba-stream .widget-html,.nba-stream .widget-html>.widget-html-content{display:inline;margin:0;height:auto;line-height:1.45}
.nba-stream-text{white-space:pre-wrap;word-break:break-word;font-family:var(--jp-code-font-family,monospace);font-size:12px}
.nba-thought{border-left-color:#999;color:#666}
.nba-memory{border-left-color:#9b59b6}
.nba-tool-group{border-left-color:#d98b1c;display:flex;flex-wrap:wrap;gap:6px}
.nba-tool-card{border:1px solid rgba(127,127,127,.35);border-left:4px solid #d98b1c;min-width:220px;flex:1 1 260px}
.nba-tool-card[data-state=error],.nba-tool-card[data-state=cancelled]{border-left-color:#c0392b}
.nba-tool-card[data-state=ok]{border-left-color:#2e9d5b}
.nba-handoff{border-left-color:#16a085;font-weight:600}
.nba-error{border-left-color:#c0392b;color:#c0392b}
.nba-step{display:inline-block;font-size:10px;font-weight:600;padding:0 5px;margin-right:6px;border-radius:8px;background:#e4e8f0;color:#334}
.nba-label{font-weight:600;margin-right:6px}
.nba-muted{color:#777;font-size:11px}
.nba-footer{font-size:12px;color:#555}
.nba-footer span{margin-right:14px}
.nba-table{border-collapse:collapse}.nba-table td,.nba-table th{border:1px solid #ccc;padding:2px 6px;text-align:left}
</style>"""


def escape(value: object) -> str:
    """``value`` as text, escaped for HTML content and attribute values."""
    return _html.escape(value if isinstance(value, str) else str(value), quote=True)


def sanitize(fragment: str) -> str:
    """Clean an HTML fragment with the allow-list: no scripts, handlers, styles or foreign URLs."""
    return nh3.clean(
        fragment,
        tags=_ALLOWED_TAGS,
        attributes=_ALLOWED_ATTRIBUTES,
        url_schemes=_URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        filter_style_properties={"text-align"},
    )


def markdown_html(text: str) -> str:
    """Markdown rendered to HTML (raw HTML in the source stays text), then sanitised."""
    return sanitize(_markdown.render(text))


def truncate(text: str, limit: int = PREVIEW_CHARS) -> tuple[str, bool]:
    """The first ``limit`` characters of ``text`` and whether anything was cut."""
    if len(text) <= limit:
        return text, False
    return text[:limit], True


def value_html(text: str, *, limit: int = PREVIEW_CHARS, max_chars: int = MAX_CHARS, css: str = "nba-value") -> str:
    """``text`` escaped in a ``<pre>``; past ``limit`` a "show all" ``<details>`` reveals up to ``max_chars``."""
    head, cut = truncate(text, limit)
    if not cut:
        return f'<pre class="{css}">{escape(text)}</pre>'
    full, capped = truncate(text, max_chars)
    note = f" ({len(text) - max_chars:,} more characters in the trace)" if capped else ""
    return (
        f'<pre class="{css} nba-preview">{escape(head)}…</pre>'
        f'<details class="nba-show-all"><summary>show all ({len(text):,} characters){note}</summary>'
        f'<pre class="{css}">{escape(full)}</pre></details>'
    )


def pretty_arguments(arguments: str) -> str:
    """A tool call's JSON arguments indented for reading; invalid JSON is returned as it is."""
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return arguments


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def step_badge(move: str | None = None, step: int | None = None) -> str:
    """A small badge naming the STEP (and move) that produced an item."""
    if move is not None and move in MOVES:
        info = MOVES[move]
        return (
            f'<span class="nba-step" data-step="{info.step}" data-move="{escape(move)}" '
            f'title="{escape(info.title)}">STEP {info.step}</span>'
        )
    if step is not None:
        return f'<span class="nba-step" data-step="{step}">STEP {step}</span>'
    return ""


def _block(kind: str, body: str, *, badge: str = "", attrs: str = "", label: str = "") -> str:
    head = f'<span class="nba-label">{escape(label)}</span>' if label else ""
    return f'<div class="nba-event {kind}"{attrs}>{badge}{head}{body}</div>'


def user_html(message: BaseChatMessage, badge: str = "") -> str:
    return _block("nba-user", value_html(message.to_text()), badge=badge, label=f"{message.source}")


def thought_html(event: ThoughtEvent, badge: str = "") -> str:
    """The model's reasoning, collapsed until clicked."""
    return (
        f'<details class="nba-event nba-thought"><summary>{badge}<span class="nba-label">thought</span>'
        f'<span class="nba-muted">{len(event.content):,} characters</span></summary>'
        f"{value_html(event.content)}</details>"
    )


def memory_html(event: MemoryQueryEvent, badge: str = "") -> str:
    items = "".join(
        f'<li><span class="nba-muted">{escape(item.mime_type)}</span> {value_html(item.to_text(), limit=300)}</li>'
        for item in event.content
    )
    return _block(
        "nba-memory",
        f"<ul>{items}</ul>",
        badge=badge,
        attrs=f' data-count="{len(event.content)}"',
        label=f"memory: {len(event.content)} hit{'s' if len(event.content) != 1 else ''}",
    )


def tool_card_html(
    call: FunctionCall,
    result: FunctionExecutionResult | None = None,
    duration_s: float | None = None,
    *,
    cancelled: bool = False,
) -> str:
    """One tool call: name, pretty arguments, then running / its result or error and duration."""
    if result is None:
        state = "cancelled" if cancelled else "running"
        outcome = f'<div class="nba-tool-status nba-muted">{"cancelled" if cancelled else "running…"}</div>'
    else:
        state = "error" if result.is_error else "ok"
        outcome = (
            f'<div class="nba-tool-result" data-state="{state}">'
            f'<span class="nba-label">{"error" if result.is_error else "result"}</span>'
            f'<span class="nba-duration nba-muted">{escape(format_duration(duration_s))}</span>'
            f"{value_html(result.content)}</div>"
        )
    return (
        f'<div class="nba-event nba-tool-card" data-tool-name="{escape(call.name)}" '
        f'data-call-id="{escape(call.id)}" data-state="{state}">'
        f'<span class="nba-muted">tool </span><span class="nba-label">{escape(call.name)}</span>'
        f"{value_html(pretty_arguments(call.arguments), limit=400, css='nba-tool-args')}{outcome}</div>"
    )


def tool_group_html(cards: Sequence[str], badge: str = "") -> str:
    """Tool cards of one batch side by side (a parallel batch when more than one)."""
    return f'<div class="nba-event nba-tool-group" data-count="{len(cards)}">{badge}{"".join(cards)}</div>'


def handoff_html(message: HandoffMessage, badge: str = "") -> str:
    return _block(
        "nba-handoff",
        f'<span class="nba-handoff-target">→ {escape(message.target)}</span>{value_html(message.content, limit=300)}',
        badge=badge,
        attrs=f' data-target="{escape(message.target)}"',
        label="handoff",
    )


def object_table_html(obj: BaseModel | Mapping[str, Any]) -> str:
    """A structured object as a two-column table (field, value), every value escaped."""
    data = obj.model_dump(mode="json") if isinstance(obj, BaseModel) else dict(obj)
    rows = "".join(
        f"<tr><th>{escape(key)}</th><td>{value_html(_cell_text(value), limit=300)}</td></tr>"
        for key, value in data.items()
    )
    return f'<table class="nba-table">{rows}</table>'


def _cell_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def final_html(message: BaseChatMessage, badge: str = "") -> str:
    """The run's answer: Markdown text, a structured object's table, a tool summary, or a handoff."""
    if isinstance(message, HandoffMessage):
        return handoff_html(message, badge)
    if isinstance(message, StructuredMessage):
        body = object_table_html(message.content)
        kind = "structured"
    elif isinstance(message, ToolCallSummaryMessage):
        items = "".join(
            f'<li><span class="nba-label">{escape(call.name)}</span>{value_html(result.content, limit=300)}</li>'
            for call, result in zip(message.tool_calls, message.results)
        )
        body = f'<ul class="nba-summary">{items}</ul>' if items else value_html(message.content)
        kind = "summary"
    else:
        body = f'<div class="nba-markdown">{markdown_html(message.to_text())}</div>'
        kind = "text"
    return _block(
        "nba-final",
        body,
        badge=badge,
        attrs=f' data-kind="{kind}" data-type="{escape(_type_name(message))}"',
        label=f"{message.source} · answer",
    )


def stream_segment_html(escaped: str) -> str:
    """Streamed text still arriving, already escaped by the caller (the hot path); not yet Markdown."""
    return f'<span class="nba-stream-text">{escaped}</span>'


def error_html(text: str) -> str:
    return _block("nba-error", value_html(text), label="error")


def footer_html(usage: RequestUsage, llm_calls: int, tool_calls: int, elapsed_s: float | None, status: str = "") -> str:
    """Totals of a run; each number is in a ``span`` with a ``data-metric`` name."""
    tokens = usage.prompt_tokens + usage.completion_tokens
    parts: list[tuple[str, str, object]] = [
        ("tokens", f"{tokens:,} tokens", tokens),
        ("prompt_tokens", f"{usage.prompt_tokens:,} prompt", usage.prompt_tokens),
        ("completion_tokens", f"{usage.completion_tokens:,} completion", usage.completion_tokens),
        ("llm_calls", f"{llm_calls} LLM call{'s' if llm_calls != 1 else ''}", llm_calls),
        ("tool_calls", f"{tool_calls} tool call{'s' if tool_calls != 1 else ''}", tool_calls),
    ]
    if elapsed_s is not None:
        parts.append(("elapsed", f"{elapsed_s:.2f} s", f"{elapsed_s:.3f}"))
    spans = "".join(f'<span data-metric="{name}" data-value="{value}">{text}</span>' for name, text, value in parts)
    state = f'<span class="nba-status" data-metric="status" data-value="{escape(status)}">{escape(status)}</span>'
    return f'<div class="nba-footer">{spans}{state if status else ""}</div>'


def event_html(item: BaseAgentEvent | BaseChatMessage, badge: str = "") -> str:
    """Any event or chat message as a safe HTML fragment with its own look."""
    if isinstance(item, ThoughtEvent):
        return thought_html(item, badge)
    if isinstance(item, MemoryQueryEvent):
        return memory_html(item, badge)
    if isinstance(item, ToolCallRequestEvent):
        return tool_group_html([tool_card_html(call) for call in item.content], badge)
    if isinstance(item, ToolCallExecutionEvent):
        return _block(
            "nba-tool-results",
            "".join(
                f'<div data-call-id="{escape(r.call_id)}" data-state="{"error" if r.is_error else "ok"}">'
                f'<span class="nba-label">{escape(r.name)}</span>{value_html(r.content)}</div>'
                for r in item.content
            ),
            badge=badge,
            label="tool results",
        )
    if isinstance(item, (HandoffMessage, StructuredMessage, ToolCallSummaryMessage)):
        return final_html(item, badge)
    if isinstance(item, TextMessage) and item.source == "user":
        return user_html(item, badge)
    if isinstance(item, TextMessage):
        return final_html(item, badge)
    if isinstance(item, BaseChatMessage):
        return user_html(item, badge)
    return _block("nba-other", value_html(item.to_text()), badge=badge, label=_type_name(item))


def _type_name(item: BaseAgentEvent | BaseChatMessage) -> str:
    """The ``type`` string every concrete message and event declares."""
    return item.type
