"""The run explorer's table logic: filter, sort and page the runs of a trace, as pandas, no widgets.

:class:`RunTable` holds a trace's ``runs_df()`` (and which tools each run called, from
``tool_calls_df()``); :meth:`RunTable.select` applies a :class:`Filters` and a sort and gives a
:class:`Selection`: the positions of the runs kept, in order, their frame (rows of ``runs_df()``), the
pandas expression that gives that same frame (:meth:`Selection.query`, over ``runs`` and
``tool_calls``) and pages of the display table (:data:`TABLE_COLUMNS`). Masks are computed once per
filter value and sorts once per selection, so turning pages costs a slice.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, get_args

from .. import _check as check
from ..records import RunStatus
from .follow import Follower
from .schema import seconds_column

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from ..redact import Redactor
    from .base import TraceFrames
    from .store import RowStore

__all__ = [
    "SORT_KEYS",
    "TABLE_COLUMNS",
    "TOOL_ERROR",
    "TOOL_USE_COLUMNS",
    "VARIANT",
    "VARIANT_TABLE",
    "Filters",
    "RunFollower",
    "RunTable",
    "Selection",
    "Variants",
    "run_table",
    "table_columns",
    "tool_uses",
]

#: The explorer's table: column -> what it shows, in the order a reader scans it (the run id last, short).
TABLE_COLUMNS: dict[str, str] = {
    "task": "first line of the task",
    "status": "ok, error, cancelled or running; tool_error: ended ok, but a tool call gave an error",
    "error": "the error, when the run failed; else the first tool error (tool: result)",
    "tool_errors": "tool calls that gave an error result",
    "llm_calls": "model calls",
    "tool_calls": "tool calls",
    "tokens": "prompt + completion tokens",
    "latency_s": "seconds the run took",
    "started_at": "when it started",
    "agent": "agent that ran it",
    "parent": "the team run it is a turn of, the run it is a fork of, or its batch task",
    "run_id": "id of the run (its first 8 characters shown; the whole id on hover)",
}

#: The column of an experiment's runs (a dataset with a :data:`VARIANT_TABLE`): the variant each run is of,
#: shown after ``agent`` (and a filter) when the runs have it.
VARIANT = "variant"
#: The writer's per-run table that names each run's variant (``run_id``, ``variant``): an Experiment's.
VARIANT_TABLE = "experiment"


def table_columns(display: pd.DataFrame) -> list[str]:
    """The columns of a display table: :data:`TABLE_COLUMNS`, and :data:`VARIANT` after ``agent`` when
    it has one (an experiment's runs)."""
    columns = list(TABLE_COLUMNS)
    if VARIANT in display.columns:
        columns.insert(columns.index("agent") + 1, VARIANT)
    return columns


#: Table column -> the ``runs_df()`` columns it sorts by (``tokens`` is their sum, made for the sort; an
#: experiment's :data:`VARIANT` sorts by itself).
SORT_KEYS: dict[str, tuple[str, ...]] = {
    "task": ("task",),
    "status": ("status",),
    "error": ("error",),
    "tool_errors": ("n_tool_errors",),
    "llm_calls": ("n_llm_calls",),
    "tool_calls": ("n_tool_calls",),
    "tokens": ("tokens",),
    "latency_s": ("duration_s",),
    "started_at": ("started_at",),
    "agent": ("agent",),
    "parent": ("parent_run_id", "forked_from"),
    "run_id": ("run_id",),
}

#: The status filter's value for the runs some tool call of which gave an error (whatever their status):
#: a run that ended ok is shown with it as its status.
TOOL_ERROR = "tool_error"
#: The columns of ``tool_calls`` the explorer reads (``result`` only of the calls that gave an error).
TOOL_USE_COLUMNS = ("run_id", "tool_name", "is_error", "result")

_WHERE = "explore"
#: The statuses a run has in ``runs_df()`` (``running``: not ended yet), what the status filter takes.
RUN_STATUSES: tuple[str, ...] = (*get_args(RunStatus), "running", TOOL_ERROR)


def _strings(param: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    items = check.sequence(_WHERE, param, value, "a string or a list of strings")
    return tuple(check.each(_WHERE, param, items, lambda name, item: str(check.string(_WHERE, name, item))))


def _time(param: str, value: object) -> pd.Timestamp | None:
    import pandas as pd

    if value is None:
        return None
    if not isinstance(value, str | datetime | pd.Timestamp):
        raise check.wrong_type(_WHERE, param, "a datetime, a pandas Timestamp or an ISO string", value)
    try:
        stamp = pd.Timestamp(value)
    except ValueError:
        raise check.wrong_value(_WHERE, param, "an ISO date and time", value) from None
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")


@dataclass(frozen=True)
class Filters:
    """What the explorer keeps: runs with one of ``status`` (any when empty), of one of ``agent``, of one
    of ``variant`` (an experiment's runs), that called one of ``tool``, whose error contains ``error``,
    whose task or answer contains ``search`` (both case-insensitive), started in ``[since, until]`` (UTC; a
    naive time is read as UTC)."""

    status: tuple[str, ...] = ()
    agent: tuple[str, ...] = ()
    variant: tuple[str, ...] = ()
    tool: tuple[str, ...] = ()
    error: str = ""
    search: str = ""
    since: pd.Timestamp | None = None
    until: pd.Timestamp | None = None

    @classmethod
    def of(cls, **given: Any) -> Filters:
        """Filters from keyword arguments, checked (a wrong one names its parameter)."""
        unknown = sorted(set(given) - set(cls.__dataclass_fields__))
        if unknown:
            raise check.wrong_value(_WHERE, unknown[0], f"one of {', '.join(cls.__dataclass_fields__)}", unknown[0])
        fields: dict[str, Any] = {}
        for name in ("status", "agent", "variant", "tool"):
            if given.get(name) is not None:
                fields[name] = _strings(name, given[name])
        for name in ("error", "search"):
            if given.get(name) is not None:
                fields[name] = check.string(_WHERE, name, given[name])
        for name in ("since", "until"):
            fields[name] = _time(name, given.get(name))
        return cls(**fields)

    def with_(self, **given: Any) -> Filters:
        """These filters with the ones given changed (checked as :meth:`of` checks them)."""
        current = {name: getattr(self, name) for name in self.__dataclass_fields__}
        current.update(given)
        return Filters.of(**current)


def _literal(value: object) -> str:
    import pandas as pd

    if isinstance(value, pd.Timestamp):
        return f"pd.Timestamp({value.isoformat()!r})"
    return repr(value)


def _contains(column: str, text: str) -> str:
    return f'runs["{column}"].str.contains({text!r}, case=False, regex=False, na=False)'


@dataclass
class Selection:
    """The runs a :class:`Filters` and a sort keep: ``positions`` (rows of the table's runs, in order)."""

    table: RunTable
    filters: Filters
    sort: str | None
    ascending: bool
    positions: np.ndarray[Any, Any] = field(repr=False)

    def __len__(self) -> int:
        return len(self.positions)

    @property
    def frame(self) -> pd.DataFrame:
        """The runs kept, as rows of ``runs_df()`` (its index and columns), in the selection's order."""
        return self.table.runs.iloc[self.positions]

    @property
    def run_ids(self) -> list[str]:
        """The ids of the runs kept, in order."""
        return [str(run) for run in self.table.run_ids[self.positions]]

    def pages(self, size: int) -> int:
        """How many pages of ``size`` rows the selection fills (one when empty)."""
        return max(1, -(-len(self.positions) // size))

    def page(self, number: int, size: int) -> pd.DataFrame:
        """Page ``number`` (from 0; past the last: the last) of the display table, ``size`` rows."""
        check.integer(_WHERE, "size", size, minimum=1)
        check.integer(_WHERE, "page", number, minimum=0)
        number = min(number, self.pages(size) - 1)
        return self.table.display.iloc[self.positions[number * size : (number + 1) * size]]

    def query(self) -> str:
        """A pandas expression over ``runs`` (``trace.runs_df()``) and ``tool_calls``
        (``trace.tool_calls_df()``) that gives :attr:`frame` (``pd`` is pandas)."""
        f = self.filters
        terms: list[str] = []
        if f.status:
            term = f'runs["status"].isin({list(f.status)!r})'
            if TOOL_ERROR in f.status:
                term = f'({term} | (runs["n_tool_errors"] > 0))'
            terms.append(term)
        if f.agent:
            terms.append(f'runs["agent"].isin({list(f.agent)!r})')
        if f.variant:
            terms.append(f'runs["{VARIANT}"].isin({list(f.variant)!r})')
        if f.tool:
            terms.append(
                f'runs["run_id"].isin(tool_calls.loc[tool_calls["tool_name"].isin({list(f.tool)!r}), "run_id"])'
            )
        if f.error:
            failed = 'tool_calls.loc[tool_calls["is_error"].fillna(False).astype(bool)]'
            terms.append(
                f'({_contains("error", f.error)} | runs["run_id"].isin({failed}.loc[({failed}["tool_name"].astype(str) '
                f'+ ": " + {failed}["result"].fillna("")).str.contains({f.error!r}, case=False, regex=False), '
                '"run_id"]))'
            )
        if f.search:
            terms.append(f"({_contains('task', f.search)} | {_contains('final_text', f.search)})")
        if f.since is not None:
            terms.append(f'(runs["started_at"] >= {_literal(f.since)})')
        if f.until is not None:
            terms.append(f'(runs["started_at"] <= {_literal(f.until)})')
        code = "runs[" + " & ".join(terms) + "]" if terms else "runs"
        if self.sort is None:
            return code
        keys = list(SORT_KEYS.get(self.sort, (self.sort,)))
        order = f'.sort_values({keys!r}, ascending={self.ascending}, kind="stable", na_position="last")'
        if self.sort == "tokens":
            return (
                f'{code}.assign(tokens=lambda r: r["prompt_tokens"].fillna(0) + r["completion_tokens"].fillna(0))'
                f'{order}.drop(columns="tokens")'
            )
        return code + order


class RunTable:
    """A trace's runs for the explorer: the ``runs_df()`` frame, its display table, masks and sorts."""

    def __init__(self, runs: pd.DataFrame, tool_calls: pd.DataFrame) -> None:
        import pandas as pd

        #: The runs, as ``runs_df()`` gives them (index kept: the selection's frame is its rows).
        self.runs = runs
        self.run_ids: np.ndarray[Any, Any] = runs["run_id"].astype("object").to_numpy()
        self._position = {str(run): at for at, run in enumerate(self.run_ids)}
        self._tool_runs: dict[str, np.ndarray[Any, Any]] = {}
        #: Per run id, its tool errors as text (``tool: result``, one a line), for the error filter.
        self.tool_errors: dict[str, str] = {}
        self._add_tools(pd.Index(self.run_ids).get_indexer(tool_calls["run_id"].astype("object")), tool_calls)
        self.display = _display(runs, self.tool_errors)
        self._masks: dict[tuple[str, object], np.ndarray[Any, Any]] = {}
        self._choices: dict[str, list[str]] = {}
        self._sorted: tuple[Filters, str | None, bool, np.ndarray[Any, Any]] | None = None

    def _add_tools(self, where: np.ndarray[Any, Any], tool_calls: pd.DataFrame) -> None:
        """Add each tool's runs (positions in ``runs``; ``where``: each call's, -1 when not in it)."""
        import numpy as np
        import pandas as pd

        calls = pd.DataFrame({"tool": tool_calls["tool_name"].astype("object").to_numpy(), "at": where})
        if "is_error" in tool_calls and "result" in tool_calls:
            failed = tool_calls[tool_calls["is_error"].fillna(False).astype(bool).to_numpy() & (where >= 0)]
            for run, name, result in zip(failed["run_id"], failed["tool_name"], failed["result"], strict=True):
                line = f"{name}: {'' if pd.isna(result) else result}"
                before = self.tool_errors.get(str(run))
                self.tool_errors[str(run)] = line if before is None else f"{before}\n{line}"
        for name, group in calls[calls["at"] >= 0].groupby("tool", sort=False)["at"]:
            known = self._tool_runs.get(str(name))
            found = group.unique()
            self._tool_runs[str(name)] = found if known is None else np.union1d(known, found)

    def __len__(self) -> int:
        return len(self.runs)

    def __contains__(self, run_id: object) -> bool:
        return isinstance(run_id, str) and run_id in self._position

    def update(self, runs: pd.DataFrame, tool_calls: pd.DataFrame) -> None:
        """Take in runs new or changed since the table was made: ``runs``, their whole rows of
        ``runs_df()`` (a known run's replace its row; new runs are added after the known ones, in the
        order given) and ``tool_calls``, their tool calls (``run_id``, ``tool_name``). The cost is
        that of the rows given, but for copying the columns (no row of the other runs is rebuilt);
        the table is then the one a new :class:`RunTable` of the whole trace gives."""
        import numpy as np

        if not len(runs):
            return
        given = runs["run_id"].astype("object").to_numpy()
        at = np.fromiter((self._position.get(str(run), -1) for run in given), dtype=np.int64, count=len(given))
        fresh = at < 0
        at[fresh] = np.arange(len(self.runs), len(self.runs) + int(fresh.sum()))
        for offset, run in enumerate(given[fresh]):
            self._position[str(run)] = len(self.runs) + offset
        self.runs = _patched(self.runs, at, runs.reset_index(drop=True))
        self.run_ids = self.runs["run_id"].astype("object").to_numpy()
        where = np.fromiter(
            (self._position.get(str(run), -1) for run in tool_calls["run_id"].astype("object")),
            dtype=np.int64,
            count=len(tool_calls),
        )
        for run in given:  # a changed run's tool calls are given whole again
            self.tool_errors.pop(str(run), None)
        self._add_tools(where, tool_calls)
        self.display = _patched(self.display, at, _display(runs, self.tool_errors).reset_index(drop=True))
        self._choices.clear()
        self._sorted = None
        sub = self.runs.iloc[at]
        for key, mask in list(self._masks.items()):
            grown = np.zeros(len(self.runs), dtype=bool)
            grown[: len(mask)] = mask
            grown[at] = self._compute(*key, runs=sub) if key[0] != "tool" else self._compute(*key)[at]
            self._masks[key] = grown

    def choices(self, column: str) -> list[str]:
        """The values a filter of ``column`` (``status``, ``agent``, ``variant``, ``tool``) can take, sorted
        (``variant``: none when the runs are no experiment's)."""
        check.choice(_WHERE, "column", column, ("status", "agent", VARIANT, "tool"))
        known = self._choices.get(column)
        if known is None:
            if column == "tool":
                known = sorted(self._tool_runs)
            elif column == VARIANT and VARIANT not in self.runs.columns:
                known = []
            else:
                known = sorted(str(value) for value in self.runs[column].dropna().astype("object").unique())
                if column == "status" and bool((self.runs["n_tool_errors"].fillna(0) > 0).any()):
                    known = sorted([*known, TOOL_ERROR])
            self._choices[column] = known
        return list(known)

    def _mask(self, name: str, value: object) -> np.ndarray[Any, Any]:
        key = (name, value)
        cached = self._masks.get(key)
        if cached is None:
            cached = self._masks[key] = self._compute(name, value)
        return cached

    def _compute(self, name: str, value: Any, runs: pd.DataFrame | None = None) -> np.ndarray[Any, Any]:
        """The mask of filter ``name`` = ``value`` over ``runs`` (default: every run; ``tool``: every run)."""
        import numpy as np

        runs = self.runs if runs is None else runs
        if name == "status" and TOOL_ERROR in value:
            kept: np.ndarray[Any, Any] = np.array(runs["status"].isin(list(value)), dtype=bool)
            kept |= np.asarray(runs["n_tool_errors"].fillna(0) > 0, dtype=bool)
            return kept
        if name in ("status", "agent"):
            return np.asarray(runs[name].isin(list(value)), dtype=bool)
        if name == VARIANT:
            if VARIANT not in runs.columns:
                return np.zeros(len(runs), dtype=bool)
            return np.asarray(runs[VARIANT].isin(list(value)), dtype=bool)
        if name == "tool":
            used = np.zeros(len(self.run_ids), dtype=bool)
            for tool in value:
                used[self._tool_runs.get(tool, [])] = True
            return used
        if name == "error":
            errors = self.tool_errors
            tools = runs["run_id"].astype("object").map(lambda run: errors.get(str(run)))
            found: np.ndarray[Any, Any] = _text_mask(runs["error"], value) | _text_mask(tools, value)
            return found
        if name == "search":
            either: np.ndarray[Any, Any] = _text_mask(runs["task"], value) | _text_mask(runs["final_text"], value)
            return either
        started = runs["started_at"]
        return np.asarray((started >= value if name == "since" else started <= value).fillna(False), dtype=bool)

    def select(self, filters: Filters | None = None, sort: str | None = None, ascending: bool = True) -> Selection:
        """The runs ``filters`` keep, sorted by the table column ``sort`` (trace order when ``None``;
        stable, nulls last)."""
        import numpy as np

        filters = filters or Filters()
        for status in filters.status:  # a misspelt status would keep no run, silently
            if status not in RUN_STATUSES and status not in self.choices("status"):
                raise check.wrong_value(_WHERE, "status", f"a run status ({', '.join(RUN_STATUSES)})", status)
        if sort is not None:
            check.choice(_WHERE, "sort", sort, table_columns(self.display))
        check.boolean(_WHERE, "ascending", ascending)
        cached = self._sorted
        if cached is not None and cached[:3] == (filters, sort, ascending):
            return Selection(self, filters, sort, ascending, cached[3])
        keep = np.ones(len(self.runs), dtype=bool)
        for name in ("status", "agent", VARIANT, "tool", "error", "search", "since", "until"):
            value = getattr(filters, name)
            if value not in ((), "", None):
                keep &= self._mask(name, value)
        positions = np.flatnonzero(keep)
        if sort is not None and len(positions):
            positions = positions[self._order(positions, sort, ascending)]
        self._sorted = (filters, sort, ascending, positions)
        return Selection(self, filters, sort, ascending, positions)

    def _order(self, positions: np.ndarray[Any, Any], sort: str, ascending: bool) -> np.ndarray[Any, Any]:
        """The order of the runs at ``positions`` (0..n-1) sorted as the selection's query sorts them."""
        import numpy as np

        if sort == "tokens":
            frame = self.runs[["prompt_tokens", "completion_tokens"]].iloc[positions].reset_index(drop=True)
            frame = frame.assign(tokens=frame["prompt_tokens"].fillna(0) + frame["completion_tokens"].fillna(0))
        else:
            frame = self.runs[list(SORT_KEYS.get(sort, (sort,)))].iloc[positions].reset_index(drop=True)
        ordered = frame.sort_values(
            list(SORT_KEYS.get(sort, (sort,))), ascending=ascending, kind="stable", na_position="last"
        )
        return np.asarray(ordered.index, dtype=np.int64)

    def refilter(self, selection: Selection, **changes: Any) -> Selection:
        """``selection`` with the filters given changed (``status=["error"]``, ``search=None``...)."""
        return self.select(selection.filters.with_(**changes), selection.sort, selection.ascending)


def _patched(frame: pd.DataFrame, at: np.ndarray[Any, Any], rows: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (index 0..n-1) with ``rows`` put at positions ``at`` (n and on: added), dtypes kept (a
    category column's categories: the sorted values it holds, as a frame built anew has them)."""
    import numpy as np
    import pandas as pd

    size = max(len(frame), int(at.max()) + 1)
    # every row given is put after the frame's, then one take puts each where it goes
    order = np.arange(size)
    order[at] = len(frame) + np.arange(len(rows))
    categories = [name for name in frame.columns if isinstance(frame[name].dtype, pd.CategoricalDtype)]
    plain = [name for name in frame.columns if name not in categories]
    out = pd.concat([frame[plain], rows[plain]], ignore_index=True).take(order).reset_index(drop=True)
    for name in categories:
        old, new = frame[name], rows[name]
        known = old.cat.categories.union(pd.Index(new.dropna().astype("object").unique()))
        if not known.is_monotonic_increasing:  # a union with no category is not sorted
            known = known.sort_values()
        codes = np.concatenate(
            [pd.Categorical(old, categories=known).codes, pd.Categorical(new, categories=known).codes]
        )[order]
        out[name] = pd.Categorical.from_codes(codes, categories=known).remove_unused_categories()
    return out[list(frame.columns)]


def _text_mask(column: pd.Series, text: str) -> np.ndarray[Any, Any]:
    import numpy as np

    return np.asarray(column.str.contains(text, case=False, regex=False, na=False), dtype=bool)


def _first_line(text: object) -> str:
    if not isinstance(text, str):
        return ""
    return text.strip().split("\n", 1)[0]


def _display(runs: pd.DataFrame, tool_errors: dict[str, str]) -> pd.DataFrame:
    """The explorer's table (:data:`TABLE_COLUMNS`) of ``runs``, on its index: a run that ended ok with a
    tool error has the status :data:`TOOL_ERROR` and, for its error, its first tool error
    (``tool_errors``: per run, its tool errors as text)."""
    import pandas as pd

    parent = runs["parent_run_id"].astype("object")
    fork = runs["forked_from"].astype("object")
    shown = parent.where(parent.notna(), "fork of " + fork.where(fork.notna(), "").astype(str))
    shown = shown.where(parent.notna() | fork.notna(), None)
    if "task_index" in runs.columns:
        task = "task " + runs["task_index"].astype("object").astype(str)
        shown = shown.where(shown.notna() | runs["task_index"].isna(), task)
    tokens = runs["prompt_tokens"].fillna(0) + runs["completion_tokens"].fillna(0)
    failed = (runs["n_tool_errors"].fillna(0) > 0).to_numpy(dtype=bool)
    status = runs["status"].astype("object")
    status = status.where(~(failed & (status == "ok").to_numpy(dtype=bool)), TOOL_ERROR)
    error = runs["error"].astype("object")
    first_tool_error = runs["run_id"].astype("object").map(lambda run: _first_line(tool_errors.get(str(run))) or None)
    error = error.where(error.notna(), first_tool_error)
    error = error.mask(error.isna(), float("nan"))  # missing as a run's own missing error is (NaN)
    shown_columns = {
        "task": runs["task"].astype("object").map(_first_line).astype("object"),
        "status": status,
        "error": error,
        "tool_errors": runs["n_tool_errors"],
        "llm_calls": runs["n_llm_calls"],
        "tool_calls": runs["n_tool_calls"],
        "tokens": tokens.astype("Int64"),
        "latency_s": seconds_column(runs["duration_s"]),  # out of range (inf, 1e300, negative): missing
        "started_at": runs["started_at"],
        "agent": runs["agent"].astype("object"),
        "parent": shown,
        "run_id": runs["run_id"].astype("object"),
    }
    if VARIANT in runs.columns:
        shown_columns[VARIANT] = runs[VARIANT].astype("object")
    display = pd.DataFrame(shown_columns, index=runs.index)
    return display[table_columns(display)]


class Recorded(Protocol):
    """What :class:`RunFollower` reads of a live trace: its rows' store, id and redactor."""

    @property
    def store(self) -> RowStore: ...

    @property
    def trace_id(self) -> str: ...

    def __len__(self) -> int: ...

    def redactor(self) -> Redactor: ...


class RunFollower(Follower):
    """What changed in a live trace since it was last asked: :meth:`changes` gives the rows of
    ``runs_df()`` and ``tool_calls_df()`` of the runs with new rows since (their whole rows, built from
    their rows alone), for :meth:`RunTable.update`. A run's rows are kept as their positions among the
    trace's rows; when rows were forgotten (``trace.clear()``, ``max_runs``) it says to start over."""

    def __init__(self, trace: Recorded) -> None:
        self.trace = trace
        self._epoch = trace.store.epoch
        self._seen = 0
        self._rows_of: dict[str, list[int]] = {}
        len(trace)  # the recorders' pending rows flushed
        self._take()

    def _take(self) -> list[str]:
        """Index the rows added since the last call; the runs they are of, in order of their first row."""
        from .rows import split

        rows = self.trace.store.rows
        start, self._seen = self._seen, len(rows)
        touched: dict[str, None] = {}
        for offset, run in enumerate(split(rows[start:]).runs):
            if run is not None:
                self._rows_of.setdefault(run, []).append(start + offset)
                touched[run] = None
        return list(touched)

    def state(self) -> tuple[object, ...]:
        """The trace's epoch (it changes when rows are forgotten) and its number of rows."""
        return self.trace.store.epoch, len(self.trace)

    def changes(self, also: Collection[str] = ()) -> tuple[pd.DataFrame, pd.DataFrame] | None:
        """``(runs, tool_calls)`` of the runs with rows added since the last call (and of the runs
        ``also`` names), or ``None`` when rows were forgotten since: then read the whole trace."""
        from .frames import runs_frame, tool_calls_frame

        trace = self.trace
        len(trace)  # the recorders' pending rows flushed, every chunk's id drawn
        if trace.store.epoch != self._epoch:
            self._epoch, self._seen, self._rows_of = trace.store.epoch, 0, {}
            self._take()
            return None
        changed = dict.fromkeys(self._take())
        changed.update(dict.fromkeys(run for run in also if run in self._rows_of))
        rows = trace.store.rows
        positions = sorted(position for run in changed for position in self._rows_of[run])
        mine = [rows[position] for position in positions]
        redact = trace.redactor()
        return runs_frame(mine, trace.trace_id, redact), tool_calls_frame(mine, trace.trace_id, redact)


def tool_uses(trace: TraceFrames) -> pd.DataFrame:
    """The :data:`TOOL_USE_COLUMNS` of each of ``trace``'s tool calls (the ``result`` of the calls that gave
    an error only): what the tool and error filters read (``trace.table`` reads these columns alone)."""
    return tool_errors_only(trace.table("tool_calls", list(TOOL_USE_COLUMNS)))


def tool_errors_only(calls: pd.DataFrame) -> pd.DataFrame:
    """``calls`` (the :data:`TOOL_USE_COLUMNS` of tool calls) with the results of the calls that gave no
    error left out (null)."""
    failed = calls["is_error"].fillna(False).astype(bool)
    return calls.assign(result=calls["result"].where(failed, None))


def run_table(trace: TraceFrames) -> RunTable:
    """The explorer's table of ``trace``'s runs (with their variant, an experiment's dataset's)."""
    variants = Variants.of(trace)
    runs = trace.runs_df()
    return RunTable(runs if variants is None else variants.put(runs), tool_uses(trace))


class Variants:
    """The variant of each run of an experiment's dataset (the ``run_id`` and ``variant`` of each
    committed part's :data:`VARIANT_TABLE`), read once per part: what puts the :data:`VARIANT` column
    beside a dataset's runs."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._read: set[Path] = set()
        self._of: dict[str, str] = {}

    @classmethod
    def of(cls, trace: TraceFrames) -> Variants | None:
        """The variants of ``trace``'s runs when it reads a dataset folder that is an experiment's (a part
        holds a :data:`VARIANT_TABLE`); ``None`` otherwise."""
        folder = trace.source_folder()
        if folder is None or not (folder / VARIANT_TABLE).is_dir():
            return None
        return cls(folder)

    def put(self, runs: pd.DataFrame) -> pd.DataFrame:
        """``runs`` with their :data:`VARIANT` (null for a run of no variant): the parts committed since
        the last call are read, their two columns alone."""
        from .parquet import committed_files, read_arrow

        for path in committed_files(self.folder, VARIANT_TABLE):
            if path not in self._read:
                data = read_arrow(path, ["run_id", VARIANT]).to_pydict()
                self._of.update((run, variant) for run, variant in zip(data["run_id"], data[VARIANT]) if run)
                self._read.add(path)
        found = runs["run_id"].astype("object").map(lambda run: self._of.get(str(run)))
        return runs.assign(**{VARIANT: found.astype("object")})
