"""An experiment's views from its frames: the aggregate per variant and two variants compared task by task.

HTML (light and dark through the one stylesheet, every value escaped by :func:`~nbagent.render.el`,
readable where a sanitizer drops the stylesheet: plain tables) and text (a terminal's view) are drawn
from the same rows. The frames are those of :mod:`nbagent.experiment` (``summary()``, a comparison's
``stats``, ``parting`` and ``frame``); this module reads their columns and knows no experiment.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .markup import EMPTY, Markup, concat, el
from .style import STYLE

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "STATIC_ROWS",
    "comparison_head_html",
    "comparison_html",
    "comparison_text",
    "figure",
    "frame_table",
    "order_tasks",
    "parting_words",
    "summary_html",
    "summary_text",
    "task_columns",
    "task_rows_html",
]

STATIC_ROWS = 20
"""The tasks a static copy or a text view lists (the largest changes first); the widget pages through all."""
_TASK_CHARS = 80
_PARTING_WORDS = {
    "llm_answer": "the model's answer",
    "tool_choice": "the tools called",
    "tool_arguments": "a tool call's arguments",
    "tool_result": "a tool's result",
    "run_end": "one run ended",
    "other": "another move",
    "never": "never",
}


def figure(value: object, *, signed: bool = False) -> str:
    """A cell's value as text: numbers to 3 significant digits (``signed``: with ``+``), missing ``–``."""
    if value is None or value is _na() or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int) and not signed:
        return str(value)
    if isinstance(value, (int, float)) or type(value).__module__ == "numpy":
        number = float(value)  # type: ignore[arg-type]
        if math.isinf(number):
            return ("+" if signed and number > 0 else "") + ("∞" if number > 0 else "−∞")
        text = f"{number:+.3g}" if signed else f"{number:.3g}"
        return "0" if signed and number == 0 else text.replace("-", "−")
    return str(value)


def _na() -> object:
    import pandas as pd

    return pd.NA


def parting_words(code: object, move: object = None) -> str:
    """Where a pair's runs first part, in words: what differed and at which move."""
    if code is None or code is _na() or (isinstance(code, float) and math.isnan(code)):
        return "–"
    words = _PARTING_WORDS.get(str(code), str(code))
    if move is None or move is _na() or code == "never":
        return words
    return f"{words} ({move})"


def _short(text: object, limit: int = _TASK_CHARS) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def frame_table(
    frame: pd.DataFrame, *, index: str | None = None, caption: str = "", signed: Sequence[str] = ()
) -> Markup:
    """A small frame as an HTML table (its index as the first column, named ``index``), values escaped."""
    head = [el("th", index or str(frame.index.name or ""))] + [el("th", str(column)) for column in frame.columns]
    rows = [el("tr", *head)]
    for key, row in zip(frame.index, frame.itertuples(index=False)):
        cells = [el("th", str(key))]
        cells += [el("td", figure(value, signed=column in signed)) for column, value in zip(frame.columns, row)]
        rows.append(el("tr", *cells))
    parts: list[Markup] = [el("caption", caption)] if caption else []
    return el("table", *parts, *rows, class_="nba-table nba-experiment-table")


def summary_html(summary: pd.DataFrame, *, title: str = "Experiment", note: str = "", style: bool = True) -> Markup:
    """The aggregate per variant (a row each: ``summary()``'s frame) as HTML (``style``: with the stylesheet)."""
    body = [el("b", title)]
    body += [el("div", line, class_="nba-muted") for line in _notes(summary, note)]
    body.append(frame_table(summary, index="variant"))
    return (STYLE if style else EMPTY) + el("div", *body, class_="nba-trace nba-experiment")


def summary_text(summary: pd.DataFrame, *, title: str = "Experiment", note: str = "") -> str:
    """The aggregate per variant as text lines."""
    from ..printable import printable

    lines = [printable(line) for line in (title, *_notes(summary, note))]
    return "\n".join([*lines, _text_table(summary, index="variant")])


def _notes(frame: pd.DataFrame, note: str = "") -> list[str]:
    """``note`` and how ``frame`` (a summary, a comparison's statistics) counted a run that failed."""
    failed = frame.attrs.get("failed")
    return [line for line in (note, f"{failed}." if isinstance(failed, str) else "") if line]


def _stats_view(stats: pd.DataFrame) -> pd.DataFrame:
    """The statistics a person reads, one row per score: means, delta, interval, test, p-value, pairs."""
    import pandas as pd

    rows: dict[str, list[Any]] = {"kind": [], "mean a": [], "mean b": [], "delta b−a": [], "interval": []}
    rows |= {"test": [], "p-value": [], "pairs": []}
    for score, row in stats.iterrows():
        del score
        level = figure(100 * float(row["confidence"]))
        interval = f"{figure(row['ci_low'], signed=True)} … {figure(row['ci_high'], signed=True)} ({level}%)"
        pairs = f"{row['n']}" + (f" ({row['missing']} missing)" if row["missing"] else "")
        if row["kind"] == "pass/fail" and not _missing(row.get("a_only")):
            pairs += f"; only a: {row['a_only']}, only b: {row['b_only']}"
        test = str(row["test"])
        if not _missing(row.get("t_p_value")) and not math.isnan(float(row["t_p_value"])):
            test += f" (paired t: p {figure(row['t_p_value'])})"
        for name, value in (
            ("kind", row["kind"]),
            ("mean a", figure(row["mean_a"])),
            ("mean b", figure(row["mean_b"])),
            ("delta b−a", figure(row["mean_delta"], signed=True)),
            ("interval", interval),
            ("test", test),
            ("p-value", figure(row["p_value"])),
            ("pairs", pairs),
        ):
            rows[name].append(value)
    return pd.DataFrame(rows, index=pd.Index(stats.index, name="score"))


def _missing(value: object) -> bool:
    return value is None or value is _na() or (isinstance(value, float) and math.isnan(value))


def _parting_view(parting: pd.DataFrame) -> pd.DataFrame:
    view = parting[parting["pairs"] > 0][["pairs", "share"]].copy()
    view.index = [_PARTING_WORDS.get(str(code), str(code)) for code in view.index]
    view["share"] = [f"{100 * share:.0f}%" for share in view["share"]]
    return view


def task_columns(scores: Sequence[str]) -> list[tuple[str, str, bool]]:
    """The task table's columns: (frame column, header, signed)."""
    columns = [("task_id", "task id", False), ("task", "task", False)]
    for score in scores:
        columns += [(f"{score}_a", f"{score} a", False), (f"{score}_b", f"{score} b", False)]
        columns.append((f"{score}_delta", f"{score} Δ", True))
    columns += [("tokens_delta", "tokens Δ", True), ("latency_s_delta", "seconds Δ", True)]
    return [*columns, ("parting", "where the runs part", False)]


def task_rows_html(
    tasks: pd.DataFrame, scores: Sequence[str], *, sort: str | None = None, ascending: bool = True, cursor: str = ""
) -> Markup:
    """The tasks (a comparison's ``frame`` rows, in their order) as an HTML table: a row per task keyed by
    its id (``data-run``: what a click or Enter opens), headers keyed by their column (a click sorts)."""
    columns = [c for c in task_columns(scores) if c[0] in tasks.columns or c[0] == "parting"]
    head = []
    for column, header, _ in columns:
        arrow = ("▲" if ascending else "▼") if column == sort else ""
        head.append(el("th", header, arrow, data_column=column, title=f"sort by {header}"))
    rows = [el("tr", *head)]
    for record in tasks.to_dict("records"):
        cells = []
        for column, _, signed in columns:
            if column == "parting":
                text = parting_words(record.get("parting"), record.get("parting_move"))
            elif column == "task":
                text = _short(record.get("task", ""))
            else:
                text = figure(record.get(column), signed=signed)
            cells.append(el("td", text, title=str(record.get(column, "")) if column == "task" else None))
        key = str(record["task_id"])
        rows.append(el("tr", *cells, data_run=key, class_="nba-x-cursor" if key == cursor else None))
    return el("table", *rows, class_="nba-table nba-experiment-tasks")


def comparison_html(
    a: str,
    b: str,
    stats: pd.DataFrame,
    parting: pd.DataFrame | None,
    tasks: pd.DataFrame,
    scores: Sequence[str],
    *,
    sort: str | None = None,
    ascending: bool = True,
    rows: int = STATIC_ROWS,
    style: bool = True,
    total: int | None = None,
) -> Markup:
    """Variants ``a`` and ``b`` compared: the statistics per score, where the pairs part, and the tasks
    (``rows`` of them, ordered by ``sort``: default the first score's delta, the largest changes first;
    ``total``: how many tasks the comparison has, when ``tasks`` is a page of them)."""
    ordered, sort, ascending = order_tasks(tasks, scores, sort, ascending)
    shown = ordered.head(rows)
    more = len(ordered) - len(shown)
    body: list[Markup] = [
        comparison_head_html(a, b, stats, parting, len(tasks) if total is None else total),
        el("div", f"tasks by {sort} ({'ascending' if ascending else 'descending'})", class_="nba-muted"),
        task_rows_html(shown, scores, sort=sort, ascending=ascending),
    ]
    if more > 0:
        body.append(el("div", f"… {more} more tasks (the widget, or .frame, has them all)", class_="nba-muted"))
    return (STYLE if style else EMPTY) + el("div", *body, class_="nba-trace nba-experiment nba-experiment-compare")


def comparison_head_html(a: str, b: str, stats: pd.DataFrame, parting: pd.DataFrame | None, tasks: int) -> Markup:
    """The head of a comparison: its title, the statistics per score and where the pairs part (``None``:
    not read yet)."""
    where = (
        el("div", "where each pair's runs part: reading the runs…", class_="nba-muted")
        if parting is None
        else frame_table(_parting_view(parting), index="the runs first part at", caption="where each pair's runs part")
    )
    return concat(
        el("b", f"{a} vs {b}: {tasks} tasks"),
        *(
            el("div", line, class_="nba-muted")
            for line in _notes(stats, "delta = b − a; a pass/fail score counts 1 and 0")
        ),
        frame_table(_stats_view(stats), index="score"),
        where,
    )


def comparison_text(
    a: str,
    b: str,
    stats: pd.DataFrame,
    parting: pd.DataFrame,
    tasks: pd.DataFrame,
    scores: Sequence[str],
    *,
    rows: int = STATIC_ROWS,
) -> str:
    """Variants ``a`` and ``b`` compared, as text: the same rows as :func:`comparison_html` (a variant's name,
    read from a folder, control characters shown as every cell's)."""
    from ..printable import printable

    ordered, sort, ascending = order_tasks(tasks, scores, None, True)
    shown = ordered.head(rows)
    view = shown.assign(task=[_short(t, 40) for t in shown.get("task", shown["task_id"])])
    view["parting"] = [parting_words(c, m) for c, m in zip(shown["parting"], shown["parting_move"])]
    columns = [(c, h) for c, h, _ in task_columns(scores) if c in view.columns]
    table = view[[c for c, _ in columns]].set_axis([h for _, h in columns], axis=1).set_index("task id")
    lines = [
        printable(f"{a} vs {b}: {len(tasks)} tasks (delta = b − a)"),
        *_notes(stats),
        _text_table(_stats_view(stats), index="score"),
        "where each pair's runs part:",
        _text_table(_parting_view(parting), index="the runs first part at"),
        f"tasks by {sort} ({'ascending' if ascending else 'descending'}):",
        _text_table(table, index="task id"),
    ]
    if len(ordered) > len(shown):
        lines.append(f"… {len(ordered) - len(shown)} more tasks (.frame has them all)")
    return "\n".join(lines)


def order_tasks(
    tasks: pd.DataFrame, scores: Sequence[str], sort: str | None = None, ascending: bool = True
) -> tuple[pd.DataFrame, str, bool]:
    """The tasks in the order shown: by ``sort`` (default: the first score's delta, largest changes first)."""
    if sort is None or sort not in tasks.columns:
        sort = f"{scores[0]}_delta" if scores and f"{scores[0]}_delta" in tasks.columns else "task_id"
        ascending = sort == "task_id"
        if sort != "task_id":  # the largest changes first, either way
            order = tasks[sort].astype("Float64").abs().sort_values(ascending=False, na_position="last", kind="stable")
            return tasks.loc[order.index], sort, False
    return tasks.sort_values(sort, ascending=ascending, na_position="last", kind="stable"), sort, ascending


def _text_table(frame: pd.DataFrame, *, index: str) -> str:
    """A frame as aligned text columns (values as :func:`figure` writes them, control characters shown)."""
    from ..printable import printable

    header = [index, *map(str, frame.columns)]
    body = [
        [str(key), *(figure(value) for value in row)] for key, row in zip(frame.index, frame.itertuples(index=False))
    ]
    table = [[printable(cell) for cell in line] for line in [header, *body]]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in table)
