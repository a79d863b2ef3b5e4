"""Parquet: a dataset by table, Hive style (needs pyarrow: ``nbagent-loop[parquet]``).

``trace.to_parquet("traces")`` writes each table of the trace (``events``, ``llm_calls``,
``tool_calls``, ``runs`` and the context snapshots ``context_logs`` and ``snapshots``, see
:data:`nbagent.trace.COLUMNS`) as ``traces/<table>/session=<trace id>/part-<n>.parquet``; a second
export of the same trace adds ``part-<n+1>`` with the runs the folder does not hold yet (those
since the last export: a trace exported again, cleared or not, never writes a run twice), and other
traces add their own ``session=`` folders. **A dataset holds ended runs, each once**: a live trace's
runs still going are left out with a warning and written by the first export after they end, so
every reader (``load_parquet``, a lazy trace, DuckDB, Spark, pandas over a glob) sees each run once.
So one table of every session is one directory any engine reads with no glob:
``spark.read.parquet("traces/tool_calls")``, DuckDB's
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

**Other readers** (DuckDB, Spark, pandas, polars) see a part's files as they are placed: between a crash
among a part's renames and the next write to that session (or while a writer works), a glob over
``<table>/**`` sees the part's files placed so far, whole, whose runs are not in ``runs/`` yet. A
trace part's ``runs`` file is placed after its other tables' (a Batch's before its ``attempts`` and
``results``): a query over ``runs/`` alone, or joining the other tables from it, never sees a run
without its rows; to read any table with whole parts only, read :func:`committed_files`
(``duckdb_source`` gives DuckDB's ``read_parquet`` of them).

:func:`read_parquet` reads a whole dataset, one session of it, or a folder of the earlier layout
(``folder/<table>.parquet``, one session), into frames with :data:`COLUMNS`' dtypes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import warnings
from collections import OrderedDict
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..printable import printable
from .combine import ALL_TABLES, cast, combine
from .schema import COLUMNS, JSON_COLUMNS, empty, json_cell

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
_LOCK = re.compile(r"\.lock-(.+)-part-(\d+)")
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


def _session_paths(root: Path, session: str, kind: str, name: re.Pattern[str]) -> dict[int, Path]:
    """The ``.<kind>-<session>-part-<n>`` paths of ``root`` (pending folders, lock files) by number."""
    found = {}
    if root.is_dir():
        for path in root.glob(f".{kind}-{session}-part-*"):
            match = name.fullmatch(path.name)
            if match and match.group(1) == session:
                found[int(match.group(2))] = path
    return found


def _pending_parts(root: Path, session: str) -> dict[int, Path]:
    """The pending folders of ``session``'s parts by number."""
    return _session_paths(root, session, "pending", _PENDING)


def pending_sessions(root: Path) -> set[str]:
    """The sessions some part of which is pending in ``root`` (being written, or left by a killed writer),
    or whose writer's lock file is there (the writer at work, or killed before it removed the file)."""
    found = set()
    if root.is_dir():
        for pattern, name in ((".pending-*-part-*", _PENDING), (".lock-*-part-*", _LOCK)):
            for path in root.glob(pattern):
                match = name.fullmatch(path.name)
                if match:
                    found.add(match.group(1))
    return found


def _lock_files(root: Path, session: str) -> dict[int, Path]:
    """The writers' lock files of ``session``'s parts by number."""
    return _session_paths(root, session, "lock", _LOCK)


def next_part(root: Path, session: str, tables: Sequence[str]) -> int:
    """The next free part number of ``session`` over ``tables``, finished or not."""
    used = set(_pending_parts(root, session))
    for table in tables:
        used.update(_parts(session_folder(root, table, session)))
    return max(used) + 1 if used else 0


def _placed(root: Path, session: str, number: int, tables: Sequence[str]) -> bool:
    return any((session_folder(root, table, session) / part_name(number)).exists() for table in tables)


def _has_files(folder: Path) -> bool:
    """Whether ``folder`` holds a file, however deep (a folder a writer removes meanwhile: what is left)."""
    return any(files for _, _, files in os.walk(folder))  # os.walk skips what vanishes, where rglob raises


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


def _writer_lock(root: Path, session: str, number: int) -> Path:
    """The file whose lock the writer of part ``number`` of ``session`` holds while the part is pending."""
    return root / f".lock-{session}-part-{number}"


@contextmanager
def _locked(path: Path) -> Iterator[bool]:
    """An exclusive lock on ``path`` (made if missing; ``flock``: released by the system when its holder
    dies), held for the block; yields whether it was taken (not when another process holds it: no wait).
    Without ``flock`` (Windows) it is always taken: a repair there assumes the writer is gone."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover (POSIX here)
        yield True
        return
    while True:
        file = open(path, "a+b")  # noqa: SIM115 (closed below, on every path)
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.close()
            yield False
            return
        try:  # the lock counts while the path names the file locked: its holder may have removed it meanwhile
            if os.stat(path).st_ino == os.fstat(file.fileno()).st_ino:
                break
        except FileNotFoundError:
            pass
        file.close()  # removed (or made anew) between the open and the lock: lock the file the path names now
    try:
        yield True
    finally:
        path.unlink(missing_ok=True)  # before the unlock: who opens it next makes a fresh one
        file.close()


def write_part(root: Path, session: str, number: int, tables: Mapping[str, Any]) -> None:
    """Write part ``number`` of ``session``: ``tables`` (name -> pyarrow Table), visible whole or not at all.

    Every table's file is first written whole in the part's :func:`pending_folder`; then each is moved
    into place with one rename, in the order of ``tables`` (the last one says the part is done). A
    process killed before the first rename leaves only the hidden folder (:func:`repair` removes it);
    one killed among the renames leaves every file whole, and :func:`repair` finishes the renames.
    Readers of nbagent skip a part some files of which are still pending (:func:`unfinished_parts`).
    The writer holds a lock (``root/.lock-<session>-part-<n>``) from before the pending folder is made
    until it is gone, so that a repair by another writer of the dataset (another process, machine or
    Spark executor opening it meanwhile) leaves a part being written alone."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pending = pending_folder(root, session, number)
    root.mkdir(parents=True, exist_ok=True)
    with _locked(_writer_lock(root, session, number)) as mine:
        if not mine:  # a part number is its session's writer's alone: another process is at it
            raise RuntimeError(f"{root}: part {number} of session {session} is being written by another process")
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
    place (in ``tables``' order); a part none of which is in place is removed. A part whose writer is
    alive (it holds the part's lock: see :func:`write_part`) is left alone."""
    done: list[str] = []
    for number, pending in sorted(_pending_parts(root, session).items()):
        with _locked(_writer_lock(root, session, number)) as gone:
            if not gone or not pending.exists():  # being written, or its writer ended meanwhile
                continue
            if _has_files(pending) and _placed(root, session, number, tables):
                for table in tables:
                    if (pending / table / f"session={session}" / part_name(number)).exists():
                        _move_into_place(pending, root, table, session, number)
                done.append(f"part {number} of session {session}: finished")
            elif _has_files(pending):
                done.append(f"part {number} of session {session}: removed")
            shutil.rmtree(pending)
    for number, lock in sorted(_lock_files(root, session).items()):  # a writer killed after its part was done
        if not pending_folder(root, session, number).exists():
            with _locked(lock) as gone:  # removed on the way out if its writer is gone (a live one holds it)
                if gone:
                    done.append(f"part {number} of session {session}: its writer's lock file removed")
    return done


# The order a part's files are moved into place: ``runs`` last, so that a run listed in ``runs/`` has its
# rows in every other table, also for a reader that does not know of unfinished parts.
WRITE_ORDER = ("events", "llm_calls", "tool_calls", "context_logs", "snapshots", "runs")


def arrow_table(df: pd.DataFrame, table: str, trace_id: str) -> Any:
    """``df`` (a frame of ``table``) as a pyarrow Table of :func:`arrow_schema`, JSON-valued columns as
    JSON text and the trace's id in the schema's metadata. A category column's dictionary holds the
    values of ``df``'s rows alone (a part of a trace exported again and again, or one session of a
    trace of several, would otherwise store every run id of the whole trace in each file)."""
    import pandas as pd
    import pyarrow as pa

    df = df.copy()
    for column in JSON_COLUMNS.get(table, ()):
        df[column] = df[column].map(json.dumps).astype("string")
    for column, dtype in df.dtypes.items():
        if isinstance(dtype, pd.CategoricalDtype):
            df[column] = df[column].cat.remove_unused_categories()
    arrow = pa.Table.from_pandas(df, schema=arrow_schema(table), preserve_index=False)
    return arrow.replace_schema_metadata({**(arrow.schema.metadata or {}), _TRACE_ID_KEY: trace_id.encode()})


_WRITTEN_RUNS: OrderedDict[Path, tuple[tuple[int, int], frozenset[str]]] = OrderedDict()
"""Per runs file read by :func:`written_runs` (its size and modification time when read): its runs."""
_WRITTEN_LOCK = threading.Lock()
WRITTEN_RUNS_KEPT = 10_000
"""How many runs files :func:`written_runs` remembers (the least recently used go)."""


def written_runs(root: Path, session: str) -> set[str]:
    """The runs of ``session`` the finished parts in ``root`` hold (whatever their status: a run is
    written once). A file read before and unchanged since is not read again: a session exported every
    minute reads one new file per export, not all."""
    import pyarrow.parquet as pq

    found: set[str] = set()
    for path in _parts(session_folder(root, "runs", session)).values():
        stat = path.stat()
        key, version = path.resolve(), (stat.st_size, stat.st_mtime_ns)
        with _WRITTEN_LOCK:
            known = _WRITTEN_RUNS.get(key)
        if known is None or known[0] != version:
            runs = pq.read_table(path, columns=["run_id"]).column(0).to_pylist()
            known = (version, frozenset(str(run) for run in runs if run is not None))
        with _WRITTEN_LOCK:
            _WRITTEN_RUNS[key] = known
            _WRITTEN_RUNS.move_to_end(key)
            if len(_WRITTEN_RUNS) > WRITTEN_RUNS_KEPT:
                _WRITTEN_RUNS.popitem(last=False)
        found.update(known[1])
    return found


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
            raise ValueError(
                printable(f"{path}: column {name!r} is {actual}, where nbagent's {table!r} table has {wanted}")
            )


def read_arrow(path: Path, columns: Sequence[str] | None = None) -> Any:
    """One Parquet file as a pyarrow Table (its ``columns`` only, default all): how the tables of a part
    that are not trace tables (a Batch's ``results`` and ``attempts``) are read. A file that is no whole
    Parquet file: ValueError naming it."""
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path, columns=None if columns is None else list(columns))
    except Exception as error:  # pyarrow.ArrowInvalid, OSError: say which file
        raise ValueError(f"{path}: not a readable Parquet file ({type(error).__name__}: {error})") from error


def read_table_file(path: Path, table: str, columns: Sequence[str] | None = None, where: Any = None) -> pd.DataFrame:
    """One file of ``table``, with every column of :data:`COLUMNS` (or ``columns`` of them; a column
    added since: null) in order, JSON text decoded; dtypes not cast yet; the rows ``where`` keeps (a
    pyarrow expression, or a function of the file's pyarrow Table giving the rows kept as a Table,
    whose category columns then have the values of those rows alone for categories; default: all,
    read as pandas reads the file). A file that is not one of nbagent's ``table``
    (another schema, a column of another type, not Parquet) raises a ValueError naming it."""
    import pandas as pd
    import pyarrow.parquet as pq

    wanted = list(COLUMNS[table]) if columns is None else list(columns)
    if not path.exists():
        return empty(table)[wanted]
    try:
        schema = pq.read_schema(path)
    except Exception as error:  # pyarrow.ArrowInvalid and friends: not a whole Parquet file
        raise UnreadableFile(path, str(error)) from error
    check_schema(path, table, schema, arrow_schema(table), COLUMNS[table])
    try:
        if columns is None and where is None:
            df = pd.read_parquet(path, engine="pyarrow")
            arrow = None
        else:  # the file read whole (one scan: faster than a filtered dataset scan), then its rows kept
            arrow = pq.read_table(path, columns=[name for name in wanted if name in schema.names])
    except Exception as error:  # its pages garbled (OSError, ArrowInvalid): say which file
        raise UnreadableFile(path, f"{type(error).__name__}: {error}") from error
    if arrow is not None:
        if callable(where):  # a few rows: their categories alone (a file's may be every run's)
            import pyarrow as pa

            arrow = where(arrow)
            arrow = arrow.cast(pa.schema([_decoded(field) for field in arrow.schema]))
        elif where is not None:
            arrow = arrow.filter(where)
        df = arrow.to_pandas()
    for column in set(wanted) - set(df.columns):  # added since the file was written
        df[column] = pd.Series([None] * len(df), dtype="object")
    df = df[wanted]
    for column in JSON_COLUMNS.get(table, ()):
        if column not in wanted:
            continue
        try:
            values = [json_cell(value) if isinstance(value, str) else None for value in df[column]]
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: column {column!r} holds text that is not JSON ({error})") from error
        df[column] = pd.Series(values, dtype="object", index=df.index)
    return df


def _decoded(field: Any) -> Any:
    """A pyarrow field, a dictionary-encoded one as its values' type."""
    import pyarrow as pa

    return field.with_type(field.type.value_type) if pa.types.is_dictionary(field.type) else field


def read_part(part: Part, table: str, columns: Sequence[str] | None = None, where: Any = None) -> pd.DataFrame:
    """``table`` of ``part`` as :func:`read_table_file` reads it (none: no row), its ``columns`` only
    (default: all) and the rows the pyarrow expression ``where`` keeps (default: all), with
    :data:`COLUMNS`' dtypes."""
    path = part.files.get(table)
    if path is None:
        frame = empty(table)
        return frame if columns is None else frame[list(columns)]
    return cast(read_table_file(path, table, columns, where), table, columns)


def _first_part(folder: Path) -> Path | None:
    parts = _parts(folder)
    return parts[min(parts)] if parts else None


def _stored_id(path: Path | None) -> str | None:
    import pyarrow.parquet as pq

    if path is None or not path.exists():
        return None
    stored = (pq.read_schema(path).metadata or {}).get(_TRACE_ID_KEY)
    return stored.decode() if stored else None


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
                    warnings.warn(printable(f"nbagent: {path} skipped: {error}"), stacklevel=3)
    return sorted(found)


def committed_parts(root: Path, session: str) -> list[int]:
    """The parts of ``session`` every file of which is in place, in order: those whose ``runs`` file is
    in place and whose pending folder holds no file. A trace part's ``runs`` file is moved into place
    after all the others (a Batch's: before its ``attempts`` and ``results``, which the pending folder
    still holds until they are placed). ``runs`` is listed first, then the pending folders: a listing
    made while a writer works, or after a crash, never takes a part half."""
    placed = set(_parts(session_folder(root, "runs", session)))
    pending = {number for number, path in _pending_parts(root, session).items() if _has_files(path)}
    return sorted(placed - pending)


def committed_files(folder: str | Path, table: str, session: str | None = None) -> list[Path]:
    """The files of ``table`` (``runs``, ``tool_calls``..., a Batch's ``results`` and ``attempts`` too) in
    the committed parts of a dataset (every session, or ``session``), in session and part order: what
    another reader (DuckDB, Spark, pandas, polars) reads to see only whole parts. A plain glob over
    ``<table>/**`` also sees the files of a part a crashed or running writer has not finished placing
    (whole files, but rows whose run is not in ``runs/`` yet); a query that reads ``runs/`` alone, or joins
    the other tables from it, never sees such rows. See :func:`duckdb_source`."""
    root = Path(folder)
    sessions = [check_session(session)] if session is not None else sessions_in(root)
    files = []
    for name in sessions:
        for number in committed_parts(root, name):  # listed before the table's files: see committed_parts
            path = session_folder(root, table, name) / part_name(number)
            if path.is_file():
                files.append(path)
    return files


def duckdb_source(folder: str | Path, table: str, session: str | None = None) -> str:
    """A DuckDB ``read_parquet(...)`` of the committed files of ``table`` (:func:`committed_files`), with
    the ``session`` column, to put after ``FROM``: ``duckdb.sql(f"SELECT count(*) FROM {source}")``.
    Made again for each query (the list is the parts committed now). No committed file: FileNotFoundError."""
    files = committed_files(folder, table, session)
    if not files:
        raise FileNotFoundError(f"no committed part of table {table!r} in {folder}")
    listed = ", ".join("'" + str(path).replace("'", "''") + "'" for path in files)
    return f"read_parquet([{listed}], hive_partitioning = true)"


@dataclass(frozen=True)
class Part:
    """One part of a dataset: the files of its tables (a table with no file: absent from ``files``)."""

    session: str
    number: int
    files: dict[str, Path]


def _first_time(path: Path) -> int:
    """The earliest ``timestamp`` of an events file, in ns (from the file's statistics when it has
    them, else read); an empty or missing file: 2**63, so that it sorts last."""
    import pyarrow.parquet as pq

    if not path.exists():
        return 2**63
    try:
        meta = pq.ParquetFile(path).metadata
        column = meta.schema.names.index("timestamp")
        found = []
        for group in range(meta.num_row_groups):
            stats = meta.row_group(group).column(column).statistics
            if meta.row_group(group).num_rows == 0:
                continue
            if stats is None or not stats.has_min_max:
                raise LookupError
            found.append(stats.min)
    except (LookupError, ValueError):  # no statistics (another writer): read the column
        times = read_table_file(path, "events", ["timestamp"])["timestamp"].dropna()
        return int(cast(times.to_frame(), "events")["timestamp"].min().value) if len(times) else 2**63
    import pandas as pd

    return int(pd.Timestamp(min(found)).value) if found else 2**63


PartKey = tuple[int, str, int]
"""Where a part sorts: its events' first time (ns), its session and its number."""


def unreadable(path: Path) -> str | None:
    """Why ``path`` is no whole Parquet file (empty, truncated, its footer garbled), or ``None``: its footer
    (the metadata) is read, not its rows."""
    import pyarrow.parquet as pq

    try:
        pq.read_metadata(path)
    except Exception as error:  # pyarrow.ArrowInvalid, OSError: not a whole Parquet file
        return f"{type(error).__name__}: {error}"
    return None


def part_of(root: Path, session: str, number: int) -> Part:
    """Part ``number`` of ``session`` in ``root``: the files of its tables that are in place."""
    files = {table: session_folder(root, table, session) / part_name(number) for table in ALL_TABLES}
    return Part(session, number, {table: path for table, path in files.items() if path.exists()})


class UnreadableFile(ValueError):
    """A file of a dataset's part that is no readable Parquet file (its pages garbled past a whole footer:
    found when read); names it (:attr:`path`)."""

    def __init__(self, path: Path, why: str) -> None:
        self.path = path
        super().__init__(printable(f"{path}: not a readable Parquet file ({why})"))


def without_unreadable(parts: Sequence[Part], error: UnreadableFile, strict: bool) -> list[Part]:
    """``parts`` but the one ``error`` found a file of unreadable, with a warning naming the file (the rest
    of the dataset is read); ``strict``, or a file of none of ``parts``: ``error`` raised."""
    bad = [part for part in parts if error.path in part.files.values()]
    if strict or not bad:
        raise error
    warnings.warn(
        f"nbagent: part {bad[0].number} of session {bad[0].session!r} skipped (the rest of the dataset is read; "
        f"strict=True refuses it): {error}",
        stacklevel=4,
    )
    return [part for part in parts if part not in bad]


def _keyed(src: Path, name: str, number: int, strict: bool = False) -> tuple[PartKey, Part] | None:
    """Part ``number`` of session ``name`` with its sort key (the metadata of its files read); a part one
    file of which is no whole Parquet file (empty, truncated): ``None``, with a warning naming the file
    (``strict``: a ValueError naming it)."""
    part = part_of(src, name, number)
    for path in part.files.values():
        why = unreadable(path)
        if why is not None:
            message = f"{path}: not a readable Parquet file ({why})"
            if strict:
                raise ValueError(message)
            warnings.warn(
                f"nbagent: part {number} of session {name!r} skipped (the rest of the dataset is read; "
                f"strict=True refuses it): {message}",
                stacklevel=5,
            )
            return None
    first = _first_time(part.files["events"]) if "events" in part.files else 2**63
    return (first, name, number), part


def in_order(found: Sequence[tuple[PartKey, Part]]) -> list[tuple[PartKey, Part]]:
    """The parts of ``found`` in the order :func:`read_parquet` stacks them: sessions in time order (by
    their first item), each session's parts in order."""
    firsts: dict[str, PartKey] = {}
    for key, part in found:
        if part.session not in firsts or key < firsts[part.session]:
            firsts[part.session] = key
    return sorted(found, key=lambda item: (firsts[item[1].session], item[1].number))


def session_id(src: Path, session: str) -> str:
    """The trace id stored in ``session``'s first runs file (else the session's name)."""
    return _stored_id(_first_part(session_folder(src, "runs", session))) or session


def dataset_parts(folder: str | Path, session: str | None = None, strict: bool = False) -> tuple[list[Part], list[str]]:
    """The parts of a dataset written by ``trace.to_parquet`` (every session, or ``session`` only) in
    the order :func:`read_parquet` stacks them (:func:`in_order`; an unfinished part skipped with a
    warning), or the one part of a folder of the earlier layout; and the sessions' trace ids in that
    order. Reads the files' metadata only; a part one file of which is no whole Parquet file is skipped
    with a warning naming it (``strict``: a ValueError). (:func:`keyed_parts` gives the parts with their
    sort keys.)"""
    found, ids = keyed_parts(folder, session, strict)
    return [part for _, part in found], ids


def keyed_parts(
    folder: str | Path, session: str | None = None, strict: bool = False
) -> tuple[list[tuple[PartKey, Part]], list[str]]:
    """:func:`dataset_parts`, each part with its sort key (:func:`new_parts` adds to them)."""
    require_pyarrow()
    src = Path(folder)
    if (src / "runs.parquet").exists() and session is None:
        files = {table: src / f"{table}.parquet" for table in ALL_TABLES if (src / f"{table}.parquet").exists()}
        return [((0, src.name, 0), Part(src.name, 0, files))], [_stored_id(src / "runs.parquet") or _old_id(src)]
    sessions = [session] if session is not None else sessions_in(src)
    if not sessions:
        raise FileNotFoundError(f"no trace in {src}: neither <table>/session=<id>/part-<n>.parquet nor runs.parquet")
    found: list[tuple[PartKey, Part]] = []
    for name in sessions:
        folders = {table: session_folder(src, table, name) for table in ALL_TABLES}
        if session is not None and not any(folder.is_dir() for folder in folders.values()):
            raise FileNotFoundError(f"no session {name!r} in {src}")
        unfinished = unfinished_parts(src, name, ALL_TABLES)
        if unfinished:
            warnings.warn(
                f"nbagent: {src}: part(s) {sorted(unfinished)} of session {name!r} skipped: unfinished (a write "
                "was interrupted; the next write to this session, or a Batch resuming it, finishes or removes them)",
                stacklevel=4,
            )
        parts = sorted(set().union(*(_parts(path).keys() for path in folders.values())) - unfinished)
        found += [keyed for number in parts if (keyed := _keyed(src, name, number, strict)) is not None]
    ordered = in_order(found)
    order = list(dict.fromkeys(part.session for _, part in ordered)) or sessions
    return ordered, [session_id(src, name) for name in order]


def new_parts(
    folder: Path, session: str | None, known: Collection[tuple[str, int]], strict: bool = False
) -> list[tuple[PartKey, Part]]:
    """The parts of a dataset (every session, or ``session`` only) committed (:func:`committed_parts`)
    and not in ``known`` (``(session, number)`` pairs), with their sort keys: the folders are listed,
    and the new parts' metadata alone read. A folder of the earlier layout has none."""
    if (folder / "runs.parquet").exists() and session is None:
        return []
    sessions = [session] if session is not None else sessions_in(folder)
    found = [
        _keyed(folder, name, number, strict)
        for name in sessions
        for number in committed_parts(folder, name)
        if (name, number) not in known
    ]
    return [keyed for keyed in found if keyed is not None]


def _old_id(src: Path) -> str:
    """The id of a folder of the earlier layout that stored none: its rows' ``trace_id``, else its name."""
    import pyarrow.parquet as pq

    for table in ALL_TABLES:
        path = src / f"{table}.parquet"
        if path.exists() and "trace_id" in pq.read_schema(path).names:
            ids = pq.read_table(path, columns=["trace_id"]).column(0).drop_null()
            if len(ids):
                return str(ids[0].as_py())
    return src.name


def read_parquet(
    folder: str | Path, session: str | None = None, strict: bool = False
) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """The tables of a dataset written by ``trace.to_parquet`` (every session, or ``session`` only; a
    session's parts in order), or of a folder of the earlier layout, with :data:`COLUMNS`' dtypes (a
    file written before the context tables or a column existed loads with no context and the column
    null); and the sessions' trace ids, in the order their rows are. A part a file of which turns out
    unreadable (its pages garbled) is skipped with a warning naming the file (``strict``: raised)."""
    parts, ids = dataset_parts(folder, session, strict)
    read: list[dict[str, pd.DataFrame]] = []
    for part in parts:
        try:
            read.append({table: read_part(part, table) for table in ALL_TABLES})
        except UnreadableFile as error:  # its pages garbled: skipped with a warning (strict: raised)
            without_unreadable([part], error, strict)
    return combine(read), ids
