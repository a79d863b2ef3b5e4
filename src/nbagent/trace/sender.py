"""Sending a trace as it is made: :class:`OTLPRecorder` posts each run to an OTLP/HTTP endpoint as it ends.

It records the sources it is attached to into a trace of its own (``recorder.trace``), and when one
of their runs ends it sends that run's spans (protobuf, ``Content-Type: application/x-protobuf``) and
clears what the run no longer needs, so a long session streams to a collector in constant memory.
A run handed the conversation by a handoff links to the handing run's span, across sends.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..records import RunFinished, RunItem, RunSource
from ..redact import Redactor
from .live import Trace
from .otlp import content_default, export_request, post, require_proto, spans_of

if TYPE_CHECKING:
    from .recording import AgentRecorder

log = logging.getLogger(__name__)


class _Forward:
    """What sits in a source's ``recorders``: records into the recorder's trace, sends at a run's end."""

    __slots__ = ("inner", "owner")

    def __init__(self, inner: AgentRecorder[Trace], owner: OTLPRecorder) -> None:
        self.inner = inner
        self.owner = owner

    def record(self, item: RunItem) -> None:
        self.inner.record(item)
        if type(item) is RunFinished:
            self.owner.send_run(item.run_id)


class OTLPRecorder:
    """Posts each run of the sources it is attached to, as the run ends, to ``endpoint`` (OTLP/HTTP).

    ``headers`` go with every request (``x-mlflow-experiment-id``, an API key...); ``content``: add
    the messages (default: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``); ``redact``: as
    for a :class:`Trace`. A failed send is logged and counted in ``errors`` (``raise_errors=True``:
    raised into the run that ended), never retried. ``sent`` counts the spans sent.

        recorder = OTLPRecorder("http://127.0.0.1:4318/v1/traces").attach(agent)
    """

    def __init__(
        self,
        endpoint: str,
        headers: Mapping[str, str] | None = None,
        *,
        content: bool | None = None,
        redact: Redactor | None | str = "default",
        trace_id: str | None = None,
        timeout: float = 10.0,
        raise_errors: bool = False,
    ) -> None:
        require_proto()
        self.endpoint = endpoint
        self.headers = dict(headers or {})
        self.content = content_default() if content is None else content
        self.timeout = timeout
        self.raise_errors = raise_errors
        self.trace = Trace(redact=redact, trace_id=trace_id)  # type: ignore[arg-type]
        self.sent = 0
        self.errors: list[str] = []
        self._handoffs: dict[str, tuple[str, str]] = {}
        self._forwards: dict[int, _Forward] = {}

    def attach(self, source: RunSource) -> OTLPRecorder:
        """Send ``source``'s runs from its next run on; returns the recorder."""
        if id(source) not in self._forwards:
            inner = self.trace.attach(source)
            source.recorders.remove(inner)  # the forward records into it, and sends
            forward = self._forwards[id(source)] = _Forward(inner, self)
            source.recorders.append(forward)
        return self

    def detach(self, source: RunSource) -> None:
        """Stop sending ``source``'s runs."""
        forward = self._forwards.pop(id(source), None)
        if forward is not None and forward in source.recorders:
            source.recorders.remove(forward)

    def send_run(self, run_id: str) -> int:
        """Send the spans of run ``run_id`` now (done at its end); the number of spans sent."""
        try:
            spans = spans_of(self.trace, self.content, runs={run_id}, handoffs=self._handoffs)
            if spans:
                post(self.endpoint, export_request(spans), self.headers, self.timeout)
            self.sent += len(spans)
            return len(spans)
        except Exception as error:
            self.errors.append(f"run {run_id}: {type(error).__name__}: {error}")
            log.warning("nbagent: sending run %s to %s failed: %s", run_id, self.endpoint, error)
            if self.raise_errors:
                raise
            return 0
        finally:
            self._forget(run_id)

    def _forget(self, run_id: str) -> None:
        """After a run is sent: forget all when no other run is going, else only that run's rows (the
        runs still going keep everything, so each is sent whole when it ends)."""
        store = self.trace.store
        if store.in_progress() - {run_id}:
            store.drop_runs({run_id})
        else:
            self.trace.clear()
