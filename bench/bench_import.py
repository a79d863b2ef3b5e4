"""What ``import nbagent`` costs: wall time in a fresh interpreter, and which heavy packages it loads.

Each repeat starts a new ``python -c "import nbagent"`` with ``-X importtime`` and reads the
cumulative time of the ``nbagent`` line (what importing nbagent and everything it pulls in took,
without the interpreter's own start). The median over the repeats is the figure; the goal is 0.25 s
on this machine. It also lists which of pandas, numpy, pyarrow, ipywidgets and IPython were loaded:
none should be, since DataFrames and widgets are built on request only.

    python bench/bench_import.py [--repeats 15] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

GOAL_S = 0.25
HEAVY = ("pandas", "numpy", "pyarrow", "ipywidgets", "IPython")
PROBE = f"import sys, nbagent; print(','.join(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r})))"


def import_seconds() -> float:
    """One fresh interpreter's cumulative import time of nbagent, from ``-X importtime``."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import nbagent"], capture_output=True, text=True, check=True
    )
    line = next(row for row in done.stderr.splitlines() if row.rstrip().endswith("| nbagent"))
    return int(line.split("|")[1]) / 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--json", metavar="PATH", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    times = sorted(import_seconds() for _ in range(args.repeats))
    loaded = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True).stdout.strip()
    figures = {
        "import_s": statistics.median(times),
        "import_min_s": times[0],
        "goal_s": GOAL_S,
        "met": statistics.median(times) <= GOAL_S,
        "heavy_modules_loaded": loaded or "none",
    }
    print(
        f"import nbagent: {figures['import_s']:.3f} s median of {args.repeats} (min {times[0]:.3f} s, "
        f"goal {GOAL_S} s); heavy packages loaded: {figures['heavy_modules_loaded']}"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(figures, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
