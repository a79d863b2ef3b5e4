"""Reading spans back through each receiver's own client, polling until they have all arrived.

Receivers store what they get asynchronously (Phoenix batches its inserts), so each read polls,
bounded by ``READ_TIMEOUT_S``, until every expected trace or span is there.
"""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Collection
from typing import Any, TypeVar

from .servers import Receiver

READ_TIMEOUT_S = 60.0

T = TypeVar("T")


def poll(read: Callable[[], T], done: Callable[[T], bool], what: str, timeout_s: float = READ_TIMEOUT_S) -> T:
    """``read()`` again until ``done(result)``; the last result, or AssertionError at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = read()
        if done(result):
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not there after {timeout_s:.0f} s; last read: {result!r}"[:4000])
        time.sleep(0.5)


# --------------------------------------------------------------------------- MLflow


def mlflow_trace_id(trace_hex: str) -> str:
    """MLflow's id for an OTLP trace: ``tr-`` and the trace id in hex."""
    return f"tr-{trace_hex}"


def mlflow_traces(
    receiver: Receiver, trace_hexes: Collection[str], timeout_s: float = READ_TIMEOUT_S
) -> dict[str, Any]:
    """The ``mlflow.entities.Trace`` of each OTLP trace id (hex), read with ``mlflow.search_traces``."""
    import mlflow

    mlflow.set_tracking_uri(receiver.base_url)
    wanted = {mlflow_trace_id(h): h for h in trace_hexes}

    def read() -> dict[str, Any]:
        found = mlflow.search_traces(locations=[receiver.extra["experiment_id"]], return_type="list", max_results=1000)
        return {wanted[t.info.trace_id]: t for t in found if t.info.trace_id in wanted}

    return poll(read, lambda got: len(got) == len(wanted), f"MLflow traces {sorted(wanted)}", timeout_s)


def mlflow_spans_ready(receiver: Receiver, trace_hex: str, n_spans: int, timeout_s: float = READ_TIMEOUT_S) -> Any:
    """The trace once it holds ``n_spans`` spans (``MlflowClient.get_trace``)."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=receiver.base_url)

    def read() -> Any:
        try:
            return client.get_trace(mlflow_trace_id(trace_hex))
        except Exception:  # not there yet
            return None

    return poll(read, lambda t: t is not None and len(t.data.spans) >= n_spans, f"MLflow trace {trace_hex}", timeout_s)


# --------------------------------------------------------------------------- Phoenix


def phoenix_get_spans(receiver: Receiver, trace_hexes: Collection[str]) -> list[dict[str, Any]]:
    """One read of Phoenix's REST API (``GET /v1/projects/{project}/spans``, the endpoint its own
    client calls), filtered by trace id, every page."""
    spans: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params: list[tuple[str, str]] = [("limit", "100"), *(("trace_id", h) for h in trace_hexes)]
        if cursor:
            params.append(("cursor", cursor))
        url = f"{receiver.base_url}/v1/projects/{receiver.extra['project']}/spans?{urllib.parse.urlencode(params)}"
        request = urllib.request.Request(url, headers={"accept": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            payload = json.loads(response.read())
        spans.extend(payload["data"])
        cursor = payload.get("next_cursor")
        if not cursor or not payload["data"]:
            return spans


def phoenix_spans(
    receiver: Receiver, trace_hexes: Collection[str], n_spans: int, timeout_s: float = READ_TIMEOUT_S
) -> list[dict[str, Any]]:
    """The spans (Phoenix's JSON form) of the given OTLP traces, once ``n_spans`` of them arrived."""
    return poll(
        lambda: phoenix_get_spans(receiver, trace_hexes),
        lambda got: len(got) >= n_spans,
        f"Phoenix spans of {sorted(trace_hexes)}",
        timeout_s,
    )
