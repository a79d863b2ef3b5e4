"""Local ports for the tests: one a server the test starts will bind, one that refuses connections.

A port found by binding port 0 and closing comes from the kernel's ephemeral range, so until the test's server
binds it, any process's next listener may be handed it (a Spark JVM's one-connection result socket, a kernel's
channel): a test's probe then connects to that stranger and takes its one connection. Both helpers here avoid
that: a server's port is picked below the ephemeral range, and a refusing port is held bound while it is used."""

from __future__ import annotations

import errno
import secrets
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOWEST = 20000
"""The lowest port :func:`free_port` picks (above the well-known and most registered services' ports)."""


def ephemeral_start() -> int:
    """The first port of the kernel's ephemeral range (Linux's default 32768 where it cannot be read)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A 127.0.0.1 port free now, for a server the test starts: picked at random below the ephemeral range,
    where no process is handed a port it did not ask for by number."""
    top = ephemeral_start()
    for _ in range(200):
        port = LOWEST + secrets.randbelow(top - LOWEST)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError as error:
                if error.errno in (errno.EADDRINUSE, errno.EACCES):
                    continue
                raise
            return port
    raise RuntimeError(f"no free port between {LOWEST} and {top} in 200 tries")


@contextmanager
def refusing_port() -> Iterator[int]:
    """A 127.0.0.1 port bound and not listening: a connection to it is refused, and while the block runs no
    other process is given the port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])
