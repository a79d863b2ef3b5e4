"""One dispatch from a run item to its HTML (:func:`to_html`) and its terminal line (:func:`to_text`).

A run item is anything ``agent.iter()`` yields: the events and chat messages of
:mod:`nbagent.messages`, the records of :mod:`nbagent.records` (``Move``, ``LLMCall``,
``ToolExecution``, ``RunStarted``, ``RunFinished``), ``Response``, and a ``str`` (a piece of
streamed text). Both are :func:`functools.singledispatch` functions keyed by the item's type, so a
new event type is shown by registering one function here::

    @to_html.register
    def _(item: MyEvent, options: Options = PLAIN) -> Markup:
        return block("nba-my-event", value(item.content), badge=options.badge, title="my event")

Its terminal line comes for free (the event's type and ``to_text()``); register a :func:`to_text`
function only to say more. Unknown events and messages (another library's) fall back to their
base class's renderer.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from functools import singledispatch
from typing import Any

from ..language import words
from ..messages import (
    BaseAgentEvent,
    BaseChatMessage,
    CodeExecutionEvent,
    CodeGenerationEvent,
    FunctionCall,
    FunctionExecutionResult,
    HandoffMessage,
    Image,
    MemoryQueryEvent,
    ModelClientStreamingChunkEvent,
    MultiModalMessage,
    RequestUsage,
    Response,
    SelectorEvent,
    SelectSpeakerEvent,
    StopMessage,
    StructuredMessage,
    TextMessage,
    ThoughtEvent,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
    ToolCallSummaryMessage,
    UserInputRequestedEvent,
)
from ..printable import printable
from ..records import Intervention, LLMCall, Move, MoveName, RunFinished, RunStarted, ToolExecution
from ..redact import mask
from .blocks import (
    ANSWER_CHARS,
    block,
    error_block,
    expand_toggle,
    format_duration,
    label,
    muted,
    object_table,
    step_badge,
    stream_segment,
    tool_card,
    tool_group,
    truncate,
    value,
)
from .markdown import markdown
from .markup import EMPTY, Markup, concat, el, escape

__all__ = ["PLAIN", "Options", "heading", "memory_skipped_line", "short", "to_html", "to_text"]


@dataclass(frozen=True, slots=True)
class Options:
    """Where an item is shown: the move it came in (its STEP badge) and its number there.

    ``number`` is an ``LLMCall``'s number in its run, or a ``Move``'s index in a walk. ``now`` (a
    ``perf_counter`` time) draws a call still running as of then: how long it has run, and how
    many chunks it has streamed.
    """

    move: MoveName | None = None
    number: int | None = None
    now: float | None = None
    paused: bool = False
    """A step-by-step walk is paused here: a call not yet sent is drawn paused, not waiting."""

    @property
    def badge(self) -> Markup:
        return step_badge(self.move) if self.move is not None else EMPTY


PLAIN = Options()


# --------------------------------------------------------------------------- HTML


@singledispatch
def to_html(item: object, options: Options = PLAIN) -> Markup:
    """The item as a safe HTML fragment with its own look (every text in it escaped)."""
    return block("nba-other", value(str(item)), badge=options.badge, title=type(item).__name__)


@to_html.register
def _agent_event(item: BaseAgentEvent, options: Options = PLAIN) -> Markup:
    return block("nba-other", value(item.to_text()), badge=options.badge, title=item.type)


@to_html.register
def _chat_message(item: BaseChatMessage, options: Options = PLAIN) -> Markup:
    """A message that is not an answer: the task, or another agent's message."""
    return block("nba-user", value(item.to_text()), badge=options.badge, title=item.source)


@to_html.register
def _text_message(item: TextMessage, options: Options = PLAIN) -> Markup:
    return _chat_message(item, options) if item.source == "user" else _answer(item, options)


LONG_ANSWER = 1500
"""Characters of an answer from which its box (of bounded height) gets an "expand" toggle."""
TALL_ANSWER = 24
"""Lines of an answer from which its box (32em high at most) may fill it: it gets a resize grip, as a
long one does (a short answer's box has none)."""


def _answer(message: BaseChatMessage, options: Options, kind: str = "text", *body: Markup) -> Markup:
    """The run's answer: Markdown text, a structured object's table or a tool summary."""
    if not body:
        text = message.to_text()
        toggle = expand_toggle() if len(text) >= LONG_ANSWER else None
        # Capped as a tool output is (ANSWER_CHARS): a saved notebook stays small; the trace keeps it whole.
        shown, capped = truncate(text, ANSWER_CHARS)
        rest = len(text) - ANSWER_CHARS
        note = el("div", f"… {rest:,} more characters in the trace", class_="nba-muted nba-capped") if capped else None
        tall = len(text) >= LONG_ANSWER or text.count("\n") >= TALL_ANSWER
        box = el("div", markdown(shown), class_="nba-markdown nba-resizable" if tall else "nba-markdown")
        body = (toggle, box, note)  # type: ignore[assignment]
    return block(
        "nba-final",
        *body,
        badge=options.badge,
        title=f"{message.source} · answer",
        data_kind=kind,
        data_type=message.type,
    )


RASTER_IMAGES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp"})
"""The image types shown as images (what ``el()`` lets into a ``data:`` URI); others get a placeholder."""
MAX_IMAGE_CHARS = 2_000_000
"""The base64 length (about 1.5 MB of image) up to which an image is shown inline; a bigger one gets a
placeholder, so that a saved notebook stays small (the trace keeps the image)."""
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def image(picture: Image) -> Markup:
    """An image of a message as ``<img>`` (a raster type, base64 only, not too big), else a placeholder."""
    data = picture.data
    if picture.mime_type not in RASTER_IMAGES or len(data) > MAX_IMAGE_CHARS or not _BASE64.fullmatch(data):
        return el("div", muted(f"[image {picture.mime_type}, {len(data) * 3 // 4:,} bytes, not shown]"))
    return el("img", src=picture.data_uri, alt="image", class_="nba-image")


@to_html.register
def _multimodal(item: MultiModalMessage, options: Options = PLAIN) -> Markup:
    """Text and images: each text as it is, each image shown."""
    parts = [image(part) if isinstance(part, Image) else value(part) for part in item.content]
    if item.source == "user":
        return block("nba-user", *parts, badge=options.badge, title=item.source)
    return _answer(item, options, "multimodal", *parts)


@to_html.register
def _stop(item: StopMessage, options: Options = PLAIN) -> Markup:
    return block("nba-other", value(item.content), badge=options.badge, title=f"{item.source} · stop")


@to_html.register
def _user_input_requested(item: UserInputRequestedEvent, options: Options = PLAIN) -> Markup:
    return block("nba-other", muted("waiting for the user's input"), badge=options.badge, title=item.source)


@to_html.register
def _select_speaker(item: SelectSpeakerEvent, options: Options = PLAIN) -> Markup:
    title = f"{item.source} · next speaker"
    return block("nba-other", value(", ".join(item.content)), badge=options.badge, title=title)


@to_html.register
def _selector(item: SelectorEvent, options: Options = PLAIN) -> Markup:
    return block("nba-other", value(item.content), badge=options.badge, title=f"{item.source} · selector")


@to_html.register
def _code_generation(item: CodeGenerationEvent, options: Options = PLAIN) -> Markup:
    blocks = [el("pre", code.code, class_="nba-value", data_language=code.language) for code in item.code_blocks]
    title = f"{item.source} · code, attempt {item.retry_attempt + 1}"
    return block("nba-other", *(blocks or [value(item.content)]), badge=options.badge, title=title)


@to_html.register
def _code_execution(item: CodeExecutionEvent, options: Options = PLAIN) -> Markup:
    title = f"{item.source} · code run, exit code {item.result.exit_code}"
    return block("nba-other", value(item.result.output), badge=options.badge, title=title)


@to_html.register(StructuredMessage)
def _structured(item: StructuredMessage[Any], options: Options = PLAIN) -> Markup:
    return _answer(item, options, "structured", object_table(item.content))


@to_html.register
def _summary(item: ToolCallSummaryMessage, options: Options = PLAIN) -> Markup:
    items = [
        el("li", label(call.name), value(result.content, limit=300))
        for call, result in zip(item.tool_calls, item.results)
    ]
    body = el("ul", items, class_="nba-summary") if items else value(item.content)
    return _answer(item, options, "summary", body)


@to_html.register
def _handoff(item: HandoffMessage, options: Options = PLAIN) -> Markup:
    return block(
        "nba-handoff",
        el("span", "→ ", item.target, class_="nba-handoff-target"),
        value(item.content, limit=300),
        badge=options.badge,
        title="handoff",
        data_target=item.target,
    )


@to_html.register
def _thought(item: ThoughtEvent, options: Options = PLAIN) -> Markup:
    """The model's reasoning, collapsed until clicked."""
    summary = el("summary", options.badge, label("thought"), muted(f"{len(item.content):,} characters"))
    return el("details", summary, value(item.content), class_="nba-event nba-thought")


@to_html.register
def _memory(item: MemoryQueryEvent, options: Options = PLAIN) -> Markup:
    hits = [el("li", muted(hit.mime_type), " ", value(hit.to_text(), limit=300)) for hit in item.content]
    return block(
        "nba-memory",
        el("ul", hits),
        badge=options.badge,
        title=f"memory: {len(hits)} hit{'s' if len(hits) != 1 else ''}",
        data_count=len(hits),
    )


@to_html.register
def _tool_request(item: ToolCallRequestEvent, options: Options = PLAIN) -> Markup:
    return tool_group((tool_card(call) for call in item.content), options.badge)


@to_html.register
def _tool_results(item: ToolCallExecutionEvent, options: Options = PLAIN) -> Markup:
    results = [
        el("div", label(r.name), value(r.content), data_call_id=r.call_id, data_state="error" if r.is_error else "ok")
        for r in item.content
    ]
    return block("nba-tool-results", results, badge=options.badge, title=words("tool results"))


@to_html.register
def _chunk(item: ModelClientStreamingChunkEvent, options: Options = PLAIN) -> Markup:
    return stream_segment(escape(item.content))


@to_html.register
def _text_piece(item: str, options: Options = PLAIN) -> Markup:
    """A piece of streamed text (a run without chunk events)."""
    return stream_segment(escape(item))


@to_html.register
def _response(item: Response, options: Options = PLAIN) -> Markup:
    return to_html(item.chat_message, options)


@to_html.register
def _move(item: Move, options: Options = PLAIN) -> Markup:
    """The heading of a move: its STEP, title and method, where it is in the walk, its explanation."""
    info = item.info
    # Counted from 0, as the loop counts it and the trace's moves record it (their column iteration).
    where = ""
    if item.iteration is not None:
        where = " · " + words("tool-loop iteration={iteration} ({ordinal})").format(
            iteration=item.iteration, number=item.iteration + 1, ordinal=_ordinal(item.iteration + 1)
        )
    index = " " + words("move {number}").format(number=options.number) if options.number is not None else ""
    head = el(
        "div",
        f"STEP {info.step} · {info.title} ",
        el("code", info.method),
        " ",
        muted(f"{index}{where}") if index or where else None,
        class_="nba-stepper-head",
        data_step=info.step,
        data_move=item.name,
        data_index=options.number,
    )
    return head + el("p", info.explanation, class_="nba-stepper-explanation")


def _ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


@to_html.register
def _llm_call(item: LLMCall, options: Options = PLAIN) -> Markup:
    """The line of one LLM call: running, then its duration and tokens (or its error)."""
    if item.cancelled:
        state, detail = "cancelled", f"cancelled after {format_duration(item.duration_s)}"
    elif item.error is not None:
        state, detail = "error", f"failed after {format_duration(item.duration_s)}: {item.error}"
    elif item.duration_s is None and options.paused:
        state, detail = "paused", "paused before it is sent: the next step sends it"
    elif item.duration_s is None:
        now = time.perf_counter() if options.now is None else options.now
        elapsed = f"{max(now - item.start_perf, 0.0):.1f} s"
        if item.chunks:
            ttft = item.first_token_s
            since = f", first token after {format_duration(ttft)}" if ttft is not None else ""
            state, detail = "streaming", f"streaming · {len(item.chunks):,} chunks · {elapsed}{since}"
        else:
            state, detail = "running", f"waiting for the model… {elapsed}"
    else:
        usage = item.result.usage if item.result is not None else RequestUsage()
        first = f", first token {format_duration(item.first_token_s)}" if item.first_token_s is not None else ""
        state = "ok"
        detail = (
            f"{format_duration(item.duration_s)}{first}, {usage.prompt_tokens:,} + {usage.completion_tokens:,} tokens"
        )
    number = "" if options.number is None else f" {options.number}"
    return el(
        "div",
        options.badge,
        label(f"LLM call{number} · {item.model} · {item.purpose}"),
        " ",
        muted(detail),
        class_="nba-event nba-llm-call",
        data_state=state,
        data_purpose=item.purpose,
    )


@to_html.register
def _tool_execution(item: ToolExecution, options: Options = PLAIN) -> Markup:
    return tool_card(item.call, item.result, item.duration_s)


@to_html.register
def _run_started(item: RunStarted, options: Options = PLAIN) -> Markup:
    """The task: its messages, added to the context at STEP 1."""
    task = Options("add_messages")
    return concat(to_html(message, task) for message in item.task)


@to_html.register
def _run_finished(item: RunFinished, options: Options = PLAIN) -> Markup:
    if item.error is not None:
        return error_block(item.error)
    return el("div", f"{item.agent} · {item.status}", class_="nba-run-end nba-muted", data_status=item.status)


@to_html.register
def _intervention(item: Intervention, options: Options = PLAIN) -> Markup:
    """A change a walk made before a move (a fork's edit): what was changed."""
    return el(
        "div",
        el("strong", words("Changed before move {move} ({kind}): ").format(move=item.move, kind=item.kind)),
        item.change,
        class_="nba-event nba-intervention",
        data_kind=item.kind,
    )


# --------------------------------------------------------------------------- text


def short(text: str, width: int = 100) -> str:
    """``text`` on one line (white space collapsed, secrets masked, controls shown: :func:`printable`), cut
    to ``width`` characters."""
    text = printable(" ".join(mask(text).split()))
    return text if len(text) <= width else text[: width - 3] + "..."


RULE = "-" * 10


def heading(title: str) -> str:
    """The line above an item's whole text in the console (AutoGen's ``Console`` draws the same)."""
    return f"{RULE} {printable(title)} {RULE}"


@singledispatch
def to_text(item: object, full: bool = False) -> str | None:
    """The terminal text of a run item; ``None`` for items not printed (pieces of streamed text).

    By default one line (the demo's); ``full=True`` gives the console's text (:func:`nbagent.Console`,
    ``show`` outside a notebook): a heading naming the item's type and source, then its whole text.
    Every text from outside (a model's, a tool's, a server's, a file's) is secrets-masked and
    :func:`~nbagent.printable.printable`: its terminal controls, bidi and zero-width marks are shown,
    never obeyed (a function registered for a new type does the same).
    """
    return None


def _whole(item: BaseAgentEvent | BaseChatMessage, body: str) -> str:
    return f"{heading(f'{type(item).__name__} ({item.source})')}\n{printable(mask(body))}"


@to_text.register
def _event_line(item: BaseAgentEvent | BaseChatMessage, full: bool = False) -> str | None:
    if full:
        return _whole(item, item.to_text())
    return f"   {type(item).__name__}  {short(item.to_text())}"


@to_text.register
def _chunk_text(item: ModelClientStreamingChunkEvent, full: bool = False) -> str | None:
    return printable(mask(item.content)) if full else _event_line(item)


@to_text.register
def _tool_request_line(item: ToolCallRequestEvent, full: bool = False) -> str | None:
    return _content_line(item, item.content, full)


@to_text.register
def _tool_results_line(item: ToolCallExecutionEvent, full: bool = False) -> str | None:
    return _content_line(item, item.content, full)


@to_text.register
def _memory_line(item: MemoryQueryEvent, full: bool = False) -> str | None:
    if full:
        return _whole(item, "\n".join(hit.to_text() for hit in item.content))
    return f"   {type(item).__name__}  {short('; '.join(hit.to_text() for hit in item.content))}"


def _content_line(
    item: BaseAgentEvent, content: list[FunctionCall] | list[FunctionExecutionResult], full: bool = False
) -> str | None:
    parts = [
        c.to_text()
        if isinstance(c, FunctionCall)
        else f"{c.name} -> {'error: ' if c.is_error and full else ''}{c.content}"
        for c in content
    ]
    if full:
        return _whole(item, "\n".join(parts))
    return f"   {type(item).__name__}  {short('; '.join(parts))}"


@to_text.register
def _response_line(item: Response, full: bool = False) -> str | None:
    message = item.chat_message
    if full:  # on_messages_stream's last item: the answer, under its agent's name (as AutoGen's Console)
        return f"{heading(message.source)}\n{printable(mask(message.to_text()))}"
    return f"   Response: {type(message).__name__}  {short(message.to_text())}"


@to_text.register
def _intervention_line(item: Intervention, full: bool = False) -> str | None:
    change = printable(mask(item.change)) if full else short(item.change)
    return f"   Changed before move {item.move} ({item.kind})  {change}"


@to_text.register
def _move_line(item: Move, full: bool = False) -> str | None:
    info = item.info
    return f"-- STEP {info.step}: {info.title}  [{info.method}]"


def memory_skipped_line() -> str:
    """The text line of STEP 2 in a run that has no memory to query (the loop makes no move for it)."""
    from ..records import MOVES

    return f"-- STEP 2: {MOVES['memory'].title}  skipped: the agent has no memory (memory=None)"


@to_text.register
def _llm_call_line(item: LLMCall, full: bool = False) -> str | None:
    return f"   LLM call ({item.purpose}), {len(item.request.messages)} messages, {len(item.request.tools)} tools"


@to_text.register
def _tool_execution_line(item: ToolExecution, full: bool = False) -> str | None:
    return f"   tool call {printable(mask(item.call.to_text()))}"


@to_text.register
def _run_started_line(item: RunStarted, full: bool = False) -> str | None:
    return f"run started  agent={printable(item.agent)}  task={short(' | '.join(m.to_text() for m in item.task))}"


@to_text.register
def _run_finished_line(item: RunFinished, full: bool = False) -> str | None:
    text = f"run finished  status={item.status}"
    return text if item.error is None or not full else f"{text}  error={printable(mask(item.error))}"
