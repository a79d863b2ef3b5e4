"""A limit on a whole Spark job's model requests: a small server on the driver that executors ask.

:func:`nbagent.spark.run_batch` with ``requests_per_second=`` and/or ``max_in_flight=`` starts a
:class:`JobLimit` on the driver (on ``spark.driver.host``, the address executors already reach the
driver at; an ephemeral port, or ``limit_port=``) for the job's length. Before each model request an
executor's agent opens a TCP connection to it and waits for a go: the server grants requests in the
order they came, at most ``requests_per_second`` a second (one every ``1 / requests_per_second``
seconds) and at most ``max_in_flight`` at once; the connection stays open while the request runs and
its close gives the slot back, so an executor that dies gives back its slots with its sockets. The
limit is the job's, not an executor's: 1,000 partitions share one rate.

Each connection starts with the job's secret (a random token sent to the executors with the job), so
another process that reaches the port takes no slot. An executor that cannot reach the server within
``connect_timeout`` seconds fails its partition with :class:`LimitUnreachable` (Spark retries it, then
fails the job with that message); a request that waits longer than ``wait_timeout`` for its slot (or
its task's ``timeout``) fails with a :class:`TimeoutError` naming the limit.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["JobLimit", "LimitAddress", "LimitClient", "LimitUnreachable"]

GO = b"go\n"
PONG = b"pong\n"


class LimitUnreachable(ConnectionError):
    """An executor could not reach the job's request limit on the driver."""


@dataclass(frozen=True)
class LimitAddress:
    """Where executors find the job's limit, and the secret it asks for (sent to them with the job)."""

    host: str
    port: int
    secret: str
    connect_timeout: float = 10.0
    wait_timeout: float = 3600.0


class JobLimit:
    """The driver's side: grants request slots at most ``requests_per_second`` a second and at most
    ``max_in_flight`` at once (``None``: no such bound), in arrival order, on ``host:port`` (0: any free
    port), in a thread of its own until :meth:`close`."""

    def __init__(
        self,
        requests_per_second: float | None,
        max_in_flight: int | None,
        host: str = "127.0.0.1",
        port: int = 0,
        connect_timeout: float = 10.0,
        wait_timeout: float = 3600.0,
    ) -> None:
        self._interval = 0.0 if requests_per_second is None else 1.0 / requests_per_second
        self._max_in_flight = max_in_flight
        self._secret = secrets.token_hex(16)
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._in_flight = 0
        self._next_grant = 0.0  # monotonic time of the earliest next grant
        self._wake: asyncio.TimerHandle | None = None
        self.granted = 0
        """Slots granted so far."""
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        started = threading.Event()
        failure: list[BaseException] = []
        self._thread = threading.Thread(
            target=self._serve, args=(host, port, started, failure), name="nbagent-job-limit", daemon=True
        )
        self._thread.start()
        if not started.wait(30) or failure:
            raise OSError(f"nbagent.spark: the job's request limit could not listen on {host}:{port}") from (
                failure[0] if failure else None
            )
        assert self._server is not None
        bound = self._server.sockets[0].getsockname()
        self.address: LimitAddress = LimitAddress(host, int(bound[1]), self._secret, connect_timeout, wait_timeout)
        """Where executors reach it (:class:`LimitAddress`)."""

    def _serve(self, host: str, port: int, started: threading.Event, failure: list[BaseException]) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._server = self._loop.run_until_complete(asyncio.start_server(self._client, host, port))
        except BaseException as error:
            failure.append(error)
            started.set()
            return
        started.set()
        self._loop.run_forever()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        granted = False
        try:
            line = await asyncio.wait_for(reader.readline(), 30)
            secret, _, what = line.decode("ascii", "replace").strip().partition(" ")
            if not secrets.compare_digest(secret, self._secret):
                return
            if what == "ping":
                writer.write(PONG)
                await writer.drain()
                return
            turn = self._loop.create_future()
            self._waiting.append(turn)
            self._grant()
            closed = asyncio.ensure_future(reader.read(1))  # the client went away while it waited
            await asyncio.wait([turn, closed], return_when=asyncio.FIRST_COMPLETED)
            if not turn.done():
                turn.cancel()
                return
            granted = True
            writer.write(GO)
            await writer.drain()
            await closed  # held until the client closes (its request ended) or dies
        except (TimeoutError, OSError, asyncio.IncompleteReadError):
            pass
        finally:
            if granted:
                self._in_flight -= 1
                self._grant()
            writer.close()

    def _grant(self) -> None:
        """Grant the waiting requests the limits allow now; wake again when the rate allows the next."""
        while self._waiting and self._waiting[0].done():  # gone while waiting
            self._waiting.popleft()
        while self._waiting:
            if self._max_in_flight is not None and self._in_flight >= self._max_in_flight:
                return  # a slot given back grants the next
            now = time.monotonic()
            if now < self._next_grant:
                if self._wake is None:
                    self._wake = self._loop.call_later(self._next_grant - now, self._woken)
                return
            turn = self._waiting.popleft()
            if turn.done():
                continue
            turn.set_result(None)
            self._in_flight += 1
            self.granted += 1
            self._next_grant = now + self._interval

    def _woken(self) -> None:
        self._wake = None
        self._grant()

    def close(self) -> None:
        """Stop serving (the requests holding slots keep running; no new slot is granted)."""

        async def stop() -> None:
            if self._server is not None:
                self._server.close()
            for turn in self._waiting:
                turn.cancel()

        if self._loop.is_running():
            asyncio.run_coroutine_threadsafe(stop(), self._loop).result(30)
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        if not self._thread.is_alive():
            self._loop.close()


class LimitClient:
    """An executor's side (a :class:`~nbagent.models.limit.RequestLimit`): a slot is one connection to
    the driver's :class:`JobLimit`, held while the request runs."""

    def __init__(self, address: LimitAddress) -> None:
        self.address = address

    def _where(self) -> str:
        return f"the Spark job's request limit on the driver ({self.address.host}:{self.address.port})"

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(self.address.host, self.address.port), self.address.connect_timeout
            )
        except (TimeoutError, OSError) as error:
            raise LimitUnreachable(
                f"{self._where()} did not answer within {self.address.connect_timeout:g} s ({type(error).__name__}: "
                f"{error}): the driver has ended, or this executor cannot reach the driver's host on that port "
                "(run_batch(limit_port=...) fixes the port to open in a firewall)"
            ) from error

    async def check(self) -> None:
        """Raise :class:`LimitUnreachable` unless the limit answers (an executor asks once before its tasks)."""
        reader, writer = await self._connect()
        try:
            writer.write(f"{self.address.secret} ping\n".encode("ascii"))
            await writer.drain()
            answer = await asyncio.wait_for(reader.readline(), self.address.connect_timeout)
        except (TimeoutError, OSError) as error:
            raise LimitUnreachable(f"{self._where()} did not answer a ping ({type(error).__name__})") from error
        finally:
            writer.close()
        if answer != PONG:
            raise LimitUnreachable(f"{self._where()} refused this executor (a limit of another job on that port?)")

    async def acquire(self) -> Callable[[], None]:
        """Wait for a slot; returns what gives it back (closing the connection)."""
        reader, writer = await self._connect()
        try:
            writer.write(f"{self.address.secret} acquire\n".encode("ascii"))
            await writer.drain()
            answer = await asyncio.wait_for(reader.readline(), self.address.wait_timeout)
        except TimeoutError:
            writer.close()
            raise TimeoutError(
                f"waited {self.address.wait_timeout:g} s for a request slot from {self._where()}: the job's rate "
                "is too low for the requests its executors queue (fewer partitions or a lower concurrency)"
            ) from None
        except BaseException:  # cancelled (the task's timeout), the connection lost
            writer.close()
            raise
        if answer != GO:
            writer.close()
            raise LimitUnreachable(f"{self._where()} closed the connection before granting a slot (it has stopped)")
        return writer.close
