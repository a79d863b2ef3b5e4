"""Reading a Parquet dataset on demand: what :class:`~nbagent.trace.LazyTrace` (``load_parquet(folder,
lazy=True)``) reads, with pyarrow (measured against DuckDB in ``bench/bench_explorer.py``: DuckDB
took 0.8-1.0 of the time for the explorer's table, 0.5-0.6 for one run's rows; pyarrow already reads
Parquet here, DuckDB would add a 66 MB native library).

:func:`open_dataset` lists a dataset's parts from the files' metadata alone; :func:`read_table` reads
a table's columns asked for only (a column not asked for is not read), and the rows of some runs only
(a filter on ``run_id``: row groups whose statistics rule the runs out are skipped); :func:`read_run`
reads one run's rows of every table, with what its replay, timeline and context need, so that they
are those of the run in the whole dataset.
"""

from __future__ import annotations

import bisect
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _check as check
from .combine import ALL_TABLES, combine, stack
from .parquet import Part, PartKey, keyed_parts, read_part
from .schema import CHUNK_KIND, COLUMNS, CONTEXT_TABLES

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd

__all__ = ["open_dataset", "read_all", "read_run", "read_table"]


def open_dataset(
    folder: object, session: object, where: str, param: str, strict: bool = False
) -> tuple[list[tuple[PartKey, Part]], list[str], Path]:
    """The parts of the dataset in ``folder`` (``session``'s only, if given) in order, each with its sort
    key, the sessions' ids in order and the folder; errors name ``where`` (the function given it) and
    its parameter ``param`` (or ``session``); a part one file of which is no whole Parquet file is skipped
    with a warning naming the file (``strict``: a ValueError naming it)."""
    if not isinstance(folder, str | os.PathLike):
        raise check.wrong_type(where, param, "a dataset's folder (str or pathlib.Path)", folder)
    name = check.string(where, "session", session, none=True)
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"{where}: {param} {str(root)!r} is not a folder (no such directory)")
    try:
        parts, ids = keyed_parts(root, name, strict)
    except FileNotFoundError as error:
        raise FileNotFoundError(f"{where}: {'session' if name is not None else param}: {error}") from None
    except ValueError as error:  # a session id that cannot name a folder
        raise ValueError(f"{where}: session: {error}") from None
    return parts, ids, root


def read_table(
    parts: Sequence[Part],
    name: str,
    columns: Sequence[str] | None = None,
    run_ids: Sequence[str] | None = None,
    *,
    chunks: bool = True,
    where: str = "trace.table",
) -> pd.DataFrame:
    """Table ``name`` of ``parts`` as ``load_parquet`` gives it, its ``columns`` only (default: all),
    the rows of ``run_ids`` only (default: all; not for the context tables, which have no run), the
    streamed chunks' rows of ``events`` left out when not ``chunks``. With ``columns`` or ``run_ids``
    a category column's categories are the values the rows read hold (``load_parquet``'s are the
    file's: a session's file may list every run of the trace it was split from, costly to convert)."""
    import pyarrow.dataset as ds

    check.choice(where, "name", name, ALL_TABLES)
    if columns is not None:
        columns = list(check.sequence(where, "columns", columns, "a list of column names"))
        for position, column in enumerate(columns):
            check.choice(where, f"columns[{position}]", column, COLUMNS[name])
    keep = None
    if run_ids is not None:
        if name in CONTEXT_TABLES:
            raise check.wrong_value(where, "run_ids", f"None for {name!r} (a table of no run)", run_ids)
        given = check.sequence(where, "run_ids", run_ids, "a list of run ids")
        keep = ds.field("run_id").isin([str(check.string(where, f"run_ids[{i}]", run)) for i, run in enumerate(given)])
    if not chunks:
        no_chunk = ds.field("kind") != CHUNK_KIND
        keep = no_chunk if keep is None else keep & no_chunk
    # a part of the table, or a table of several files (whose categories are then the values it holds,
    # as load_parquet's stacking makes them): each file's categories decoded, not converted
    if columns is not None or run_ids is not None or len(parts) > 1:
        chosen = keep

        def kept(arrow: Any) -> Any:
            return arrow if chosen is None else arrow.filter(chosen)

        return stack([read_part(part, name, columns, kept) for part in parts], name, columns)
    return stack([read_part(part, name, columns, keep) for part in parts], name, columns)


def read_all(parts: Sequence[Part]) -> dict[str, pd.DataFrame]:
    """Every table of ``parts``, as ``load_parquet`` reads them."""
    return combine([{name: read_part(part, name) for name in ALL_TABLES} for part in parts])


def read_run(parts: Sequence[Part], run: str) -> dict[str, pd.DataFrame] | None:
    """Run ``run``'s rows of every table of ``parts`` (``None``: no such run), with what makes its replay,
    timeline, context and comparison those of the run in the whole dataset: the context snapshots of
    its agent it saw (the one it started from first, each moved to its first row that saw it) and
    their message logs, the tool calls whose results those contexts hold, and the rows in ``runs`` of
    a team run's turns (the runs naming it their parent). Only the parts whose ``runs`` hold it are read."""
    import pyarrow.dataset as ds

    pieces = []
    for part in parts:
        if "runs" not in part.files or not _rows_of(run)(_column(part, "runs", "run_id")).num_rows:
            continue
        positions: list[Any] = []

        def events(arrow: Any, positions: list[Any] = positions) -> Any:
            import numpy as np

            mask = _matches(arrow.column("run_id"), run)
            positions.append(np.flatnonzero(mask))
            return arrow.take(positions[0])

        tables = {"events": read_part(part, "events", None, events)}
        if not len(positions) or not len(positions[0]):
            continue
        tables["llm_calls"] = read_part(part, "llm_calls", None, _rows_of(run))
        tables["runs"] = read_part(part, "runs", None, _rows_of(run, "parent_run_id"))
        agents = tables["runs"].loc[tables["runs"]["run_id"].astype("object") == run, "agent"].dropna()
        snapshots = read_part(part, "snapshots")
        # the snapshots are its agent's by name: of those, the logs its own messages went to (the agents of
        # a Batch's concurrent tasks share a name, and each has its own log)
        own_logs = read_part(part, "context_logs", ["log", "run_id"], _rows_of(run))["log"].dropna().unique()
        if len(agents):
            snapshots = _seen(snapshots, str(agents.iloc[0]), positions[0], {int(log) for log in own_logs})
        else:
            snapshots = snapshots.iloc[:0]
        logs = [int(log) for log in snapshots["log"].dropna().unique()]
        tables["snapshots"] = snapshots
        tables["context_logs"] = read_part(part, "context_logs", None, ds.field("log").isin(logs))
        # its tool calls, then the earlier runs' whose results the contexts hold (a call id is looked up in
        # its run: models reuse ids such as "call_1" from run to run), the file read once
        context = tables["context_logs"]
        earlier = sorted({str(r) for r in context["run_id"].dropna().astype("object")} - {run})
        calls = _call_ids(context)
        theirs = None
        if calls and earlier:
            theirs = ds.field("run_id").isin(earlier) & ds.field("call_id").isin(sorted(calls))
        tables["tool_calls"] = read_part(part, "tool_calls", None, _rows_of(run, also=theirs))
        pieces.append(tables)
    return combine(pieces) if pieces else None


def _column(part: Part, table: str, column: str) -> Any:
    """One column of ``part``'s ``table`` file, as a pyarrow Table."""
    import pyarrow.parquet as pq

    return pq.read_table(part.files[table], columns=[column])


def _matches(column: Any, run: str, *also: Any) -> Any:
    """Which values of a pyarrow column (a run id column: dictionary-encoded or text) are ``run``,
    as a numpy bool array; ``also``: more columns, any of which may be it."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    found = []
    for chunk in column.chunks:
        if pa.types.is_dictionary(chunk.type):
            at = pc.index(chunk.dictionary, run).as_py()  # compare the codes: no text decoded
            if at < 0:  # not in this chunk (an empty chunk too: a list of no False would be of type null)
                found.append(np.zeros(len(chunk), dtype=bool))
                continue
            hit = pc.equal(chunk.indices, at)
        else:
            hit = pc.equal(chunk, run)
        found.append(hit.fill_null(False).to_numpy(zero_copy_only=False))
    mask = np.concatenate(found) if found else np.zeros(0, dtype=bool)
    for other in also:
        mask |= _matches(other, run)
    return mask


def _rows_of(run: str, parent: str | None = None, also: Any = None) -> Any:
    """A ``where`` of :func:`read_part` keeping the rows of run ``run`` (and of the runs naming it
    their ``parent``, that column's name), then those the pyarrow expression ``also`` keeps (of other runs)."""

    def keep(arrow: Any) -> Any:
        import numpy as np
        import pyarrow as pa

        extra = [arrow.column(parent)] if parent and parent in arrow.column_names else []
        own = arrow.take(np.flatnonzero(_matches(arrow.column("run_id"), run, *extra)))
        return own if also is None else pa.concat_tables([own, arrow.filter(also)])

    return keep


def _seen(snapshots: pd.DataFrame, agent: str, positions: Any, logs: set[int]) -> pd.DataFrame:
    """The snapshots of ``agent`` the events at ``positions`` (a run's, in a part) saw, each moved to
    the first of them it was there for: the last one before the run (to its first row) and those
    taken while it ran, of the ``logs`` the run's messages are in (empty: any of ``agent``'s). A row's
    context in the run alone is then the one it had in the whole part."""
    import numpy as np

    rows = snapshots["event_row"].astype("float64").to_numpy()
    own = (snapshots["agent"].astype("object") == agent).to_numpy() & ~np.isnan(rows)
    if logs:
        own &= snapshots["log"].astype("float64").isin(sorted(logs)).to_numpy()
    first, last = int(positions[0]), int(positions[-1])
    before = np.flatnonzero(own & (rows < first))
    during = own & (rows >= first) & (rows <= last)
    keep = np.flatnonzero(during)
    if len(before):
        keep = np.concatenate([before[-1:], keep])
    chosen = snapshots.iloc[keep].reset_index(drop=True)
    sorted_positions = [int(p) for p in positions]
    moved = [bisect.bisect_left(sorted_positions, int(row)) for row in chosen["event_row"]]
    import pandas as pd

    return chosen.assign(event_row=pd.Series(moved, dtype="Int64"))


def _call_ids(logs: pd.DataFrame) -> set[str]:
    """The ids of the tool calls the assistant messages of ``logs`` hold."""
    found: set[str] = set()
    for calls in logs["tool_calls"]:
        if isinstance(calls, list):
            found.update(str(call.get("id")) for call in calls if isinstance(call, dict) and call.get("id"))
    return found
