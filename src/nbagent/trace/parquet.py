"""Parquet: a dataset by table, Hive style (needs pyarrow: ``nbagent-loop[parquet]``).

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

**A part is visible whole or not at all**: its files are written in a hidden folder of the dataset
(``.pending-<id>-part-<n>``) and then moved into place one rename each, ``runs`` last (a run counted
in ``runs/`` has its rows in every table). A writer killed among the renames leaves every file whole;
:func:`read_parquet` skips such a part with a warning, and the next write to that session (a Batch's
resume) finishes it (or removes one none of whose files was placed). A file of another schema, or a
column of another type, is refused naming the file and the column; a stray ``session=`` folder whose
name is no id is skipped with a warning.

:func:`read_parquet` reads a whole dataset, one session of it, or a folder of the earlier layout
(``folder/<table>.parquet``, one session), into frames with :data:`COLUMNS`' dtypes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import warnings
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .combine import ALL_TABLES, cast, combine
from .schema import COLUMNS, JSON_COLUMNS, TraceTables, empty, tables_of, trace_id_of

if TYPE_CHECKING:
    import pandas as pd

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
_PENDING = re.compile(r"\.pending-(.+)-part-(\d+)")
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


MAX_ID = 200
"""The longest session (trace) id: a folder's name is at most 255 bytes on most file systems."""


def check_session(session: str) -> str:
    """``session`` if it can name a folder (letters, digits, '.', '_', '-'; at most :data:`MAX_ID`), else ValueError."""
    if not _SAFE.fullmatch(session) or session in (".", ".."):
        raise ValueError(f"a session (trace) id must be letters, digits, '.', '_' or '-': {session!r}")
    if len(session) > MAX_ID:
        raise ValueError(
            f"a session (trace) id must be at most {MAX_ID} characters, not {len(session)}: {session[:40]!r}..."
        )
    return session


def session_folder(root: Path, table: str, session: str) -> Path:
    """``root/<table>/session=<session>`` (a session id that cannot name a folder: ValueError)."""
    return root / table / f"session={check_session(session)}"


def _parts(folder: Path) -> dict[int, Path]:
    """The finished parts in ``folder`` by number."""
    found = {}
    if folder.is_dir():
        for path in folder.iterdir():
            match = _PART.fullmatch(path.name)
            if match:
                found[int(match.group(1))] = path
    return found


def part_name(number: int) -> str:
    """The file name of part ``number``."""
    return f"part-{number}.parquet"


def pending_folder(root: Path, session: str, number: int) -> Path:
    """Where part ``number`` of ``session`` is written before it is moved into place: a hidden folder of
    ``root`` (Spark, pyarrow, pandas, DuckDB and polars read a table's folder, never this one) laid out
    as the dataset is, ``<table>/session=<id>/part-<n>.parquet``."""
    return root / f".pending-{session}-part-{number}"


def _pending_parts(root: Path, session: str) -> dict[int, Path]:
    """The pending folders of ``session``'s parts by number."""
    found = {}
    if root.is_dir():
        for path in root.glob(f".pending-{session}-part-*"):
            match = _PENDING.fullmatch(path.name)
            if match and match.group(1) == session:
                found[int(match.group(2))] = path
    return found


def pending_sessions(root: Path) -> set[str]:
    """The sessions some part of which is pending in ``root`` (being written, or left by a killed writer)."""
    found = set()
    if root.is_dir():
        for path in root.glob(".pending-*-part-*"):
            match = _PENDING.fullmatch(path.name)
            if match:
                found.add(match.group(1))
    return found


def next_part(root: Path, session: str, tables: Sequence[str]) -> int:
    """The next free part number of ``session`` over ``tables``, finished or not."""
    used = set(_pending_parts(root, session))
    for table in tables:
        used.update(_parts(session_folder(root, table, session)))
    return max(used) + 1 if used else 0


def _placed(root: Path, session: str, number: int, tables: Sequence[str]) -> bool:
    return any((session_folder(root, table, session) / part_name(number)).exists() for table in tables)


def _has_files(folder: Path) -> bool:
    return any(path.is_file() for path in folder.rglob("*"))


def unfinished_parts(root: Path, session: str, tables: Sequence[str]) -> set[int]:
    """The parts of ``session`` some file of which is in place while another is not (a writer died
    among its renames): :func:`repair` finishes them; readers skip them."""
    return {
        number
        for number, pending in _pending_parts(root, session).items()
        if _has_files(pending) and _placed(root, session, number, tables)
    }


def _move_into_place(pending: Path, root: Path, table: str, session: str, number: int) -> None:
    """Move a pending part's ``table`` file into place with one rename: of its table's folder when the
    dataset has none yet, else of its session's folder when the table has none yet, else of the file
    (so no reader ever sees an empty folder, which DuckDB's glob refuses)."""
    relative = Path(table) / f"session={session}" / part_name(number)
    for depth in (1, 2):
        source, target = pending / Path(*relative.parts[:depth]), root / Path(*relative.parts[:depth])
        if not target.exists():
            try:
                os.replace(source, target)
                return
            except OSError:  # another writer made it meanwhile (a Batch writes parts at once): go in
                if not target.is_dir():
                    raise
    os.replace(pending / relative, root / relative)


def write_part(root: Path, session: str, number: int, tables: Mapping[str, Any]) -> None:
    """Write part ``number`` of ``session``: ``tables`` (name -> pyarrow Table), visible whole or not at all.

    Every table's file is first written whole in the part's :func:`pending_folder`; then each is moved
    into place with one rename, in the order of ``tables`` (the last one says the part is done). A
    process killed before the first rename leaves only the hidden folder (:func:`repair` removes it);
    one killed among the renames leaves every file whole, and :func:`repair` finishes the renames.
    Readers of nbagent skip a part some files of which are still pending (:func:`unfinished_parts`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pending = pending_folder(root, session, number)
    root.mkdir(parents=True, exist_ok=True)
    pending.mkdir()
    for table, arrow in tables.items():
        folder = pending / table / f"session={session}"
        folder.parent.mkdir()
        folder.mkdir()
        sink = pa.BufferOutputStream()
        pq.write_table(arrow, sink)
        with open(folder / part_name(number), "wb") as file:
            file.write(sink.getvalue().to_pybytes())
    for table in tables:
        _move_into_place(pending, root, table, session, number)
    shutil.rmtree(pending)


def repair(root: Path, session: str, tables: Sequence[str]) -> list[str]:
    """Finish or undo the parts of ``session`` a killed writer left unfinished (what was done, as text):
    a part some file of which is in place had all of its files written, so the rest are moved into
    place (in ``tables``' order); a part none of which is in place is removed."""
    done: list[str] = []
    for number, pending in sorted(_pending_parts(root, session).items()):
        if _has_files(pending) and _placed(root, session, number, tables):
            for table in tables:
                if (pending / table / f"session={session}" / part_name(number)).exists():
                    _move_into_place(pending, root, table, session, number)
            done.append(f"part {number} of session {session}: finished")
        elif _has_files(pending):
            done.append(f"part {number} of session {session}: removed")
        shutil.rmtree(pending)
    return done


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


# The order a part's files are moved into place: ``runs`` last, so that a run listed in ``runs/`` has its
# rows in every other table, also for a reader that does not know of unfinished parts.
WRITE_ORDER = ("events", "llm_calls", "tool_calls", "context_logs", "snapshots", "runs")


def arrow_table(df: pd.DataFrame, table: str, trace_id: str) -> Any:
    """``df`` (a frame of ``table``) as a pyarrow Table of :func:`arrow_schema`, JSON-valued columns as
    JSON text and the trace's id in the schema's metadata."""
    import pyarrow as pa

    df = df.copy()
    for column in JSON_COLUMNS.get(table, ()):
        df[column] = df[column].map(json.dumps).astype("string")
    arrow = pa.Table.from_pandas(df, schema=arrow_schema(table), preserve_index=False)
    return arrow.replace_schema_metadata({**(arrow.schema.metadata or {}), _TRACE_ID_KEY: trace_id.encode()})


def write_parquet(trace: TraceTables, folder: str | Path) -> Path:
    """Write each table as ``folder/<table>/session=<trace id>/part-<n>.parquet`` (``n``: the next
    free part of that session), each part whole or not at all (:func:`write_part`; a part a killed
    process left unfinished is finished or removed first); JSON-valued columns are stored as JSON
    text. Returns ``folder``."""
    require_pyarrow()
    root = Path(folder)
    for session, tables in split_sessions(tables_of(trace), trace.trace_id).items():
        session_folder(root, "runs", session)  # a bad id is refused before anything is written
        repair(root, session, WRITE_ORDER)
        part = next_part(root, session, WRITE_ORDER)
        write_part(root, session, part, {table: arrow_table(tables[table], table, session) for table in WRITE_ORDER})
    return root


def _compatible(actual: Any, expected: Any) -> bool:
    """Whether a file's column of type ``actual`` reads as ``expected`` (a category stored as plain
    text or the reverse, any integer width, a timestamp's unit, an all-null column: yes)."""
    import pyarrow as pa

    actual = actual.value_type if pa.types.is_dictionary(actual) else actual
    expected = expected.value_type if pa.types.is_dictionary(expected) else expected
    if actual == expected or pa.types.is_null(actual):
        return True
    kinds = (pa.types.is_string, pa.types.is_large_string), (pa.types.is_integer,), (pa.types.is_timestamp,)
    if pa.types.is_floating(expected):
        return bool(pa.types.is_floating(actual) or pa.types.is_integer(actual))
    return any(any(k(actual) for k in kind) and any(k(expected) for k in kind) for kind in kinds)


def check_schema(path: Path, table: str, schema: Any, expected: Any, known: Collection[str]) -> None:
    """Refuse a file whose columns are not those of nbagent's ``table`` (ValueError naming the file and
    the column): a column the table never had, no ``trace_id``, or a column of another type. A column
    of ``known`` the file lacks is fine (added since it was written)."""
    for name in schema.names:
        if name not in known:
            raise ValueError(
                f"{path}: column {name!r} is not a column of nbagent's {table!r} table: "
                "a file of another schema in the dataset? (move it out of the folder)"
            )
    if "trace_id" in known and "trace_id" not in schema.names:
        raise ValueError(f"{path}: no column 'trace_id': not a file of nbagent's {table!r} table")
    for name in schema.names:
        actual, wanted = schema.field(name).type, expected.field(name).type
        if not _compatible(actual, wanted):
            raise ValueError(f"{path}: column {name!r} is {actual}, where nbagent's {table!r} table has {wanted}")


def read_table_file(path: Path, table: str) -> pd.DataFrame:
    """One file of ``table``, with every column of :data:`COLUMNS` (a column added since: null) in
    order, JSON text decoded; dtypes not cast yet. A file that is not one of nbagent's ``table``
    (another schema, a column of another type, not Parquet) raises a ValueError naming it."""
    import pandas as pd
    import pyarrow.parquet as pq

    if not path.exists():
        return empty(table)
    try:
        schema = pq.read_schema(path)
    except Exception as error:  # pyarrow.ArrowInvalid and friends: not a whole Parquet file
        raise ValueError(f"{path}: not a readable Parquet file ({error})") from error
    check_schema(path, table, schema, arrow_schema(table), COLUMNS[table])
    df = pd.read_parquet(path, engine="pyarrow")
    for column in COLUMNS[table].keys() - df.columns:  # added since the file was written
        df[column] = pd.Series([None] * len(df), dtype="object")
    df = df[list(COLUMNS[table])]
    for column in JSON_COLUMNS.get(table, ()):
        try:
            values = [json.loads(value) if isinstance(value, str) else None for value in df[column]]
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: column {column!r} holds text that is not JSON ({error})") from error
        df[column] = pd.Series(values, dtype="object")
    return df


def _first_part(folder: Path) -> Path | None:
    parts = _parts(folder)
    return parts[min(parts)] if parts else None


def _stored_id(path: Path | None) -> str | None:
    import pyarrow.parquet as pq

    if path is None or not path.exists():
        return None
    stored = (pq.read_schema(path).metadata or {}).get(_TRACE_ID_KEY)
    return stored.decode() if stored else None


def _read_old(src: Path) -> tuple[dict[str, pd.DataFrame], str]:
    """A folder of the earlier layout: ``folder/<table>.parquet``, one session."""
    frames = {table: cast(read_table_file(src / f"{table}.parquet", table), table) for table in ALL_TABLES}
    return frames, _stored_id(src / "runs.parquet") or trace_id_of(frames, src.name)


def sessions_in(root: Path) -> list[str]:
    """The sessions of a dataset (``root/<table>/session=<id>``), by name; a folder whose name is no
    session id (``session=a b``, one too long) is skipped with a warning."""
    found: set[str] = set()
    for table in ALL_TABLES:
        folder = root / table
        if folder.is_dir():
            for path in folder.iterdir():
                if not path.name.startswith("session=") or not path.is_dir():
                    continue
                name = path.name[len("session=") :]
                try:
                    found.add(check_session(name))
                except ValueError as error:
                    warnings.warn(f"nbagent: {path} skipped: {error}", stacklevel=3)
    return sorted(found)


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
        if session is not None and not any(folder.is_dir() for folder in folders.values()):
            raise FileNotFoundError(f"no session {name!r} in {src}")
        unfinished = unfinished_parts(src, name, ALL_TABLES)
        if unfinished:
            warnings.warn(
                f"nbagent: {src}: part(s) {sorted(unfinished)} of session {name!r} skipped: unfinished (a write "
                "was interrupted; the next write to this session, or a Batch resuming it, finishes or removes them)",
                stacklevel=3,
            )
        parts = sorted(set().union(*(_parts(path).keys() for path in folders.values())) - unfinished)
        for part in parts:
            tables = {table: read_table_file(folders[table] / part_name(part), table) for table in ALL_TABLES}
            times = tables["events"]["timestamp"].dropna()
            first = int(times.min().value) if len(times) else 2**63  # an empty part sorts last
            loaded.append(((first, name, part), name, tables))
    # Sessions in time order (their first item), each session's parts in order.
    firsts: dict[str, Any] = {}
    for key, name, _ in loaded:
        if name not in firsts or key < firsts[name]:
            firsts[name] = key
    loaded.sort(key=lambda item: (firsts[item[1]], item[0][2]))
    frames = combine([tables for _, _, tables in loaded])
    order = list(dict.fromkeys(name for _, name, _ in loaded)) or sessions
    ids = [_stored_id(_first_part(session_folder(src, "runs", name))) or name for name in order]
    return frames, ids
