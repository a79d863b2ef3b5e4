"""Real trace receivers and engines, started on 127.0.0.1 for the tests and stopped after them.

Each receiver runs from a virtual environment of its own (its dependency pins, protobuf and pyarrow
among them, are not the project's), built once by ``python -m tests.receivers.install`` under
``$NBAGENT_RECEIVERS_HOME`` (default ``~/.cache/nbagent/receivers``). The tests read back through the
receiver's own API, MLflow's through its light client in the test environment (``test`` extra):

* MLflow's tracking server (SQLite store): OTLP/HTTP at ``/v1/traces`` with the header
  ``x-mlflow-experiment-id``; read back with ``mlflow.search_traces`` / ``MlflowClient.get_trace``.
* Arize Phoenix: OTLP/HTTP at ``/v1/traces``; read back through its REST API
  (``/v1/projects/{project}/spans``, what its client calls: the client package would pull in
  OpenTelemetry exporters and a protobuf newer than the bench extra's autogen allows).

Every server is bounded in time (it must answer its health check within ``START_TIMEOUT_S``),
sends nothing off the machine (telemetry and external fetches off) and is stopped by its own
process group id when the test session ends.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.ports import free_port

# The receivers, pinned: the version a test was written against is the one it runs against.
PINS = {
    "mlflow": "mlflow==3.17.2",
    "phoenix": "arize-phoenix==20.26.1",
}

START_TIMEOUT_S = 180.0  # a cold start on a loaded 2-core machine takes 10-15 s
STOP_TIMEOUT_S = 5.0  # a graceful stop waits for open keep-alive connections: not longer than this

# Nothing a receiver does leaves the machine.
QUIET_ENV = {
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DO_NOT_TRACK": "true",
    "PHOENIX_TELEMETRY_ENABLED": "false",
    "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}


def receivers_home() -> Path:
    default = Path.home() / ".cache" / "nbagent" / "receivers"
    return Path(os.environ.get("NBAGENT_RECEIVERS_HOME", default))


def venv_dir(name: str) -> Path:
    """Where the receiver ``name`` is installed: one folder per pinned version."""
    return receivers_home() / PINS[name].replace("==", "-")


def venv_bin(name: str, program: str) -> Path:
    return venv_dir(name) / "bin" / program


def installed(name: str) -> bool:
    """Whether ``install`` finished for ``name`` (a half-built environment has no marker)."""
    return (venv_dir(name) / ".installed").exists()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


@dataclass
class Receiver:
    """A running receiver: where to send OTLP, with which headers, and where it logs."""

    name: str
    base_url: str
    headers: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes]
    start_s: float = 0.0  # from launch to the first healthy answer
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def otlp_endpoint(self) -> str:
        return f"{self.base_url}/v1/traces"

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(line for line in text[-lines:])

    def stop(self) -> None:
        """End the receiver's process group (it was started in a session of its own)."""
        if self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=STOP_TIMEOUT_S)


def _launch(
    name: str, argv: list[str], env: dict[str, str], workdir: Path, health: str
) -> tuple[subprocess.Popen[bytes], Path, float]:
    log = workdir / f"{name}.log"
    started = time.perf_counter()
    with log.open("wb") as handle:
        process = subprocess.Popen(
            argv,
            cwd=workdir,
            env={**os.environ, **QUIET_ENV, **env},
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so stop() ends its workers too
        )
    deadline = started + START_TIMEOUT_S
    while time.perf_counter() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode} before answering:\n{log.read_text()[-4000:]}")
        if _answers(health):
            return process, log, time.perf_counter() - started
        time.sleep(0.25)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=STOP_TIMEOUT_S)
    raise RuntimeError(f"{name} did not answer {health} within {START_TIMEOUT_S:.0f} s:\n{log.read_text()[-4000:]}")


def start_mlflow(workdir: Path) -> Receiver:
    """MLflow's tracking server on a free port, with a SQLite store (OTLP ingestion needs a SQL store)."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    argv = [
        str(venv_bin("mlflow", "mlflow")), "server",
        "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
        "--backend-store-uri", f"sqlite:///{workdir / 'mlflow.db'}",
        "--default-artifact-root", (workdir / "artifacts").as_uri(),
    ]  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    process, log, start_s = _launch("mlflow", argv, {}, workdir, f"{base}/health")
    # Experiment "0" (Default) exists in a new store; the header routes OTLP spans to it.
    return Receiver("mlflow", base, {"x-mlflow-experiment-id": "0"}, log, process, start_s, {"experiment_id": "0"})


def start_phoenix(workdir: Path) -> Receiver:
    """Arize Phoenix on free ports (HTTP and gRPC), its SQLite database in ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    port, grpc_port = free_port(), free_port()
    env = {
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_HOST": "127.0.0.1",
        "PHOENIX_GRPC_PORT": str(grpc_port),
    }
    base = f"http://127.0.0.1:{port}"
    argv = [str(venv_bin("phoenix", "phoenix")), "serve"]
    process, log, start_s = _launch("phoenix", argv, env, workdir, f"{base}/healthz")
    return Receiver("phoenix", base, {}, log, process, start_s, {"project": "default"})


STARTERS = {"mlflow": start_mlflow, "phoenix": start_phoenix}


@contextlib.contextmanager
def running(name: str, workdir: Path) -> Iterator[Receiver]:
    receiver = STARTERS[name](workdir)
    try:
        yield receiver
    finally:
        receiver.stop()


def main() -> int:
    """``python -m tests.receivers.servers NAME``: start one receiver, print where, stop on Ctrl-C."""
    import tempfile

    name = sys.argv[1] if len(sys.argv) > 1 else "mlflow"
    with tempfile.TemporaryDirectory() as tmp, running(name, Path(tmp)) as receiver:
        print(f"{name} up in {receiver.start_s:.1f} s: OTLP {receiver.otlp_endpoint} headers {receiver.headers}")
        with contextlib.suppress(KeyboardInterrupt):
            receiver.process.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
