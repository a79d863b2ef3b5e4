"""Build the receivers' environments: ``python -m tests.receivers.install [mlflow] [phoenix]``.

One virtual environment per pinned receiver under ``$NBAGENT_RECEIVERS_HOME`` (see ``servers.py``);
an environment already built is kept (a marker file says it finished), so a second run costs
nothing. Prints how long each install took.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

from .servers import PINS, installed, venv_bin, venv_dir


def install(name: str) -> float:
    """Build ``name``'s environment if it is not there; the seconds it took (0 if it was there)."""
    if installed(name):
        return 0.0
    target = venv_dir(name)
    if target.exists():  # a half-built one
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(target)], check=True)
    pip = [str(venv_bin(name, "python")), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, PINS[name]], check=True)
    (target / ".installed").write_text(PINS[name] + "\n")
    return time.perf_counter() - started


def main(argv: list[str]) -> int:
    names = argv or list(PINS)
    for name in names:
        seconds = install(name)
        state = f"installed in {seconds:.0f} s" if seconds else "already installed"
        print(f"receiver {PINS[name]}: {state} at {venv_dir(name)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
