"""Parquet: ``folder/<table>.parquet`` for each table of a trace (needs pyarrow: ``nbagent[parquet]``).

The tables ``events``, ``llm_calls``, ``tool_calls`` and ``runs``, and the context snapshots as
``context_logs`` and ``snapshots`` (:data:`nbagent.trace.COLUMNS`); :func:`read_parquet` gives back
equal DataFrames (``nbagent.load_parquet`` wraps them in a ``LoadedTrace``). Every file has the same
schema for every trace, so a folder of such folders (one per session) is one dataset for DuckDB,
Spark or Trino; see :data:`DUCKDB_EXAMPLE`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .schema import COLUMNS, CONTEXT_TABLES, JSON_COLUMNS, TABLES, TraceTables, empty, tables_of, trace_id_of

if TYPE_CHECKING:
    import pandas as pd

# Per tool, over every session saved under traces/<session>/: calls, error rate, p95 latency.
DUCKDB_EXAMPLE = """
SELECT tool_name,
       count(*) AS calls,
       count(DISTINCT trace_id) AS sessions,
       avg(CAST(is_error AS INTEGER)) AS error_rate,
       quantile_cont(duration_s, 0.95) AS p95_s
FROM read_parquet('traces/*/tool_calls.parquet')
GROUP BY tool_name
ORDER BY calls DESC, tool_name
"""

# The trace's id, kept apart from the rows so that a trace with none keeps it: the schema metadata.
_TRACE_ID_KEY = b"nbagent.trace_id"


def require_pyarrow() -> None:
    """Raise an ImportError that names the extra to install when pyarrow is missing."""
    try:
        import pyarrow  # noqa: F401
    except ImportError as error:
        raise ImportError("Parquet files need pyarrow: pip install 'nbagent[parquet]'", name="pyarrow") from error


def _arrow_schema(table: str) -> Any:
    """The Parquet schema of ``table``, the same for every trace: an all-null column keeps its type, so
    a folder of sessions is one dataset. Timestamps to the microsecond (Spark rejects nanoseconds)."""
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


def write_parquet(trace: TraceTables, folder: str | Path) -> Path:
    """Write ``folder/<table>.parquet`` for each table; JSON-valued columns are stored as JSON text."""
    require_pyarrow()
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    for table, df in tables_of(trace).items():
        df = df.copy()
        for column in JSON_COLUMNS.get(table, ()):
            df[column] = df[column].map(json.dumps).astype("string")
        arrow = pa.Table.from_pandas(df, schema=_arrow_schema(table), preserve_index=False)
        metadata = {**(arrow.schema.metadata or {}), _TRACE_ID_KEY: trace.trace_id.encode()}
        pq.write_table(arrow.replace_schema_metadata(metadata), out / f"{table}.parquet")
    return out


def read_parquet(folder: str | Path) -> tuple[dict[str, pd.DataFrame], str]:
    """The tables of a folder written by ``trace.to_parquet``, equal to the saved ones (a folder written
    before the context tables or a column existed loads with no context and the column null), and
    the trace's id."""
    require_pyarrow()
    import pandas as pd

    src = Path(folder)
    frames: dict[str, pd.DataFrame] = {}
    for table in (*TABLES, *CONTEXT_TABLES):
        path = src / f"{table}.parquet"
        if table in CONTEXT_TABLES and not path.exists():
            frames[table] = empty(table)
            continue
        df = pd.read_parquet(path, engine="pyarrow")
        for column in COLUMNS[table].keys() - df.columns:  # added since the folder was written
            df[column] = pd.Series([None] * len(df), dtype="object")
        df = df[list(COLUMNS[table])]
        for column in JSON_COLUMNS.get(table, ()):
            values = [json.loads(value) if isinstance(value, str) else None for value in df[column]]
            df[column] = pd.Series(values, dtype="object")
        for column, (dtype, _) in COLUMNS[table].items():
            if str(df[column].dtype) != dtype:
                df[column] = df[column].astype(dtype)
        frames[table] = df
    import pyarrow.parquet as pq

    stored = (pq.read_schema(src / "runs.parquet").metadata or {}).get(_TRACE_ID_KEY)
    return frames, stored.decode() if stored else trace_id_of(frames, src.name)
