"""OTLP-JSON: the OpenTelemetry protocol's JSON encoding of a trace.

One span per run (``invoke_agent``), per LLM call (``chat``) and per tool call (``execute_tool``), with
the GenAI semantic conventions' attribute names (``gen_ai.operation.name``, ``gen_ai.provider.name``,
``gen_ai.request.model``, ``gen_ai.request.stream``, ``gen_ai.response.time_to_first_chunk``,
``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``, ``gen_ai.tool.name``,
``gen_ai.tool.call.id``, ``error.type``...); what the conventions do not name is under
``nbagent.*``. ``error.type`` is the exception's class name (``CancelledError`` for a cancelled run
or call) or ``_OTHER`` for a tool call that gave an error result. Made from the trace's frames, so it
holds redacted text only.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .schema import TraceTables, json_value


def _attribute(key: str, value: Any) -> dict[str, Any] | None:
    value = json_value(value)
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


def otlp_json(trace: TraceTables) -> dict[str, Any]:
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
