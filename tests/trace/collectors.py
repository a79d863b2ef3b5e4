"""Collectors that misbehave, on 127.0.0.1, for the OTLP sender's tests and bench: one that never
answers, one that trickles its answer a byte at a time, one that refuses connections, one that answers
a status (503...) or 200; each counts the requests it got."""

from __future__ import annotations

import socket
import threading
import time
from typing import Literal

Behaviour = Literal["silent", "trickle", "refuse", "status"]


class Collector:
    """``behaviour``: ``silent`` reads the request and never answers; ``trickle`` answers
    ``HTTP/1.1 200 OK`` one byte every ``every`` seconds, forever; ``refuse``: nothing listens on the
    port (held, so no other process gets it); ``status``: answers ``status`` (200 by default) at once."""

    def __init__(self, behaviour: Behaviour, status: int = 200, every: float = 2.0) -> None:
        self.behaviour = behaviour
        self.status = status
        self.every = every
        self.requests = 0
        self._stop = threading.Event()
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        port = self._sock.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{port}/v1/traces"
        if behaviour == "refuse":  # bound, not listening: refused, and the port held until close()
            return
        self._sock.listen(64)
        self._sock.settimeout(0.2)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _read_request(self, conn: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(
            (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")),
            0,
        )
        received = len(body)
        while received < length:  # counted, not kept: a body of several MB copied at each chunk is slow
            chunk = conn.recv(65536)
            if not chunk:
                return
            received += len(chunk)
        self.requests += 1

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(60)
            try:
                self._read_request(conn)
                if self.behaviour == "silent":
                    self._stop.wait()
                elif self.behaviour == "trickle":
                    for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"." * 10**6:
                        if self._stop.wait(self.every):
                            return
                        conn.sendall(bytes([byte]))
                else:
                    reason = b"OK" if self.status == 200 else b"Busy"
                    conn.sendall(
                        b"HTTP/1.1 %d %s\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbusy" % (self.status, reason)
                    )
            except OSError:
                return

    def close(self) -> None:
        self._stop.set()
        self._sock.close()
        time.sleep(0)
