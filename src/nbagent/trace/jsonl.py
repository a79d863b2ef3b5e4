"""JSON lines by table: ``folder/<table>.jsonl`` for each table of a trace, one object a row.

Every row of a table has every column (null included), and the JSON-valued columns (a tool call's
``arguments``, the context's ``tool_calls``...) hold JSON text, so each file is one table with one
schema that DuckDB (``read_json('folder/tool_calls.jsonl')``) and polars (``pl.read_ndjson``) read
whole. Times are ISO 8601 text in UTC to the microsecond. ``folder/trace.json`` holds the trace's id
(also for a trace with no row). :func:`read_jsonl` reads such a folder back, or a file of the
earlier format (every table in one file, a ``table`` field per row).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .schema import COLUMNS, CONTEXT_TABLES, JSON_COLUMNS, TABLES, TraceTables, frame, tables_of, trace_id_of

if TYPE_CHECKING:
    import pandas as pd

ALL_TABLES = (*TABLES, *CONTEXT_TABLES)
TRACE_FILE = "trace.json"


def _plain_column(series: pd.Series, json_text: bool) -> list[Any]:
    """A column as JSON values: null for NA and NaN, times as ISO 8601 text (UTC, to the
    microsecond), JSON-valued cells as JSON text."""
    if json_text:
        return [json.dumps(value, ensure_ascii=False) for value in series.tolist()]
    if str(series.dtype).startswith("datetime64"):
        text = series.dt.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")  # one width for every time
        return [None if value is None or value != value else value for value in text.astype("object").tolist()]
    values: list[Any] = series.astype("object").where(series.notna(), None).tolist()
    return values


def write_jsonl(trace: TraceTables, folder: str | Path) -> Path:
    """Write ``folder/<table>.jsonl`` for each table and ``folder/trace.json`` (the trace's id)."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    (out / TRACE_FILE).write_text(json.dumps({"trace_id": trace.trace_id}) + "\n", encoding="utf-8")
    dumps = json.JSONEncoder(ensure_ascii=False).encode
    for table, df in tables_of(trace).items():
        names = list(df.columns)
        as_text = set(JSON_COLUMNS.get(table, ()))
        columns = [_plain_column(df[name], name in as_text) for name in names]
        with (out / f"{table}.jsonl").open("w", encoding="utf-8") as handle:
            handle.writelines(dumps(dict(zip(names, values))) + "\n" for values in zip(*columns))
    return out


def _decoded(table: str, rows: list[dict[str, Any]], json_text: bool) -> pd.DataFrame:
    columns = {name: [row.get(name) for row in rows] for name in COLUMNS[table]}
    if json_text:
        for name in JSON_COLUMNS.get(table, ()):
            columns[name] = [json.loads(v) if isinstance(v, str) else v for v in columns[name]]
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


def read_jsonl(path: str | Path) -> tuple[dict[str, pd.DataFrame], str]:
    """The tables of a folder written by ``trace.to_jsonl`` (or of a file of the earlier format; a
    column added since the file was written reads as null), and the trace's id."""
    src = Path(path)
    if src.is_file():
        return _read_old(src)
    frames = {}
    for table in ALL_TABLES:
        file = src / f"{table}.jsonl"
        rows = []
        if file.exists():
            with file.open(encoding="utf-8") as handle:
                rows = [json.loads(line) for line in handle if line.strip()]
        frames[table] = _decoded(table, rows, json_text=True)
    stored = src / TRACE_FILE
    trace_id = json.loads(stored.read_text(encoding="utf-8"))["trace_id"] if stored.exists() else None
    return frames, trace_id or trace_id_of(frames, src.name)
