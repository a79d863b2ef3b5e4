"""JSON lines by table: ``folder/<table>.jsonl`` for each table of a trace, one object a row.

Every row of a table has every column (null included), each column one JSON type (text, integer,
number or boolean; times are ISO 8601 text in UTC to the microsecond; the JSON-valued columns, a tool
call's ``arguments``, the context's ``tool_calls``..., hold JSON text), so each file is one table
that readers take whole with their defaults: ``pl.read_ndjson(path)``, DuckDB's
``read_json_auto(path)``.

Those readers infer a column's type from the first lines only (polars from 100, DuckDB from 20,480),
and a column null in all of them fails later (polars: "got non-null value for NULL-typed column") or
loses its values (DuckDB reads them as NULL). So each file opens with the rows that show every
column's type: for each column that has a value, its first row with one is written first (and, for
a text column whose first text looks like a UUID, a date or a time, which DuckDB would then read as
one and fail on a later text that is not, its first text that does not), then the other rows in
order. ``folder/trace.json`` holds the
trace's id and, per table, those rows' positions (``"first"``) and the number of lines (``"rows"``),
so :func:`read_jsonl` gives the rows back in their order and refuses a file with lines added or
removed. Readers of the file alone order by :data:`ORDER_KEYS` (events by ``timestamp`` then ``seq``:
``seq`` alone is a position in its run).

A column null in every row has no type to show: polars reads it as ``Null``, DuckDB as ``"NULL"``.
A table with no row (``tool_calls`` of a trace without tool calls) is an empty file, which DuckDB
reads as no row and ``pl.read_ndjson`` with its defaults refuses ("Cannot infer NDJSON types on empty
reader"): JSON lines have no way to say a table's columns without a row.
For the same types whatever the rows, ``folder/schema.json`` gives each table's columns with their
DuckDB type and pandas dtype; :func:`jsonl_schema` turns it into what ``pl.read_ndjson(schema=...)``
or DuckDB's ``read_json(columns=...)`` take. Each file becomes visible whole (written, then renamed).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..redact import valid_text
from .combine import ALL_TABLES
from .schema import (
    COLUMNS,
    JSON_COLUMNS,
    ColumnError,
    TraceTables,
    column,
    frame,
    json_cell,
    tables_of,
    trace_id_of,
)

if TYPE_CHECKING:
    import pandas as pd

TRACE_FILE = "trace.json"
ORDER_KEYS = {
    "events": ("timestamp", "seq"),
    "llm_calls": ("started_at", "call_index"),
    "tool_calls": ("started_at",),
    "runs": ("started_at",),
    "context_logs": ("log", "position"),
    "snapshots": ("event_row",),
}
"""Per table, the columns that put the rows of its file back in the trace's order (what readers of
the file alone sort by; :func:`read_jsonl` uses ``trace.json``)."""
SCHEMA_FILE = "schema.json"
# pandas dtype -> DuckDB type of the column in the JSON lines (JSON-valued columns are JSON text)
DUCKDB_TYPES = {
    "category": "VARCHAR",
    "string": "VARCHAR",
    "object": "VARCHAR",
    "Int64": "BIGINT",
    "float64": "DOUBLE",
    "boolean": "BOOLEAN",
    "datetime64[ns, UTC]": "TIMESTAMPTZ",
}


def _plain_column(series: pd.Series, json_text: bool) -> list[Any]:
    """A column as JSON values: null for NA and NaN, times as ISO 8601 text (UTC, to the
    microsecond), JSON-valued cells as JSON text (``None`` as null)."""
    if json_text:
        return [None if value is None else json.dumps(value, ensure_ascii=False) for value in series.tolist()]
    if str(series.dtype).startswith("datetime64"):
        text = series.dt.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")  # one width for every time
        return [None if value is None or value != value else value for value in text.tolist()]
    import pandas as pd

    missing = pd.NA
    # Value by value (pandas' astype/where/tolist took 0.8 ms a column, a third of writing a small trace): the
    # missing values of the tables' dtypes are None, pd.NA and float NaN (times and JSON cells go above).
    return [
        None if value is None or value is missing or (isinstance(value, float) and value != value) else value
        for value in series.tolist()
    ]


# A text DuckDB's read_json_auto may read as a UUID, DATE, TIME or TIMESTAMP (generously: a text
# matched here that DuckDB keeps as text only moves one more row up).
_TYPED_TEXT = re.compile(
    r"\{?[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}\}?"
    r"|\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?\s*(?:Z|[+-]\d{2}(?::?\d{2})?)?)?"
    r"|\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?",
)


def _first_plain_text(values: list[Any], start: int) -> int | None:
    """The first row from ``start`` whose text is not one :data:`_TYPED_TEXT` matches."""
    typed: dict[str, bool] = {}  # ids repeat (trace_id, run_id): match each text once
    for index in range(start, len(values)):
        value = values[index]
        if isinstance(value, str):
            if value not in typed:
                typed[value] = _TYPED_TEXT.fullmatch(value.strip()) is not None
            if not typed[value]:
                return index
    return None


def first_rows(columns: Iterable[list[Any]], times: Iterable[bool] = ()) -> list[int]:
    """The rows to write first so that every column with a value shows its type: each column's first
    row with a value, once each, in order. For a text column whose first text looks like a UUID, a
    date or a time (DuckDB reads a column as such when every text it samples does, then fails on a
    later text that is not: "Could not convert string ... to UUID"), also its first text that does
    not, if any. ``times``: per column, whether it holds times (skipped: every text is one)."""
    found: set[int] = set()
    marks = list(times)
    for position, values in enumerate(columns):
        is_time = position < len(marks) and marks[position]
        index = next((i for i, value in enumerate(values) if value is not None), None)
        if index is None:
            continue
        found.add(index)
        first = values[index]
        if not is_time and isinstance(first, str) and _TYPED_TEXT.fullmatch(first.strip()):
            plain = _first_plain_text(values, index + 1)
            if plain is not None:
                found.add(plain)
    return sorted(found)


def _write_whole(path: Path, lines: Iterable[str]) -> None:
    """Write ``path`` under a temporary name beside it, then rename it: it becomes visible whole."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with temporary.open("w", encoding="utf-8") as handle:
            handle.writelines(lines)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def schema_document() -> dict[str, Any]:
    """What ``schema.json`` holds: per table, each column's DuckDB type and pandas dtype, in order."""
    return {
        table: {name: {"duckdb": DUCKDB_TYPES[dtype], "pandas": dtype} for name, (dtype, _) in COLUMNS[table].items()}
        for table in ALL_TABLES
    }


def write_jsonl(trace: TraceTables, folder: str | Path) -> Path:
    """Write ``folder/<table>.jsonl`` for each table, ``folder/schema.json`` and ``folder/trace.json``
    (the trace's id and the rows each file opens with)."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    dumps = json.JSONEncoder(ensure_ascii=False).encode
    moved: dict[str, list[int]] = {}
    counts: dict[str, int] = {}
    for table, df in tables_of(trace).items():
        names = list(df.columns)
        as_text = set(JSON_COLUMNS.get(table, ()))
        columns = [_plain_column(series, name in as_text) for name, series in df.items()]
        times = [str(dtype).startswith("datetime64") for dtype in df.dtypes]
        first = moved[table] = first_rows(columns, times)
        rows = list(zip(*columns))
        counts[table] = len(rows)
        chosen = set(first)
        order = [*first, *(i for i in range(len(rows)) if i not in chosen)]
        lines = (valid_text(dumps(dict(zip(names, rows[i])))) + "\n" for i in order)  # a lone surrogate: U+FFFD
        _write_whole(out / f"{table}.jsonl", lines)
    _write_whole(out / SCHEMA_FILE, [json.dumps(schema_document(), indent=1) + "\n"])
    meta = {"trace_id": trace.trace_id, "first": moved, "rows": counts}
    _write_whole(out / TRACE_FILE, [json.dumps(meta) + "\n"])
    return out


def jsonl_schema(table: str, engine: Literal["duckdb", "polars"] = "duckdb") -> dict[str, Any]:
    """The columns of ``table``'s JSON lines file with their types, for a reader that takes them:
    ``duckdb.read_json(path, columns=jsonl_schema(table))`` or
    ``pl.read_ndjson(path, schema=jsonl_schema(table, "polars"))`` (times as UTC datetimes, the
    JSON-valued columns as text), whatever the rows hold. The same as ``schema.json`` in the folder."""
    if table not in COLUMNS or table == "context":
        raise ValueError(f"jsonl_schema: table {table!r} is not one of {', '.join(ALL_TABLES)}")
    if engine == "duckdb":
        return {name: DUCKDB_TYPES[dtype] for name, (dtype, _) in COLUMNS[table].items()}
    if engine != "polars":
        raise ValueError(f"jsonl_schema: engine {engine!r} is neither 'duckdb' nor 'polars'")
    import polars as pl

    types: dict[str, Any] = {
        "VARCHAR": pl.String,
        "BIGINT": pl.Int64,
        "DOUBLE": pl.Float64,
        "BOOLEAN": pl.Boolean,
        "TIMESTAMPTZ": pl.Datetime("us", "UTC"),
    }
    return {name: types[DUCKDB_TYPES[dtype]] for name, (dtype, _) in COLUMNS[table].items()}


def _decoded(table: str, rows: list[dict[str, Any]], json_text: bool) -> pd.DataFrame:
    columns = {name: [row.get(name) for row in rows] for name in COLUMNS[table]}
    if json_text:
        for name in JSON_COLUMNS.get(table, ()):
            columns[name] = [json_cell(v) if isinstance(v, str) else v for v in columns[name]]
    return frame(table, columns)


def _read_old(path: Path) -> tuple[dict[str, pd.DataFrame], str]:
    rows: dict[str, list[dict[str, Any]]] = {table: [] for table in ("trace", *ALL_TABLES)}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            rows[row.pop("table")].append(row)
    frames = {table: _decoded(table, rows[table], json_text=False) for table in ALL_TABLES}
    stored = rows["trace"]
    return frames, stored[0]["trace_id"] if stored else trace_id_of(frames, path.stem)


def _in_order(rows: list[dict[str, Any]], first: list[Any], count: object, file: Path) -> list[dict[str, Any]]:
    """The rows of a file that opens with the rows at positions ``first``, in their order; ``count``:
    how many lines it was written with (``None`` in folders written before it was kept)."""
    if count is not None and count != len(rows):  # lines added or removed: the order is not known
        raise ValueError(
            f"{file}: {len(rows)} lines where {TRACE_FILE} says {count} were written "
            "(was the file changed after it was written?)"
        )
    if not first:
        return rows
    if (
        len(first) > len(rows)
        or not all(type(i) is int and 0 <= i < len(rows) for i in first)
        or len(set(first)) != len(first)  # a position twice
    ):
        raise ValueError(
            f"{file}: {TRACE_FILE}'s first rows {first[:5]}... do not fit its {len(rows)} lines "
            "(was the file changed after it was written?)"
        )
    ordered: list[dict[str, Any] | None] = [None] * len(rows)
    for position, row in zip(first, rows):
        ordered[position] = row
    rest = iter(rows[len(first) :])
    return [row if row is not None else next(rest) for row in ordered]


def _row(line: str, file: Path, number: int) -> dict[str, Any]:
    """Line ``number`` of ``file`` decoded: a JSON object, else a ValueError naming the file and the line."""
    try:
        row = json.loads(line)
    except (json.JSONDecodeError, RecursionError) as error:
        why = "nested deeper than Python's JSON decoder goes" if isinstance(error, RecursionError) else str(error)
        raise ValueError(f"{file}: line {number} is not a row of JSON ({why})") from None
    if not isinstance(row, dict):
        raise ValueError(f"{file}: line {number} is not a JSON object (a row is one)")
    return row


def _lines(file: Path) -> Iterable[tuple[int, str]]:
    """The lines of ``file`` that are not blank, numbered from 1; one that is not UTF-8: a ValueError
    naming the file and the line."""
    with file.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                why = f"{error.reason} at its byte {error.start}"
                raise ValueError(f"{file}: line {number} is not UTF-8 text ({why})") from None
            if line.strip():
                yield number, line


def _meta(stored: Path) -> dict[str, Any]:
    """``trace.json`` read (empty when there is none); not a JSON object: a ValueError naming it."""
    if not stored.exists():
        return {}
    try:
        meta = json.loads(stored.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise ValueError(f"{stored}: not the JSON {TRACE_FILE} nbagent writes ({error})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{stored}: not the JSON object {TRACE_FILE} nbagent writes")
    return meta


def _bad_line(rows: list[dict[str, Any]], numbers: list[int], error: ColumnError) -> str:
    """Which line of ``rows`` (numbered ``numbers``) holds the value ``error`` found, as ``"line n, "``
    (empty if none alone does)."""
    for number, row in zip(numbers, rows, strict=True):
        try:
            column(error.dtype, [row.get(error.column)])
        except (TypeError, ValueError, OverflowError):
            return f"line {number}, "
    return ""


def read_jsonl(path: str | Path) -> tuple[dict[str, pd.DataFrame], str]:
    """The tables of a folder written by ``trace.to_jsonl`` (or of a file of the earlier format; a
    column added since the file was written reads as null), rows in their order, and the trace's id.
    A line, a value or ``trace.json`` that cannot be read: a ValueError naming the file and the line
    (and the column)."""
    src = Path(path)
    if src.is_file():
        return _read_old(src)
    meta = _meta(src / TRACE_FILE)
    first = meta.get("first") or {}
    counts = meta.get("rows") or {}
    frames = {}
    for table in ALL_TABLES:
        file = src / f"{table}.jsonl"
        rows, numbers = [], []
        if file.exists():
            for number, line in _lines(file):
                rows.append(_row(line, file, number))
                numbers.append(number)
        try:
            frames[table] = _decoded(
                table, _in_order(rows, list(first.get(table, ())), counts.get(table), file), json_text=True
            )
        except ColumnError as error:
            raise ValueError(f"{file}: {_bad_line(rows, numbers, error)}{error}") from None
    return frames, meta.get("trace_id") or trace_id_of(frames, src.name)
