"""Parquet: a dataset by table, Hive style (needs pyarrow: ``nbagent[parquet]``).

``trace.to_parquet("traces")`` writes each table of the trace (``events``, ``llm_calls``,
``tool_calls``, ``runs`` and the context snapshots ``context_logs`` and ``snapshots``, see
:data:`nbagent.trace.COLUMNS`) as ``traces/<table>/session=<trace id>/part-<n>.parquet``; a second
export of the same trace (after ``trace.clear()``) adds ``part-<n+1>``, and other traces add their
own ``session=`` folders. So one table of every session is one directory any engine reads with no
glob: ``spark.read.parquet("traces/tool_calls")``, DuckDB's
``read_parquet('traces/tool_calls/**/*.parquet', hive_partitioning=true)``,
``polars.scan_parquet("traces/tool_calls/**/*.parquet", hive_partitioning=True)`` and
``pyarrow.dataset.dataset("traces/tool_calls", partitioning="hive")``; ``session`` is the partition
column, so a filter on it prunes files. Every file of a table has the same schema (an all-null
column keeps its type; times are UTC to the microsecond, which Spark reads as TIMESTAMP).

:func:`read_parquet` reads a whole dataset, one session of it, or a folder of the earlier layout
(``folder/<table>.parquet``, one session), into frames with :data:`COLUMNS`' dtypes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .schema import COLUMNS, CONTEXT_TABLES, JSON_COLUMNS, TABLES, TraceTables, empty, tables_of, trace_id_of

if TYPE_CHECKING:
    import pandas as pd

ALL_TABLES = (*TABLES, *CONTEXT_TABLES)

# Per tool, over every session saved under traces/: calls, sessions, error rate, p95 latency.
DUCKDB_EXAMPLE = """
SELECT tool_name,
       count(*) AS calls,
       count(DISTINCT session) AS sessions,
       avg(CAST(is_error AS INTEGER)) AS error_rate,
       quantile_cont(duration_s, 0.95) AS p95_s
FROM read_parquet('traces/tool_calls/**/*.parquet', hive_partitioning = true)
GROUP BY tool_name
ORDER BY calls DESC, tool_name
"""

# The trace's id, kept apart from the rows so that a trace with none keeps it: the schema metadata.
_TRACE_ID_KEY = b"nbagent.trace_id"
_PART = re.compile(r"part-(\d+)\.parquet")
_SAFE = re.compile(r"[A-Za-z0-9._-]+")


def require_pyarrow() -> None:
    """Raise an ImportError that names the extra to install when pyarrow is missing."""
    try:
        import pyarrow  # noqa: F401
    except ImportError as error:
        raise ImportError("Parquet files need pyarrow: pip install 'nbagent-loop[parquet]'", name="pyarrow") from error


def arrow_schema(table: str) -> Any:
    """The Parquet schema of ``table``, the same for every trace: an all-null column keeps its type, so
    the sessions of a table are one dataset. Timestamps to the microsecond (Spark rejects nanoseconds)."""
    import pyarrow as pa

    types = {
        "category": pa.dictionary(pa.int32(), pa.string()),
        "string": pa.string(),
        "object": pa.string(),  # JSON text
        "Int64": pa.int64(),
        "float64": pa.float64(),
        "boolean": pa.bool_(),
        "datetime64[ns, UTC]": pa.timestamp("us", tz="UTC"),
    }
    return pa.schema([(name, types[dtype]) for name, (dtype, _) in COLUMNS[table].items()])


def session_folder(root: Path, table: str, session: str) -> Path:
    if not _SAFE.fullmatch(session) or session in (".", ".."):
        raise ValueError(f"a session id must be letters, digits, '.', '_' or '-': {session!r}")
    return root / table / f"session={session}"


def _parts(folder: Path) -> dict[int, Path]:
    found = {}
    if folder.is_dir():
        for path in folder.iterdir():
            match = _PART.fullmatch(path.name)
            if match:
                found[int(match.group(1))] = path
    return found


def split_sessions(tables: dict[str, pd.DataFrame], fallback: str) -> dict[str, dict[str, pd.DataFrame]]:
    """The tables of each session (trace id) in them, in order of appearance; a snapshot's
    ``event_row`` made relative to its session's first event. No row at all: one session, ``fallback``."""
    order: list[str] = []
    for df in tables.values():
        for value in df["trace_id"].astype("object").dropna().unique().tolist():
            if str(value) not in order:
                order.append(str(value))
    if len(order) <= 1:
        return {order[0] if order else fallback: tables}
    events_ids = tables["events"]["trace_id"].astype("object")
    out: dict[str, dict[str, pd.DataFrame]] = {}
    for session in order:
        mine = {
            name: df[df["trace_id"].astype("object") == session].reset_index(drop=True) for name, df in tables.items()
        }
        rows = events_ids.index[events_ids == session]
        offset = int(rows[0]) if len(rows) else 0
        snaps = mine["snapshots"].copy()
        snaps["event_row"] = (snaps["event_row"] - offset).astype("Int64")
        mine["snapshots"] = snaps
        out[session] = mine
    return out


def write_parquet(trace: TraceTables, folder: str | Path) -> Path:
    """Write each table as ``folder/<table>/session=<trace id>/part-<n>.parquet`` (``n``: the next
    free part of that session); JSON-valued columns are stored as JSON text. Returns ``folder``."""
    require_pyarrow()
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = Path(folder)
    for session, tables in split_sessions(tables_of(trace), trace.trace_id).items():
        folders = {table: session_folder(root, table, session) for table in ALL_TABLES}
        used = set().union(*(_parts(path).keys() for path in folders.values()))
        part = max(used) + 1 if used else 0
        for table, df in tables.items():
            df = df.copy()
            for column in JSON_COLUMNS.get(table, ()):
                df[column] = df[column].map(json.dumps).astype("string")
            arrow = pa.Table.from_pandas(df, schema=arrow_schema(table), preserve_index=False)
            metadata = {**(arrow.schema.metadata or {}), _TRACE_ID_KEY: session.encode()}
            folders[table].mkdir(parents=True, exist_ok=True)
            pq.write_table(arrow.replace_schema_metadata(metadata), folders[table] / f"part-{part}.parquet")
    return root


def write_session(trace: TraceTables, folder: str | Path) -> dict[str, Path]:
    """Write one trace's tables as ``folder/<table>.parquet`` (the earlier, flat layout, which
    :func:`read_parquet` still reads); the path of each table's file. For a writer that places the
    files in a dataset itself (``nbagent.batch``)."""
    require_pyarrow()
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for table, df in tables_of(trace).items():
        df = df.copy()
        for column in JSON_COLUMNS.get(table, ()):
            df[column] = df[column].map(json.dumps).astype("string")
        arrow = pa.Table.from_pandas(df, schema=arrow_schema(table), preserve_index=False)
        metadata = {**(arrow.schema.metadata or {}), _TRACE_ID_KEY: trace.trace_id.encode()}
        paths[table] = out / f"{table}.parquet"
        pq.write_table(arrow.replace_schema_metadata(metadata), paths[table])
    return paths


def _read_table(path: Path, table: str) -> pd.DataFrame:
    """One file of ``table``, with every column of :data:`COLUMNS` (a column added since: null) in
    order, JSON text decoded; dtypes not cast yet."""
    import pandas as pd

    if not path.exists():
        return empty(table)
    df = pd.read_parquet(path, engine="pyarrow")
    for column in COLUMNS[table].keys() - df.columns:  # added since the file was written
        df[column] = pd.Series([None] * len(df), dtype="object")
    df = df[list(COLUMNS[table])]
    for column in JSON_COLUMNS.get(table, ()):
        values = [json.loads(value) if isinstance(value, str) else None for value in df[column]]
        df[column] = pd.Series(values, dtype="object")
    return df


def _cast(df: pd.DataFrame, table: str) -> pd.DataFrame:
    for column, (dtype, _) in COLUMNS[table].items():
        if str(df[column].dtype) != dtype:
            df[column] = df[column].astype(dtype)
    return df


def _stored_id(path: Path) -> str | None:
    import pyarrow.parquet as pq

    if not path.exists():
        return None
    stored = (pq.read_schema(path).metadata or {}).get(_TRACE_ID_KEY)
    return stored.decode() if stored else None


def _read_old(src: Path) -> tuple[dict[str, pd.DataFrame], str]:
    """A folder of the earlier layout: ``folder/<table>.parquet``, one session."""
    frames = {table: _cast(_read_table(src / f"{table}.parquet", table), table) for table in ALL_TABLES}
    return frames, _stored_id(src / "runs.parquet") or trace_id_of(frames, src.name)


def sessions_in(root: Path) -> list[str]:
    """The sessions of a dataset (``root/<table>/session=<id>``), by name."""
    found: set[str] = set()
    for table in ALL_TABLES:
        folder = root / table
        if folder.is_dir():
            found.update(p.name[len("session=") :] for p in folder.iterdir() if p.name.startswith("session="))
    return sorted(found)


def _concat(pieces: list[pd.DataFrame], table: str) -> pd.DataFrame:
    import pandas as pd

    if len(pieces) == 1:
        return _cast(pieces[0], table)
    objects = [
        piece.astype({c: "object" for c, (d, _) in COLUMNS[table].items() if d == "category"}) for piece in pieces
    ]
    return _cast(pd.concat(objects, ignore_index=True), table)


def read_parquet(folder: str | Path, session: str | None = None) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """The tables of a dataset written by ``trace.to_parquet`` (every session, or ``session`` only; a
    session's parts in order), or of a folder of the earlier layout, with :data:`COLUMNS`' dtypes (a
    file written before the context tables or a column existed loads with no context and the column
    null); and the sessions' trace ids, in the order their rows are."""
    require_pyarrow()
    src = Path(folder)
    if (src / "runs.parquet").exists() and session is None:
        frames, trace_id = _read_old(src)
        return frames, [trace_id]
    sessions = [session] if session is not None else sessions_in(src)
    if not sessions:
        raise FileNotFoundError(f"no trace in {src}: neither <table>/session=<id>/part-<n>.parquet nor runs.parquet")
    loaded: list[tuple[Any, str, dict[str, pd.DataFrame]]] = []
    for name in sessions:
        folders = {table: session_folder(src, table, name) for table in ALL_TABLES}
        if not folders["runs"].is_dir():
            raise FileNotFoundError(f"no session {name!r} in {src}")
        parts = sorted(set().union(*(_parts(path).keys() for path in folders.values())))
        for part in parts:
            tables = {table: _read_table(folders[table] / f"part-{part}.parquet", table) for table in ALL_TABLES}
            times = tables["events"]["timestamp"].dropna()
            first = int(times.min().value) if len(times) else 2**63  # an empty part sorts last
            loaded.append(((first, name, part), name, tables))
    # Sessions in time order (their first item), each session's parts in order.
    firsts: dict[str, Any] = {}
    for key, name, _ in loaded:
        if name not in firsts or key < firsts[name]:
            firsts[name] = key
    loaded.sort(key=lambda item: (firsts[item[1]], item[0][2]))
    pieces: dict[str, list[pd.DataFrame]] = {table: [] for table in ALL_TABLES}
    events_seen = 0
    logs_seen = 0
    for _, _, tables in loaded:
        snaps, logs = tables["snapshots"], tables["context_logs"]
        if events_seen or logs_seen:  # a snapshot's row and log are positions in its part: shift them
            snaps = snaps.assign(event_row=snaps["event_row"].astype("Int64") + events_seen)
            snaps = snaps.assign(log=snaps["log"].astype("Int64") + logs_seen)
            logs = logs.assign(log=logs["log"].astype("Int64") + logs_seen)
        tables = {**tables, "snapshots": snaps, "context_logs": logs}
        events_seen += len(tables["events"])
        known = tables["context_logs"]["log"].dropna()
        logs_seen = max(logs_seen, int(known.max()) + 1) if len(known) else logs_seen
        for table in ALL_TABLES:
            pieces[table].append(tables[table])
    frames = {table: _concat(pieces[table], table) for table in ALL_TABLES}
    order = list(dict.fromkeys(name for _, name, _ in loaded))
    ids = [_stored_id(session_folder(src, "runs", name) / "part-0.parquet") or name for name in order]
    return frames, ids
