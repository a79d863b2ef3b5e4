"""Real MCP servers for the tests: the time server from PyPI over stdio, and the tests' own server
(``mcp_http_server.py``) over streamable HTTP on 127.0.0.1, each started here and stopped at the end."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nbagent import StdioServerParams
from tests.ports import free_port

HERE = Path(__file__).parent
SERVER_LIFETIME_S = 240  # the HTTP server exits by itself after this, whatever happens to the tests


def time_server_params(local_timezone: str = "Europe/Paris") -> StdioServerParams:
    """``mcp-server-time`` (PyPI) run by this Python, with a fixed local timezone; a generous request
    timeout, as AutoGen's examples set, since the server's first lookup reads the tz database."""
    return StdioServerParams(
        command=sys.executable,
        args=["-m", "mcp_server_time", "--local-timezone", local_timezone],
        read_timeout_seconds=60,
    )


def time_server_processes() -> list[int]:
    """The pids of this process's children that run the time server (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and b"mcp_server_time" in cmdline:
            found.append(int(entry.name))
    return found


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path, limit_s: float = 60) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the test MCP server exited ({process.returncode}): {log.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"the test MCP server did not listen on port {port} within {limit_s} s")


@pytest.fixture(scope="module")
def http_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of the tests' MCP server (streamable HTTP, 127.0.0.1, a free port), stopped at the end."""
    port = free_port()
    log = tmp_path_factory.mktemp("mcp_http_server") / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, str(HERE / "mcp_http_server.py"), str(port), str(SERVER_LIFETIME_S)],
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_for_port(port, process, log)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
