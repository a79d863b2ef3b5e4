"""A local port that refuses connections, held for as long as a test needs it refused."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def refusing_port() -> Iterator[int]:
    """A 127.0.0.1 port bound and not listening: a connection to it is refused, and while the block runs no
    other process is given the port. (A port closed before use can be handed to any process's next listener,
    a Spark JVM's result socket among them, which a test's connection then takes from its owner.)"""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])
