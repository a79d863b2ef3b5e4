"""Coalesce streamed chunks into a bounded number of widget updates.

jupyter_server drops iopub messages above 1,000/s, and every widget trait change is one comm
message, so assigning a widget per chunk freezes the view on a stale value. :class:`Coalescer`
appends chunks to a buffer and hands what arrived since its last call to its sink at most once
per ``interval``; a trailing flush scheduled with ``loop.call_later`` sends the last pieces, so the final text is
exact (no chunk lost or doubled) even when the stream pauses or stops.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

DEFAULT_INTERVAL = 1 / 22
"""Seconds between two sink calls: at most 22 text updates per second per coalescer, so that with the
view's other messages (new segments, tool cards, footer) the browser gets under 30 a second."""


class Coalescer:
    """Buffers text pieces and calls ``sink(new_text)`` at most once per ``interval`` seconds.

    ``new_text`` is everything appended since the previous call, so the calls add up to the text.
    """

    __slots__ = ("_sink", "_interval", "_clock", "_pending", "_sent", "_last", "_timer", "flushes")

    def __init__(
        self,
        sink: Callable[[str], None],
        interval: float = DEFAULT_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sink = sink
        self._interval = interval
        self._clock = clock
        self._pending: list[str] = []
        self._sent: list[str] = []  # what the sink got, kept as pieces: no copy of the text per flush
        self._last = float("-inf")
        self._timer: asyncio.TimerHandle | None = None
        self.flushes = 0
        """How many times the sink was called."""

    @property
    def text(self) -> str:
        """Everything appended so far, flushed or not."""
        return "".join(self._sent) + "".join(self._pending)

    def append(self, piece: str) -> None:
        """Add ``piece``; flush now if the interval has passed, else make sure a flush is scheduled."""
        if not piece:
            return
        self._pending.append(piece)
        now = self._clock()
        if now - self._last >= self._interval:
            self.flush()
        elif self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            self._timer = loop.call_later(self._interval - (now - self._last), self.flush)

    def flush(self) -> None:
        """Send the buffered pieces now (nothing happens if none are waiting)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending:
            return
        new = "".join(self._pending)
        self._pending.clear()
        self._sent.append(new)
        self._last = self._clock()
        self.flushes += 1
        self._sink(new)

    def close(self) -> str:
        """Flush what is left and stop the timer; returns the full text."""
        self.flush()
        return "".join(self._sent)
