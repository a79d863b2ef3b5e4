"""Sending a trace as it is made: :class:`OTLPRecorder` posts each run to an OTLP/HTTP endpoint once it ends.

It records the sources it is attached to into traces of its own and, when one of their runs ends,
hands the run to a background thread that builds its spans (protobuf, ``Content-Type:
application/x-protobuf``) and posts them, so the event loop never waits for the collector nor pays
for building the spans: recording a run's end costs an append. The spans are built from the
generation's rows (``Trace.span_tables``), not from its frames: 1.5-3 ms a send of a tool run where
building the frames took 45-420 ms, holding the interpreter lock (and so the loop) in long stretches
and making full garbage collections more frequent (``bench/bench_otlp.py``). No single call of a send
holds the lock long whatever a run's texts: long texts are masked (:func:`nbagent.redact.mask`),
JSON-escaped, encoded and copied into the request in pieces (:func:`.otlp.request_blocks`), posted
block by block; with 5 MB tool outputs the sender's longest stretch without a Python call is ~1.4 ms
of its CPU time, where serializing the request as one message held it 50-350 ms.

**Generations.** Runs are recorded into a *generation*, a trace of their own. When no run of a
generation is going any more it is sealed, handed to the sender, and the next runs start a new
one, so the sender reads a trace nothing writes to. While runs keep overlapping, a generation is
sealed after :data:`RUNS_PER_SEND` ended runs (the runs still going end in it, new ones start in the
next): memory stays bounded whatever overlaps. A run handed the conversation by a handoff links to
the handing run's span, across sends.

**Sending.** One background thread posts the sealed generations in order. Each send has a total
deadline (``timeout``: connecting, sending and the answer, however slowly it trickles) and is retried
with exponential backoff (at most :data:`MAX_BACKOFF` s; a ``Retry-After`` is honoured up to that) when
the collector refuses, does not answer, rate-limits (429) or fails (5xx); what is not sent stays in
the queue and is tried again. The queue holds at most ``max_queue`` generations: when it is full the
oldest is dropped, counted in ``dropped_runs`` and reported (``errors`` and a warning), never silently.
``flush(timeout)`` waits until everything is sent; ``close()`` stops the thread (also at interpreter
exit, bounded by :data:`EXIT_FLUSH_S`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .._ids import new_id
from ..records import RunFinished, RunItem, RunSource, RunStarted
from ..redact import Redactor
from .live import Trace
from .otlp import OTLPSendError, content_default, post, request_blocks, require_proto, shown_endpoint, spans_of

if TYPE_CHECKING:
    from .recording import AgentRecorder

log = logging.getLogger(__name__)

RUNS_PER_SEND = 64
"""While runs overlap, a generation is sealed (and sent once its runs end) after this many ended runs."""
MAX_BACKOFF = 30.0
"""The longest wait between two tries of a send, in seconds (a ``Retry-After`` is capped to it)."""
EXIT_FLUSH_S = 5.0
"""At interpreter exit, how long the recorders still sending may take, in all."""
MAX_ERRORS = 100
"""``errors`` keeps the last this many."""


def _import_for_sending() -> None:
    """Import here what building and posting spans imports, so the sender's thread never imports (an
    import in a thread holds the interpreter lock, and so the event loop, for its whole length)."""
    import http.client  # noqa: F401

    import pandas  # noqa: F401
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2  # noqa: F401

    from . import frames  # noqa: F401


class _Generation:
    """Runs recorded together and sent together: their trace, the runs going and the runs ended."""

    __slots__ = ("trace", "running", "ended", "sealed")

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.running = 0
        self.ended: list[str] = []
        self.sealed = False


class _Forward:
    """What sits in a source's ``recorders``: records into the generation of the source's run, and
    tells the recorder when a run starts and ends."""

    __slots__ = ("source", "inner", "generation", "open", "owner")

    def __init__(self, source: RunSource, generation: _Generation, owner: OTLPRecorder) -> None:
        self.source = weakref.ref(source)
        self.generation = generation
        self.inner = _recorder_for(generation.trace, source)
        self.open = 0  # runs of the source going
        self.owner = owner

    def record(self, item: RunItem) -> None:
        kind = type(item)
        if kind is RunStarted:
            self.owner.starting(self)
        self.inner.record(item)
        if kind is RunFinished:
            self.owner.ended(self, item.run_id)  # type: ignore[union-attr]


def _recorder_for(trace: Trace, source: RunSource) -> AgentRecorder[Trace]:
    """A recorder of ``source`` into ``trace`` that is not in ``source.recorders`` (a forward calls it)."""
    recorder = trace.attach(source)
    source.recorders.remove(recorder)
    return recorder


class _Send:
    """A sealed generation waiting to be sent (its request body once built)."""

    __slots__ = ("trace", "runs", "body", "spans")

    def __init__(self, trace: Trace, runs: list[str]) -> None:
        self.trace: Trace | None = trace
        self.runs = runs
        self.body: list[bytes] | None = None
        self.spans = 0


class OTLPRecorder:
    """Posts each run of the sources it is attached to, once the run ends, to ``endpoint`` (OTLP/HTTP),
    from a background thread: the event loop never waits for the collector (see the module's documentation).

    ``headers`` go with every request (``x-mlflow-experiment-id``, an API key...); ``content``: add
    the messages (default: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``); ``redact``: as
    for a :class:`Trace`; ``timeout``: seconds a send may take in all; ``max_queue``: generations
    (groups of runs) waiting to be sent before the oldest is dropped. ``sent`` counts the spans sent,
    ``dropped_runs`` the runs dropped from a full queue or whose spans could not be built, ``errors``
    what went wrong (each names the endpoint). ``raise_errors=True``: :meth:`flush` raises them.

        recorder = OTLPRecorder("http://127.0.0.1:4318/v1/traces").attach(agent)
        ...
        recorder.flush()   # wait (bounded) until every ended run is sent
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
        max_queue: int = 256,
    ) -> None:
        require_proto()
        _import_for_sending()
        if not timeout > 0:
            raise ValueError(f"OTLPRecorder: timeout must be > 0 seconds, not {timeout!r}")
        if max_queue < 1:
            raise ValueError(f"OTLPRecorder: max_queue must be >= 1, not {max_queue!r}")
        self.endpoint = endpoint
        self.headers = dict(headers or {})
        self.content = content_default() if content is None else content
        self.timeout = timeout
        self.raise_errors = raise_errors
        self.max_queue = max_queue
        self._redact = redact
        self._trace_id = trace_id or new_id()  # one for every generation: conversations keep their ids
        self.sent = 0
        self.dropped_runs = 0
        self.errors: list[str] = []
        self._raised = 0
        self._handoffs: dict[str, tuple[str, str]] = {}  # read and written by the sender thread only
        self._forwards: dict[int, _Forward] = {}
        self._current = self._new_generation()
        self._queue: deque[_Send] = deque()
        self._busy: _Send | None = None  # the send the thread is trying
        self._lock = threading.Condition()
        self._closing = False
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop the runs end on
        self._loop_thread = 0
        _LIVE.add(self)

    @property
    def trace(self) -> Trace:
        """The trace the runs starting now are recorded into (a new one once those before are sent)."""
        return self._current.trace

    def _new_generation(self) -> _Generation:
        return _Generation(Trace(redact=self._redact, trace_id=self._trace_id))  # type: ignore[arg-type]

    # ------------------------------------------------------------------ recording (on the loop)

    def attach(self, source: RunSource) -> OTLPRecorder:
        """Send ``source``'s runs from its next run on; returns the recorder."""
        if self._forward_of(source) is None:  # (a collected source's, under the same id, goes)
            forward = self._forwards[id(source)] = _Forward(source, self._current, self)
            source.recorders.append(forward)
        return self

    def detach(self, source: RunSource) -> None:
        """Stop sending ``source``'s runs (a run going is still sent when it ends)."""
        forward = self._forward_of(source)
        if forward is not None:
            del self._forwards[id(source)]
            if forward in source.recorders:
                source.recorders.remove(forward)

    def _forward_of(self, source: RunSource) -> _Forward | None:
        """``source``'s forward (ids are keys: one of a source collected since may be this one's)."""
        forward = self._forwards.get(id(source))
        return forward if forward is not None and forward.source() is source else None

    def starting(self, forward: _Forward) -> None:
        """A run of ``forward``'s source starts: in the current generation, unless the source has a
        run going in a sealed one already (a turn of it)."""
        current = self._current
        if forward.generation is not current and forward.open == 0:
            source = forward.source()
            if source is not None:
                forward.generation = current
                forward.inner = _recorder_for(current.trace, source)
        forward.open += 1
        forward.generation.running += 1

    def ended(self, forward: _Forward, run_id: str) -> None:
        """A run ended: its generation is sent once no run of it is going, at once when the sender is
        idle, else with the runs that end while it is busy (at most :data:`RUNS_PER_SEND`)."""
        if self._loop is None:
            with contextlib.suppress(RuntimeError):
                self._loop = asyncio.get_running_loop()
                self._loop_thread = threading.get_ident()
        generation = forward.generation
        forward.open -= 1
        generation.running -= 1
        generation.ended.append(run_id)
        if generation is self._current:
            if generation.running == 0 and not self._queue:
                self._seal()
            elif len(generation.ended) >= RUNS_PER_SEND:
                self._seal()
        elif generation.running == 0:
            self._enqueue(_Send(generation.trace, generation.ended))

    def _seal(self) -> None:
        """No run starts in the current generation any more; it is sent once its runs have ended."""
        generation = self._current
        generation.sealed = True
        self._current = self._new_generation()
        if generation.running == 0:
            self._enqueue(_Send(generation.trace, generation.ended))

    def _seal_quiet(self) -> None:
        """On the loop: send the current generation if its runs have all ended (the sender is idle)."""
        generation = self._current
        if generation.ended and generation.running == 0:
            self._seal()

    def _enqueue(self, send: _Send) -> None:
        with self._lock:
            self._queue.append(send)
            while len(self._queue) > self.max_queue:  # the oldest not being sent goes
                at = 1 if self._queue[0] is self._busy else 0
                dropped = self._queue[at]
                del self._queue[at]
                self.dropped_runs += len(dropped.runs)
                self._error(f"queue full ({self.max_queue}): {len(dropped.runs)} run(s) dropped unsent")
            if self._thread is None:
                self._thread = threading.Thread(target=self._send_loop, name="nbagent-otlp", daemon=True)
                self._thread.start()
            self._lock.notify_all()

    # ------------------------------------------------------------------ sending (the thread)

    def _error(self, text: str) -> None:
        message = f"OTLP endpoint {shown_endpoint(self.endpoint)}: {text}" if "OTLP endpoint" not in text else text
        self.errors.append(message)
        if len(self.errors) > MAX_ERRORS:
            del self.errors[0]
            self._raised = max(0, self._raised - 1)
        log.warning("nbagent: %s", message)

    def _send_loop(self) -> None:
        failures = 0
        while True:
            with self._lock:
                while not self._queue and not self._closing:
                    self._lock.wait()
                if not self._queue:
                    return
                send = self._busy = self._queue[0]
            if send.body is None and not self._build(send):
                self._done(send)
                continue
            try:
                self._post(send)
            except OTLPSendError as error:
                failures += 1
                if not error.retriable:
                    self.dropped_runs += len(send.runs)
                    self._error(f"{error} ({len(send.runs)} run(s) dropped: the endpoint refuses them)")
                    self._done(send)
                    continue
                self._error(f"{error} ({len(send.runs)} run(s) kept, tried again)")
                wait = min(MAX_BACKOFF, 0.5 * 2 ** min(failures, 10), error.retry_after or MAX_BACKOFF)
                with self._lock:
                    if not self._closing:
                        self._lock.wait(wait)
                    if self._closing:
                        return
                continue
            failures = 0
            self.sent += send.spans
            self._done(send)

    def _build(self, send: _Send) -> bool:
        trace, send.trace = send.trace, None  # the trace is let go of once its request is built
        assert trace is not None
        try:
            spans = spans_of(trace, self.content, runs=set(send.runs), handoffs=self._handoffs)
            send.body = request_blocks(spans) if spans else []
            send.spans = len(spans)
            return True
        except Exception as error:  # a bug or a broken row: reported, the others still go
            self.dropped_runs += len(send.runs)
            self._error(f"building the spans of {len(send.runs)} run(s) failed: {type(error).__name__}: {error}")
            return False

    def _post(self, send: _Send) -> None:
        """One send with its total deadline: tries again within it (backoff) while the error is retriable."""
        assert send.body is not None
        if not send.body:
            return
        deadline = time.monotonic() + self.timeout
        wait = 0.25
        while True:
            left = deadline - time.monotonic()
            try:
                post(self.endpoint, send.body, self.headers, max(left, 0.01))
                return
            except OTLPSendError as error:
                pause = min(wait, error.retry_after or wait, MAX_BACKOFF)
                if not error.retriable or time.monotonic() + pause >= deadline:
                    raise
            with self._lock:
                if self._closing:
                    raise OTLPSendError(f"OTLP endpoint {shown_endpoint(self.endpoint)}: closed while retrying")
                self._lock.wait(pause)
            wait *= 2

    def _done(self, send: _Send) -> None:
        with self._lock:
            if self._queue and self._queue[0] is send:
                self._queue.popleft()
            self._busy = None
            idle = not self._queue
            self._lock.notify_all()
        if idle:
            self._wake_loop()

    def _wake_loop(self) -> None:
        """Have the loop hand over the runs that ended while the sender was busy."""
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed
                loop.call_soon_threadsafe(self._seal_quiet)

    # ------------------------------------------------------------------ flush and close

    @property
    def pending_runs(self) -> int:
        """Ended runs not sent yet (queued, being sent, or waiting for the sender to be idle)."""
        with self._lock:
            return sum(len(send.runs) for send in self._queue) + len(self._current.ended)

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Wait until every ended run is sent (or dropped), at most ``timeout`` seconds; whether the queue
        is empty. Blocks its thread: from async code, ``await asyncio.to_thread(recorder.flush)``.
        With ``raise_errors=True``, the errors since the last flush raise an :class:`OTLPSendError`."""
        end = None if timeout is None else time.monotonic() + timeout
        if self._current.ended:  # runs ended while the sender was busy: hand them over
            if threading.get_ident() == self._loop_thread or self._loop is None:
                self._seal_quiet()
            else:
                self._wake_loop()
        with self._lock:
            while self._queue or (self._current.ended and self._current.running == 0):
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    break
                self._lock.wait(left)
            empty = not self._queue
        if self.raise_errors and len(self.errors) > self._raised:
            new, self._raised = self.errors[self._raised :], len(self.errors)
            raise OTLPSendError("; ".join(new))
        return empty

    def close(self, timeout: float | None = 5.0) -> bool:
        """Flush (at most ``timeout`` s), then stop the sender; whether everything was sent. Runs left
        unsent are counted in ``dropped_runs`` and reported."""
        try:
            sent = self.flush(timeout)
        finally:
            with self._lock:
                self._closing = True
                left = sum(len(send.runs) for send in self._queue)
                self._queue.clear()
                self._lock.notify_all()
            if left:
                self.dropped_runs += left
                self._error(f"closed with {left} run(s) unsent")
        return sent

    def __repr__(self) -> str:
        return (
            f"OTLPRecorder({shown_endpoint(self.endpoint)!r}, sent={self.sent} spans, "
            f"pending={self.pending_runs} runs, dropped={self.dropped_runs} runs, errors={len(self.errors)})"
        )


_LIVE: weakref.WeakSet[OTLPRecorder] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """At interpreter exit: give the recorders still sending :data:`EXIT_FLUSH_S` seconds in all."""
    end = time.monotonic() + EXIT_FLUSH_S
    for recorder in list(_LIVE):
        if recorder.pending_runs:
            recorder.close(max(0.0, end - time.monotonic()))
