"""The benchmarks' recorded history: ``bench/history.jsonl``, one line per recorded run of a script.

``make bench`` (``bench/run_all.py``) records the figures of the scripts in :data:`TRACKED` (the loop,
the kernel-side Stop and Pause, ``import nbagent``) after each of them runs: the script, the commit
(``+changes`` when ``src/`` differs from it), the date, the load average and the cores, and the
tracked figures. Before recording, it prints each figure's change against the last recorded run of
the same script. The machine is shared and noisy: a change of a few percent between two runs is load,
not code, and the ratios of ``bench/against.py`` (alternating, in one run) are what compares commits;
the history says when a figure moved, and under what load.

    python bench/history.py                      # every tracked figure's recorded values, oldest first
    python bench/history.py bench_stop_pause.py  # one script's
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
HISTORY = BENCH / "history.jsonl"
TRACKED: dict[str, list[str]] = {
    "bench_loop.py": [
        "plain_run_us",
        "fresh_plain_run_us",
        "tool_k1_run_us",
        "extra_iteration_us",
        "chunk_us",
        "chunk_event_us",
    ],
    "bench_stop_pause.py": [
        "figures.Stop.median_s",
        "figures.Stop.max_s",
        "figures.interrupt.median_s",
        "figures.interrupt.max_s",
        "figures.Pause.median_s",
        "figures.Pause.max_s",
    ],
    "bench_import.py": ["import_s", "first_run_s"],
}
"""Per script, the dotted keys of its JSON figures that the history keeps."""


def commit_name() -> str:
    """This tree's commit, with ``+changes`` when ``src/`` differs from it (``unknown`` outside git)."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    short = git("rev-parse", "--short", "HEAD") or "unknown"
    return f"{short}+changes" if git("status", "--porcelain", "--untracked-files=no", "--", "src") else short


def pick(figures: Mapping[str, Any], keys: list[str]) -> dict[str, float]:
    """The numbers at ``keys`` (dotted) in a script's figures; a key the figures lack is left out."""
    found: dict[str, float] = {}
    for key in keys:
        value: Any = figures
        for part in key.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if isinstance(value, int | float) and not isinstance(value, bool):
            found[key] = float(value)
    return found


def entries(path: Path = HISTORY, script: str | None = None) -> list[dict[str, Any]]:
    """The recorded runs, oldest first (of ``script`` alone if given); a line that is no JSON object is named."""
    if not path.exists():
        return []
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as error:
            raise SystemExit(f"history: {path}:{number} is not JSON ({error.msg})") from None
        if not isinstance(entry, dict) or not isinstance(entry.get("figures"), dict):
            raise SystemExit(f"history: {path}:{number} is not a recorded run (an object with 'figures')")
        if script is None or entry.get("script") == script:
            found.append(entry)
    return found


def changes(previous: Mapping[str, Any] | None, figures: Mapping[str, float]) -> list[str]:
    """One line per figure: its value, and its change against ``previous`` (a recorded run) if it has it."""
    if previous is None:
        return [f"{key}: {value:.4g} (first recorded)" for key, value in figures.items()]
    before = previous["figures"]
    where = f"{previous.get('commit', '?')}, {previous.get('date', '?')}, load {previous.get('load_average', '?')}"
    lines = []
    for key, value in figures.items():
        old = before.get(key)
        if not isinstance(old, int | float) or old == 0:
            lines.append(f"{key}: {value:.4g} (not recorded before)")
        else:
            lines.append(f"{key}: {value:.4g}, was {old:.4g} ({(value / old - 1) * 100:+.1f}%; {where})")
    return lines


def record(script: str, figures: Mapping[str, Any], path: Path = HISTORY, load: float | None = None) -> list[str]:
    """Append ``script``'s tracked figures to the history, with ``load`` (the load average when it started;
    now if not given); the lines saying how each changed since the last recorded run of it (nothing for a
    script not in :data:`TRACKED`, or with none of its figures)."""
    keys = TRACKED.get(script)
    if keys is None:
        return []
    kept = pick(figures, keys)
    if not kept:
        return [f"{script}: none of its tracked figures ({', '.join(keys)}) in its output: not recorded"]
    previous = entries(path, script)
    lines = changes(previous[-1] if previous else None, kept)
    entry = {
        "script": script,
        "commit": commit_name(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_average": round(os.getloadavg()[0] if load is None else load, 1),
        "cpus": os.cpu_count(),
        "figures": kept,
    }
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(entry) + "\n")
    return [f"{script} against its last recorded run:", *(f"  {line}" for line in lines)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("script", nargs="?", help=f"one of {', '.join(TRACKED)} (default: all)")
    parser.add_argument("--path", type=Path, default=HISTORY, help="the history file (default bench/history.jsonl)")
    args = parser.parse_args(argv)
    if args.script is not None and args.script not in TRACKED:
        parser.error(f"script must be one of {', '.join(TRACKED)}, got {args.script!r}")
    for script in [args.script] if args.script else list(TRACKED):
        runs = entries(args.path, script)
        print(f"{script}: {len(runs)} recorded run(s)")
        for run in runs:
            values = ", ".join(f"{key} {value:.4g}" for key, value in run["figures"].items())
            print(f"  {run.get('date')}  {run.get('commit')}  load {run.get('load_average')}: {values}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
