"""JSON lines: one object a row of every table of a trace, with a ``table`` field, after a first line
(table ``trace``) holding the trace's id; :func:`read_jsonl` reads it back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .schema import COLUMNS, CONTEXT_TABLES, TABLES, TraceTables, frame, json_value, tables_of, trace_id_of

if TYPE_CHECKING:
    import pandas as pd


def write_jsonl(trace: TraceTables, path: str | Path) -> Path:
    """Write every row of the tables (the context ones included) as one JSON object a line, with a
    ``table`` field; the first line (table ``trace``) holds the trace's id."""
    out = Path(path)
    with out.open("w", encoding="utf-8") as handle:
        handle.write(json.dumps({"table": "trace", "trace_id": trace.trace_id}) + "\n")
        for table, df in tables_of(trace).items():
            columns = list(df.columns)
            for values in df.itertuples(index=False, name=None):
                row = {"table": table, **{name: json_value(value) for name, value in zip(columns, values)}}
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return out


def read_jsonl(path: str | Path) -> tuple[dict[str, pd.DataFrame], str]:
    """The tables of a file written by ``trace.to_jsonl`` (a column added since the file was written
    reads as null), and the trace's id."""
    rows: dict[str, list[dict[str, Any]]] = {table: [] for table in ("trace", *TABLES, *CONTEXT_TABLES)}
    with Path(path).open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            rows[row.pop("table")].append(row)
    frames = {
        table: frame(table, {name: [row.get(name) for row in rows[table]] for name in COLUMNS[table]})
        for table in (*TABLES, *CONTEXT_TABLES)
    }
    stored = rows["trace"]
    return frames, stored[0]["trace_id"] if stored else trace_id_of(frames, Path(path).stem)
