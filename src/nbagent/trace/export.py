"""Trace exports and loads: Parquet, JSON lines and OTLP-JSON, plus the at-a-glance summary.

Every export is made from the trace's DataFrames, so it holds redacted text only.

* Parquet: ``folder/<table>.parquet`` for the tables ``events``, ``llm_calls``, ``tool_calls`` and
  ``runs``, and the context snapshots as ``context_logs`` and ``snapshots``
  (:data:`nbagent.trace.COLUMNS`); :func:`load_parquet` gives back equal DataFrames, the context at any
  point (``context_df``) included. A folder of such folders (one per session) is one dataset for
  DuckDB, Spark or Trino; see :data:`DUCKDB_EXAMPLE`.

* JSON lines: one object a row, with a ``table`` field, after a first line holding the trace's id;
  :func:`load_jsonl` reads it back.
* OTLP-JSON: the OpenTelemetry protocol's JSON encoding, one span per run (``invoke_agent``), per
  LLM call (``chat``) and per tool call (``execute_tool``), with the GenAI semantic conventions'
  attribute names (``gen_ai.operation.name``, ``gen_ai.provider.name``, ``gen_ai.request.model``,
  ``gen_ai.request.stream``, ``gen_ai.response.time_to_first_chunk``, ``gen_ai.usage.input_tokens``,
  ``gen_ai.usage.output_tokens``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``error.type``...);
  what the conventions do not name is under ``nbagent.*``. ``error.type`` is the exception's class name (``CancelledError`` for a
  cancelled run or call) or ``_OTHER`` for a tool call that gave an error result.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .core import COLUMNS, CONTEXT_TABLES, JSON_COLUMNS, TABLES, TraceFrames, frame, pick_snapshot

if TYPE_CHECKING:
    import pandas as pd

_CHUNK_KIND = "ModelClientStreamingChunkEvent"

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


class LoadedTrace(TraceFrames):
    """A trace read back from Parquet or JSON lines: its DataFrames, views and exports."""

    def __init__(self, frames: dict[str, pd.DataFrame], trace_id: str) -> None:
        self._frames = frames
        self.trace_id = trace_id

    def events_df(self, include_chunks: bool = True) -> pd.DataFrame:
        events = self._frames["events"]
        if include_chunks:
            return events.copy()
        return events[events["kind"] != _CHUNK_KIND].reset_index(drop=True)

    def llm_calls_df(self) -> pd.DataFrame:
        return self._frames["llm_calls"].copy()

    def tool_calls_df(self) -> pd.DataFrame:
        return self._frames["tool_calls"].copy()

    def runs_df(self) -> pd.DataFrame:
        return self._frames["runs"].copy()

    def context_df(self, run_id: str | None = None, seq: int | None = None, agent: str | None = None) -> pd.DataFrame:
        import pandas as pd

        runs = self._frames["runs"]
        snapshots = self._frames["snapshots"]
        agents = {str(run): str(name) for run, name in zip(runs["run_id"], runs["agent"]) if not pd.isna(name)}
        index = pick_snapshot(
            self._frames["events"]["run_id"].astype("object").tolist(),
            agents,
            list(zip(snapshots["event_row"].tolist(), snapshots["agent"].astype("object").tolist())),
            run_id,
            seq,
            agent,
        )
        snapshot = snapshots.iloc[index]
        logs = self._frames["context_logs"]
        rows = logs[logs["log"] == snapshot["log"]].iloc[: int(snapshot["length"])]
        return frame("context", {name: rows[name].astype("object").tolist() for name in COLUMNS["context"]})

    def context_tables(self) -> dict[str, pd.DataFrame]:
        return {table: self._frames[table].copy() for table in CONTEXT_TABLES}

    def __repr__(self) -> str:
        return f"LoadedTrace({len(self._frames['events'])} items, {len(self._frames['runs'])} runs)"


def _frames(trace: TraceFrames) -> dict[str, pd.DataFrame]:
    return {
        "events": trace.events_df(),
        "llm_calls": trace.llm_calls_df(),
        "tool_calls": trace.tool_calls_df(),
        "runs": trace.runs_df(),
        **trace.context_tables(),
    }


def _empty(table: str) -> pd.DataFrame:
    return frame(table, {name: [] for name in COLUMNS[table]})


def _trace_id(frames: dict[str, pd.DataFrame], fallback: str) -> str:
    """The id in the rows, for files written before the id was stored apart; else ``fallback``."""
    for df in frames.values():
        if len(df) and "trace_id" in df:
            return str(df["trace_id"].iloc[0])
    return fallback


# The trace's id, kept apart from the rows so that a trace with none keeps it: a Parquet file's
# schema metadata, and the first JSON line (table "trace").
_TRACE_ID_KEY = b"nbagent.trace_id"


# --------------------------------------------------------------------------- Parquet


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


def write_parquet(trace: TraceFrames, folder: str | Path) -> Path:
    """Write ``folder/<table>.parquet`` for each table; JSON-valued columns are stored as JSON text."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    for table, df in _frames(trace).items():
        df = df.copy()
        for column in JSON_COLUMNS.get(table, ()):
            df[column] = df[column].map(json.dumps).astype("string")
        arrow = pa.Table.from_pandas(df, schema=_arrow_schema(table), preserve_index=False)
        metadata = {**(arrow.schema.metadata or {}), _TRACE_ID_KEY: trace.trace_id.encode()}
        pq.write_table(arrow.replace_schema_metadata(metadata), out / f"{table}.parquet")
    return out


def load_parquet(folder: str | Path) -> LoadedTrace:
    """Read a folder written by ``trace.to_parquet`` back into DataFrames equal to the saved ones (a
    folder written before the context tables or a column existed loads with no context and the
    column null)."""
    import pandas as pd

    src = Path(folder)
    frames: dict[str, pd.DataFrame] = {}
    for table in (*TABLES, *CONTEXT_TABLES):
        path = src / f"{table}.parquet"
        if table in CONTEXT_TABLES and not path.exists():
            frames[table] = _empty(table)
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
    return LoadedTrace(frames, stored.decode() if stored else _trace_id(frames, src.name))


# --------------------------------------------------------------------------- JSON lines


def _plain(value: Any) -> Any:
    """A cell as a JSON value: NA and NaN as null, timestamps as ISO 8601 text to the microsecond."""
    import pandas as pd

    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, pd.Timestamp):  # one width for every time (a whole second keeps its fraction)
        return value.isoformat(timespec="microseconds")
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value


def write_jsonl(trace: TraceFrames, path: str | Path) -> Path:
    """Write every row of the tables (the context ones included) as one JSON object a line, with a
    ``table`` field; the first line (table ``trace``) holds the trace's id."""
    out = Path(path)
    with out.open("w", encoding="utf-8") as handle:
        handle.write(json.dumps({"table": "trace", "trace_id": trace.trace_id}) + "\n")
        for table, df in _frames(trace).items():
            columns = list(df.columns)
            for values in df.itertuples(index=False, name=None):
                row = {"table": table, **{name: _plain(value) for name, value in zip(columns, values)}}
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return out


def load_jsonl(path: str | Path) -> LoadedTrace:
    """Read a file written by ``trace.to_jsonl`` back into the trace's DataFrames (a column added
    since the file was written reads as null)."""
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
    return LoadedTrace(frames, stored[0]["trace_id"] if stored else _trace_id(frames, Path(path).stem))


# --------------------------------------------------------------------------- OTLP-JSON


def _attribute(key: str, value: Any) -> dict[str, Any] | None:
    value = _plain(value)
    if value is None:
        return None
    if isinstance(value, bool):
        typed: dict[str, Any] = {"boolValue": value}
    elif isinstance(value, int):
        typed = {"intValue": str(value)}
    elif isinstance(value, float):
        typed = {"doubleValue": value}
    elif isinstance(value, list):
        typed = {"arrayValue": {"values": [{"stringValue": str(item)} for item in value]}}
    else:
        typed = {"stringValue": str(value)}
    return {"key": key, "value": typed}


def _error_type(error: str | None) -> str | None:
    """The class name an error text starts with (``"ValueError: ..."``), else ``_OTHER``."""
    if error is None:
        return None
    head = error.split(":", 1)[0].strip()
    return head if head.isidentifier() else "_OTHER"


def _flag(value: Any) -> bool:
    """A nullable boolean cell as a bool (null: False)."""
    import pandas as pd

    return not pd.isna(value) and bool(value)


def _span_id(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


def _trace_hex(run_id: str) -> str:
    digits = run_id.replace("-", "")
    if len(digits) == 32 and all(c in "0123456789abcdef" for c in digits):
        return digits
    return hashlib.sha256(run_id.encode()).hexdigest()[:32]


def _span(
    trace_hex: str,
    span_id: str,
    parent: str | None,
    name: str,
    kind: int,
    start: Any,
    duration_s: Any,
    attributes: dict[str, Any],
    error: str | None,
) -> dict[str, Any]:
    import pandas as pd

    start_ns = 0 if start is None or pd.isna(start) else int(start.value)
    duration = 0.0 if duration_s is None or pd.isna(duration_s) else float(duration_s)
    span: dict[str, Any] = {
        "traceId": trace_hex,
        "spanId": span_id,
        "name": name,
        "kind": kind,
        "startTimeUnixNano": str(start_ns),
        "endTimeUnixNano": str(start_ns + round(duration * 1e9)),
        "attributes": [a for key, value in attributes.items() if (a := _attribute(key, value)) is not None],
        "status": {"code": 2, "message": error} if error else {"code": 1},
    }
    if parent is not None:
        span["parentSpanId"] = parent
    return span


def otlp_json(trace: TraceFrames) -> dict[str, Any]:
    """The trace as an OTLP-JSON ``ExportTraceServiceRequest`` (one OpenTelemetry trace per run)."""
    import pandas as pd

    runs, llm_calls, tool_calls = trace.runs_df(), trace.llm_calls_df(), trace.tool_calls_df()
    spans: list[dict[str, Any]] = []
    run_spans: dict[str, str] = {}
    # A run's provider: its first model call's (an agent has one client).
    providers = llm_calls.drop_duplicates("run_id").set_index("run_id")["provider"].astype("object")

    def text(value: Any) -> str | None:
        return None if value is None or pd.isna(value) else str(value)

    for run in runs.itertuples(index=False):
        run_id = str(run.run_id)
        run_spans[run_id] = _span_id("run", run_id)
        run_error = text(run.error) or ("CancelledError" if run.status == "cancelled" else None)
        spans.append(
            _span(
                _trace_hex(run_id), run_spans[run_id], None, f"invoke_agent {run.agent}", 1,
                run.started_at, run.duration_s,
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.provider.name": text(providers.get(run_id)),
                    "gen_ai.agent.name": text(run.agent),
                    "gen_ai.conversation.id": trace.trace_id,
                    "nbagent.run_id": run_id,
                    "nbagent.status": text(run.status),
                    "gen_ai.usage.input_tokens": run.prompt_tokens,
                    "gen_ai.usage.output_tokens": run.completion_tokens,
                    "error.type": _error_type(run_error),
                },
                text(run.error) or (f"run {run.status}" if run.status == "cancelled" else None),
            )
        )  # fmt: skip
    for call in llm_calls.itertuples(index=False):
        run_id = str(call.run_id)
        spans.append(
            _span(
                _trace_hex(run_id), _span_id("llm", run_id, str(call.call_index)), run_spans.get(run_id),
                f"chat {call.model}", 3, call.started_at, call.duration_s,
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": text(call.provider),
                    "gen_ai.request.model": text(call.model),
                    "gen_ai.request.stream": True if _flag(call.streaming) else None,  # set only when streamed
                    "gen_ai.response.finish_reasons": [call.finish_reason] if text(call.finish_reason) else None,
                    "gen_ai.response.time_to_first_chunk": call.ttft_s,
                    "gen_ai.usage.input_tokens": call.prompt_tokens,
                    "gen_ai.usage.output_tokens": call.completion_tokens,
                    "gen_ai.agent.name": text(call.agent),
                    "nbagent.purpose": text(call.purpose),
                    "nbagent.iteration": call.iteration,
                    "nbagent.n_tool_calls": call.n_tool_calls,
                    "error.type": _error_type(text(call.error)),
                },
                text(call.error),
            )
        )  # fmt: skip
    for tool in tool_calls.itertuples(index=False):
        run_id = str(tool.run_id)
        failed = _flag(tool.is_error)
        spans.append(
            _span(
                _trace_hex(run_id), _span_id("tool", run_id, str(tool.call_id)), run_spans.get(run_id),
                f"execute_tool {tool.tool_name}", 1, tool.started_at, tool.duration_s,
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": text(tool.tool_name),
                    "gen_ai.tool.type": "function",
                    "gen_ai.tool.call.id": text(tool.call_id),
                    "gen_ai.tool.call.arguments": json.dumps(tool.arguments, ensure_ascii=False),
                    "gen_ai.tool.call.result": None if failed else text(tool.result),  # on success only
                    "nbagent.iteration": tool.iteration,
                    "nbagent.concurrent_with": tool.concurrent_with,
                    "error.type": "_OTHER" if failed else None,
                },
                text(tool.result) if failed else None,
            )
        )  # fmt: skip
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [_attribute("service.name", "nbagent")]},
                "scopeSpans": [{"scope": {"name": "nbagent.trace"}, "spans": spans}],
            }
        ]
    }


# --------------------------------------------------------------------------- summary


def _quantile(values: pd.Series, q: float) -> float:
    values = values.dropna()
    return float(values.quantile(q)) if len(values) else math.nan


def summarize(runs: pd.DataFrame, llm_calls: pd.DataFrame, tool_calls: pd.DataFrame) -> pd.Series:
    """The figures of ``trace.summary()``, as a Series."""
    import pandas as pd

    status = runs["status"].astype("object")
    n_tools = len(tool_calls)
    errors = int(tool_calls["is_error"].fillna(False).sum())
    return pd.Series(
        {
            "runs": len(runs),
            "runs_ok": int((status == "ok").sum()),
            "runs_error": int((status == "error").sum()),
            "runs_cancelled": int((status == "cancelled").sum()),
            "llm_calls": len(llm_calls),
            "prompt_tokens": int(llm_calls["prompt_tokens"].sum()),
            "completion_tokens": int(llm_calls["completion_tokens"].sum()),
            "tool_calls": n_tools,
            "tool_errors": errors,
            "tool_error_rate": errors / n_tools if n_tools else math.nan,
            "run_p50_s": _quantile(runs["duration_s"], 0.5),
            "run_p95_s": _quantile(runs["duration_s"], 0.95),
            "llm_p50_s": _quantile(llm_calls["duration_s"], 0.5),
            "llm_p95_s": _quantile(llm_calls["duration_s"], 0.95),
            "ttft_p50_s": _quantile(llm_calls["ttft_s"], 0.5),
            "ttft_p95_s": _quantile(llm_calls["ttft_s"], 0.95),
            "tool_p50_s": _quantile(tool_calls["duration_s"], 0.5),
            "tool_p95_s": _quantile(tool_calls["duration_s"], 0.95),
        },
        dtype="object",
        name="trace summary",
    )
