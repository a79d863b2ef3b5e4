"""Two recorded runs side by side, aligned move by move: :class:`Comparison`.

Each side is a run of a trace (live or loaded). Its moves (the ``Move`` rows of ``events_df``; a walk
paused before a move shows it, without items yet) are aligned with the other side's by their names
(:mod:`difflib`: a fork and its parent
align on the moves they share, then on the same moves made differently, and a move only one side
made stands alone). An aligned move *diverges* when the two sides differ in it: the move itself, its
events (their kinds and texts, interventions included), its tool calls and results, or the context
after it. :attr:`Comparison.frame` has one row per aligned move; :meth:`Comparison.html` draws the
same rows through :mod:`nbagent.render` (the widget and the static copy a saved notebook keeps).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from ..language import words
from ..records import MOVES, MoveName
from ..render import STYLE, Markup, el
from .replay import ReplaySource

if TYPE_CHECKING:
    import pandas as pd

    from .base import TraceFrames

_RECORDS = {"Move", "LLMCall", "ToolExecution", "RunStarted", "RunFinished", "ModelClientStreamingChunkEvent"}
_ENDS = {"text_exit", "reflect", "summarize", "handoff_check"}  # the moves a run can end with its answer
_MODEL_MOVES = {"call_llm", "next_llm_call", "reflect"}


@dataclass
class MoveView:
    """One side's move: what it did, as the frames recorded it."""

    index: int  # from 1, as StepResult.index
    name: str
    step: int | None
    iteration: int | None
    events: list[tuple[str, str]] = field(default_factory=list)  # (kind, text)
    tool_calls: list[tuple[str, str, str, bool]] = field(default_factory=list)  # (name, arguments, result, error)
    tokens: int | None = None
    seconds: float | None = None
    """The move's own time: its model calls' and tool calls' durations (None: it called neither). Not the
    time to the next move, which counts the time a walk sat paused."""
    context: list[str] = field(default_factory=list)  # "[kind] text" of each message after the move

    @property
    def key(self) -> tuple[str, int | None]:
        return (self.name, self.iteration)

    def signature(self) -> tuple[Any, ...]:
        return (self.key, self.events, self.tool_calls, self.context)


_EVENT_COLUMNS = ("run_id", "seq", "kind", "move", "step", "iteration", "text")
_CALL_COLUMNS = ("run_id", "prompt_tokens", "completion_tokens", "duration_s")
_TOOL_COLUMNS = ("run_id", "tool_name", "arguments", "result", "is_error", "duration_s")


class _Columns:
    """A table's columns as Python lists (missing values ``None``) and, per run, the positions of its rows."""

    def __init__(self, frame: pd.DataFrame, columns: Sequence[str]) -> None:
        self.values = {name: frame[name].to_numpy(dtype=object, na_value=None).tolist() for name in columns}
        runs = frame["run_id"].astype("object")
        self.rows: dict[str, Sequence[int]] = {
            str(run): rows for run, rows in runs.groupby(runs, sort=False).indices.items()
        }

    def of(self, run_id: str) -> tuple[Sequence[int], dict[str, list[Any]]]:
        return self.rows.get(run_id, ()), self.values


def moves_of(trace: ReplaySource, run_id: str, *, by_items: bool = False) -> list[MoveView]:
    """The moves of run ``run_id`` of ``trace``, each with its events, tool calls, tokens, time and context.

    ``by_items``: a run recorded without its moves (an AutoGen agent's, ``nbagent.autogen``) is cut at
    each model call and each event instead (``llm_call``, ``ToolCallRequestEvent``...), without context.
    """
    tables = []
    for frame, columns in (
        (trace.events_df(), _EVENT_COLUMNS),
        (trace.llm_calls_df(), _CALL_COLUMNS),
        (trace.tool_calls_df(), _TOOL_COLUMNS),
    ):
        tables.append(_Columns(frame[frame["run_id"].astype("object") == run_id], columns))
    events, calls, tools = tables
    moves, ends = _moves(events.of(run_id), calls.of(run_id), tools.of(run_id), by_items)
    if not ends:
        raise KeyError(f"no run {run_id!r} in this trace")
    if not by_items:
        _add_contexts(trace, run_id, moves, ends)
    return moves


def moves_of_runs(trace: TraceFrames, run_ids: Sequence[str], *, figures: bool = True) -> dict[str, list[MoveView]]:
    """The moves of runs ``run_ids`` of ``trace`` read in bulk (one read of each table, only these runs'
    rows), as :func:`moves_of` makes them but without the context after each move (read run by run, it
    would cost a read per move): what each move did, its tokens and time (``figures=False``: neither,
    the model calls' table is not read; where runs diverge does not depend on them). A run with no rows:
    no moves."""
    ids = list(dict.fromkeys(str(run) for run in run_ids))
    events = _Columns(trace.table("events", _EVENT_COLUMNS, ids), _EVENT_COLUMNS)
    calls_frame = trace.table("llm_calls", _CALL_COLUMNS, ids) if figures else _no_rows(_CALL_COLUMNS)
    calls = _Columns(calls_frame, _CALL_COLUMNS)
    tools = _Columns(trace.table("tool_calls", _TOOL_COLUMNS, ids), _TOOL_COLUMNS)
    return {run: _moves(events.of(run), calls.of(run), tools.of(run), False)[0] for run in ids}


Rows = tuple[Sequence[int], dict[str, list[Any]]]


def _no_rows(columns: Sequence[str]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame({name: pd.Series([], dtype="object") for name in columns})


def _moves(events: Rows, calls: Rows, tools: Rows, by_items: bool) -> tuple[list[MoveView], list[int]]:
    """A run's moves from its rows (the positions of its rows in each table's columns), and the seq of each
    move's last item (none: the run has no events)."""
    rows, ev = events
    call_rows, call = calls
    tool_rows, tool = tools
    moves: list[MoveView] = []
    tools_s: dict[int, float] = {}  # per move: its tool calls' time (they run together: the longest)
    ends: list[int] = []  # per move: the seq of its last item
    n_calls = n_tools = 0
    for i in rows:
        kind = str(ev["kind"][i])
        if by_items and kind == "Move":
            continue
        starts = kind == "Move" or (by_items and kind not in _RECORDS) or (by_items and kind == "LLMCall")
        if starts:
            if moves:
                ends.append(int(ev["seq"][i]) - 1)
            step = None if by_items or ev["step"][i] is None else int(ev["step"][i])
            iteration = None if by_items or ev["iteration"][i] is None else int(ev["iteration"][i])
            name = ("llm_call" if kind == "LLMCall" else kind) if by_items else str(ev["move"][i])
            moves.append(MoveView(len(moves) + 1, name, step, iteration))
            if kind == "Move":
                continue
        if not moves:
            continue
        move = moves[-1]
        if kind == "LLMCall" and n_calls < len(call_rows):
            c = call_rows[n_calls]
            n_calls += 1
            used = [value for value in (call["prompt_tokens"][c], call["completion_tokens"][c]) if value is not None]
            if used:
                move.tokens = (move.tokens or 0) + sum(int(value) for value in used)
            move.seconds = _plus(move.seconds, call["duration_s"][c])  # the model calls of a move: one after another
        elif kind == "ToolExecution" and n_tools < len(tool_rows):
            t = tool_rows[n_tools]
            n_tools += 1
            move.tool_calls.append(
                (
                    str(tool["tool_name"][t]),
                    _text(tool["arguments"][t]),
                    _text(tool["result"][t]),
                    _flag(tool["is_error"][t]),
                )
            )
            tools_s[id(move)] = max(tools_s.get(id(move), 0.0), _seconds(tool["duration_s"][t]) or 0.0)  # concurrent
        elif kind not in _RECORDS:
            move.events.append((kind, _text(ev["text"][i])))
    if len(rows):
        ends.append(int(ev["seq"][rows[-1]]))
    for move in moves:  # a move's own time: its model calls and tools, never a pause of its walk after it
        if id(move) in tools_s:
            move.seconds = (move.seconds or 0.0) + tools_s[id(move)]
    return moves, ends


def _add_contexts(trace: ReplaySource, run_id: str, moves: list[MoveView], ends: list[int]) -> None:
    """Each move's context after it: the trace's context at the move's last item (the last move: the run's end)."""
    for index, move in enumerate(moves):
        try:
            frame = trace.context_df(run_id=run_id, seq=None if index + 1 == len(moves) else ends[index])
        except LookupError:  # no context recorded
            continue
        move.context = [f"[{kind}] {_text(text)}" for kind, text in zip(frame["kind"], frame["text"])]


def _seconds(value: object) -> float | None:
    """A recorded duration, or None when missing."""
    import pandas as pd

    return None if value is None or value is pd.NA or pd.isna(value) else float(value)  # type: ignore[arg-type]


def _plus(total: float | None, value: object) -> float | None:
    """``total`` plus the recorded duration ``value`` (``total`` when it is missing)."""
    seconds = _seconds(value)
    return total if seconds is None else (total or 0.0) + seconds


def _flag(value: object) -> bool:
    import pandas as pd

    return value is not None and value is not pd.NA and bool(value)


def _text(value: object) -> str:
    import pandas as pd

    if value is None or (not isinstance(value, (list, dict)) and pd.isna(value)):
        return ""
    return str(value)


@dataclass
class Row:
    """One aligned move: a move of each side (``None`` where only the other side made one)."""

    left: MoveView | None
    right: MoveView | None

    @property
    def diverged(self) -> bool:
        if self.left is None or self.right is None:
            return True
        return self.left.signature() != self.right.signature()

    def differences(self) -> list[str]:
        """What differs: ``move``, ``events``, ``tool_calls``, ``context`` (or ``only_left``/``only_right``)."""
        if self.left is None:
            return ["only_right"]
        if self.right is None:
            return ["only_left"]
        a, b = self.left, self.right
        found = []
        if a.key != b.key:
            found.append("move")
        if a.events != b.events:
            found.append("events")
        if a.tool_calls != b.tool_calls:
            found.append("tool_calls")
        if a.context != b.context:
            found.append("context")
        return found

    def context_diff(self) -> str:
        """The context after the move, left against right, as ``difflib.ndiff`` lines that differ."""
        left = [] if self.left is None else self.left.context
        right = [] if self.right is None else self.right.context
        return "\n".join(line for line in difflib.ndiff(left, right) if line[:1] in "+-")


def align(left: Sequence[MoveView], right: Sequence[MoveView]) -> list[Row]:
    """The moves of two runs aligned by name (a move made at another iteration aligns, and diverges): the
    moves they begin with by the same names side by side, then the rest as :mod:`difflib` matches it."""
    shared = _shared_names(left, right)
    rows = [Row(left[k], right[k]) for k in range(shared)]
    left, right = left[shared:], right[shared:]
    matcher = difflib.SequenceMatcher(None, [m.name for m in left], [m.name for m in right], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows.extend(Row(left[i1 + k], right[j1 + k]) for k in range(i2 - i1))
            continue
        a, b = list(left[i1:i2]), list(right[j1:j2])
        for k in range(max(len(a), len(b))):  # a replaced stretch: side by side, the longer one alone at its end
            rows.append(Row(a[k] if k < len(a) else None, b[k] if k < len(b) else None))
    return rows


def _shared_names(left: Sequence[MoveView], right: Sequence[MoveView]) -> int:
    """How many moves the two runs begin with by the same names."""
    shared = 0
    for a, b in zip(left, right):
        if a.name != b.name:
            break
        shared += 1
    return shared


def first_parting(left: Sequence[MoveView], right: Sequence[MoveView]) -> tuple[int, Row] | None:
    """Where two runs first part: the position (from 1) and the row of the first diverged move of
    ``align(left, right)``, found without aligning what follows it; ``None``: they never do."""
    shared = _shared_names(left, right)
    for position in range(shared):
        row = Row(left[position], right[position])
        if row.diverged:
            return position + 1, row
    if shared == len(left) == len(right):
        return None
    return shared + 1, align(left[shared:], right[shared:])[0]  # its first row differs in its move


class Comparison:
    """Two runs aligned move by move (see the module's text); ``frame`` and ``html()`` show it."""

    def __init__(
        self, left: tuple[ReplaySource, str], right: tuple[ReplaySource, str], labels: tuple[str, str] = ("A", "B")
    ) -> None:
        self.left, self.right, self.labels = left, right, labels
        self.rows: list[Row] = []
        self.refresh()

    def refresh(self) -> None:
        """Read both runs again (a walk that went on since). Runs recorded with their moves align by
        moves; when one was not (an AutoGen agent's), both are cut at each model call and event."""
        left, right = moves_of(*self.left), moves_of(*self.right)
        if not left or not right:
            left, right = moves_of(*self.left, by_items=True), moves_of(*self.right, by_items=True)
        self.rows = align(left, right)

    @property
    def first_divergence(self) -> int | None:
        """The position (from 1) of the first aligned move where the runs differ; ``None``: they never do."""
        return next((index for index, row in enumerate(self.rows, 1) if row.diverged), None)

    def sentences(self) -> list[str]:
        """What changed from one run to the other, in words a learner reads (the notebook's language): where
        they first part and how, the model calls each made, and their answers."""
        return describe(self.rows, self.labels)

    @property
    def parting(self) -> Row | None:
        """The first aligned move where the runs differ (``None``: they never do)."""
        first = self.first_divergence
        return None if first is None else self.rows[first - 1]

    @property
    def frame(self) -> pd.DataFrame:
        """One row per aligned move: each side's move, STEP, events, tool calls, tokens and seconds,
        the context diff, what differs and ``diverged``."""
        import pandas as pd

        a, b = self.labels
        records = []
        for position, row in enumerate(self.rows, 1):
            record: dict[str, Any] = {"position": position}
            for side, move in ((a, row.left), (b, row.right)):
                record[f"move_{side}"] = None if move is None else move.name
                record[f"step_{side}"] = None if move is None else move.step
                record[f"iteration_{side}"] = None if move is None else move.iteration
                record[f"events_{side}"] = None if move is None else "\n".join(f"{k}: {t}" for k, t in move.events)
                record[f"tool_calls_{side}"] = None if move is None else "\n".join(_call(c) for c in move.tool_calls)
                record[f"tokens_{side}"] = None if move is None else move.tokens
                record[f"seconds_{side}"] = None if move is None else move.seconds
                record[f"context_{side}"] = None if move is None else len(move.context)
            record["context_diff"] = row.context_diff()
            record["differences"] = ", ".join(row.differences())
            record["diverged"] = row.diverged
            records.append(record)
        frame = pd.DataFrame.from_records(records)
        if not len(frame):
            return frame
        ints = [c for c in frame.columns if c.split("_")[0] in ("step", "iteration", "tokens", "context")]
        ints = [c for c in ints if c != "context_diff"]
        return frame.astype({c: "Int64" for c in ints} | {"diverged": "boolean"})

    def html(self, *, style: bool = True) -> str:
        """The comparison as HTML through the one renderer: a row per aligned move, diverged ones marked
        (``style``: with the stylesheet; a view holding it gives it once)."""
        a, b = self.labels
        first = self.first_divergence
        summary = (
            words("the runs never diverge")
            if first is None
            else words("the runs diverge at aligned move {position}").format(position=first)
        )
        head = el(
            "tr",
            el("th", "#"),
            el("th", words("{side}: move").format(side=a)),
            el("th", words("{side}: what it did").format(side=a)),
            el("th", words("{side}: move").format(side=b)),
            el("th", words("{side}: what it did").format(side=b)),
            el("th", words("tokens")),
            el(
                "th",
                words("model + tool seconds"),
                title=words("each move's own time: its model calls and its tool calls"),
            ),
        )
        body = [head]
        for position, row in enumerate(self.rows, 1):
            diverged = row.diverged
            marker = el("strong", "≠ ") if diverged else ""
            cells = [el("td", marker, str(position))]
            for move in (row.left, row.right):
                if move is None:
                    cells += [el("td", el("span", words("(no move)"), class_="nba-muted")), el("td", "")]
                else:
                    title = f"STEP {move.step} {move.name}" + ("" if move.iteration is None else f" #{move.iteration}")
                    cells += [el("td", title), el("td", _did(move))]
            cells.append(el("td", f"{_figure(row.left, 'tokens')} / {_figure(row.right, 'tokens')}"))
            cells.append(el("td", f"{_figure(row.left, 'seconds')} / {_figure(row.right, 'seconds')}"))
            body.append(el("tr", *cells, data_diverged="true" if diverged else "false"))
            if diverged and row.differences() and row.context_diff():
                detail = el("details", el("summary", words("context diff")), el("pre", row.context_diff()))
                body.append(el("tr", el("td", ""), el("td", detail, colspan="6")))
        title = el(
            "b",
            words("{side}: run ").format(side=a),
            el("span", self.left[1][:8], title=self.left[1]),
            "  ·  " + words("{side}: run ").format(side=b),
            el("span", self.right[1][:8], title=self.right[1]),
        )
        table = el("table", *body, class_="nba-table nba-compare-table")
        said = el("ul", [el("li", sentence) for sentence in self.sentences()], class_="nba-compare-sentences")
        shown = el("div", title, el("div", summary, class_="nba-muted"), said, table, class_="nba-trace nba-compare")
        return str((STYLE if style else Markup("")) + shown)

    def _repr_html_(self) -> str:
        return self.html()

    def __repr__(self) -> str:
        first = self.first_divergence
        where = "never diverge" if first is None else f"diverge at aligned move {first}"
        return f"<Comparison of run {self.left[1]} and run {self.right[1]}: {len(self.rows)} aligned moves, {where}>"


def _call(call: tuple[str, str, str, bool]) -> str:
    name, arguments, result, error = call
    return f"{name}({arguments}) -> {'error: ' if error else ''}{result}"


def _did(move: MoveView) -> Markup:
    lines = [el("div", f"{kind}: {_short(text)}") for kind, text in move.events]
    lines += [el("div", _short(_call(call))) for call in move.tool_calls]
    return Markup("").join(lines)


def _short(text: str, width: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _figure(move: MoveView | None, name: str) -> str:
    value = None if move is None else getattr(move, name)
    if value is None:
        return "–"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _move_name(move: MoveView) -> str:
    info = MOVES.get(cast(MoveName, move.name))
    return f"STEP {move.step} · {info.title}" if info is not None else move.name


def _answer(moves: Sequence[MoveView]) -> str | None:
    """A run's answer (its final message's text, quoted), or ``None`` while it has not ended with one."""
    if not moves or moves[-1].name not in _ENDS:
        return None
    said = [repr(_short(text, 120)) for kind, text in moves[-1].events if kind == "Response"]
    return said[-1] if said else None


def _first_difference(position: int, row: Row, labels: tuple[str, str]) -> str:
    """How two runs part at aligned move ``position``."""
    a, b = labels
    left, right = row.left, row.right
    if left is None or right is None:
        alone, side = (right, b) if left is None else (left, a)
        assert alone is not None
        return words("At move {position} only {side} goes on: {move}.").format(
            position=position, side=side, move=_move_name(alone)
        )
    if left.key != right.key:
        return words("At move {position}, {a} goes to {left} and {b} to {right}.").format(
            position=position, a=a, b=b, left=_move_name(left), right=_move_name(right)
        )
    if left.tool_calls != right.tool_calls:
        for index in range(max(len(left.tool_calls), len(right.tool_calls))):
            one = left.tool_calls[index] if index < len(left.tool_calls) else None
            other = right.tool_calls[index] if index < len(right.tool_calls) else None
            if one == other:
                continue
            if one is None or other is None:
                extra, side = (other, b) if one is None else (one, a)
                assert extra is not None
                return words("At move {position}, {side} also runs {call}.").format(
                    position=position, side=side, call=_short(_call(extra), 120)
                )
            return words("At move {position}, {name} gives {a} {left} and {b} {right}.").format(
                position=position,
                name=one[0],
                a=a,
                b=b,
                left=_result_words(one),
                right=_result_words(other),
            )
    asked = [[text for kind, text in side.events if kind == "ToolCallRequestEvent"] for side in (left, right)]
    if asked[0] and asked[1] and asked[0] != asked[1]:
        return words("At move {position}, {a} asks for {left} and {b} for {right}.").format(
            position=position, a=a, b=b, left=_short(asked[0][0], 120), right=_short(asked[1][0], 120)
        )
    what = ", ".join(row.differences())
    return words("At move {position} ({move}) the runs differ in: {what}.").format(
        position=position, move=_move_name(left), what=what
    )


def _result_words(call: tuple[str, str, str, bool]) -> str:
    text = repr(_short(call[2], 80))
    return words("an error {text}").format(text=text) if call[3] else words("the result {text}").format(text=text)


def _changed(row: Row) -> str | None:
    """What a side was changed by at this aligned move (its ``Intervention`` events), when that is all
    that differs in it: the change that makes the runs part, said before how they part."""
    left, right = row.left, row.right
    if left is None or right is None or left.key != right.key or left.tool_calls != right.tool_calls:
        return None
    if left.context != right.context:
        return None
    one = [text for kind, text in left.events if kind != "Intervention"]
    other = [text for kind, text in right.events if kind != "Intervention"]
    changes = [text for kind, text in left.events + right.events if kind == "Intervention"]
    return "; ".join(changes) if one == other and changes else None


def describe(rows: Sequence[Row], labels: tuple[str, str]) -> list[str]:
    """Sentences saying what changed between the two sides of ``rows`` (see :meth:`Comparison.sentences`)."""
    a, b = labels
    diverged = [(position, row) for position, row in enumerate(rows, 1) if row.diverged]
    if not diverged:
        return [words("{a} and {b} make the same moves with the same results.").format(a=a, b=b)]
    said = []
    for position, row in diverged:
        change = _changed(row)
        if change is None:
            said.append(_first_difference(position, row, labels))
            break
        move = row.left if row.left is not None else row.right
        assert move is not None
        said.append(
            words("At move {position} ({move}) a change was made: {change}.").format(
                position=position, move=_move_name(move), change=_short(change, 160)
            )
        )
    sides = [[row.left for row in rows if row.left is not None], [row.right for row in rows if row.right is not None]]
    calls = [sum(move.name in _MODEL_MOVES for move in side) for side in sides]
    tools = [sum(len(move.tool_calls) for move in side) for side in sides]
    if calls[0] != calls[1] or tools[0] != tools[1]:
        said.append(
            words("Model calls: {a} {n}, {b} {m}; tool calls: {a} {t}, {b} {u}.").format(
                a=a, b=b, n=calls[0], m=calls[1], t=tools[0], u=tools[1]
            )
        )
    answers = [_answer(side) for side in sides]
    for side, answer in zip((a, b), answers, strict=True):
        if answer is None:
            said.append(words("{side} has not answered yet.").format(side=side))
    if answers[0] is not None and answers[1] is not None:
        if answers[0] == answers[1]:
            said.append(words("Both end with the same answer: {answer}").format(answer=answers[0]))
        else:
            said.append(
                words("{a} answers {left}; {b} answers {right}").format(a=a, b=b, left=answers[0], right=answers[1])
            )
    return said
