"""What ``import nbagent`` costs: wall time in a fresh interpreter, and which heavy packages it loads.

Each repeat starts a new ``python -c "import nbagent"`` with ``-X importtime`` and reads the
cumulative time of the ``nbagent`` line (what importing nbagent and everything it pulls in took,
without the interpreter's own start). The median over the repeats is the figure; the goal is 0.25 s
on this machine. So that leaving work for later cannot pass for saving it, a second figure is the
first run: a fresh interpreter's ``import nbagent`` and one tool run on the replay model
(``first_run_s``, from before the import to the answer). Repeats of the two alternate.

nbagent's bytecode is compiled first (``compileall``, as ``pip install`` does): with
``PYTHONDONTWRITEBYTECODE`` set, or sources newer than their ``.pyc``, each interpreter would compile
them again and the figure would be the compiler's. It also lists which of pandas, numpy, pyarrow,
ipywidgets and IPython were loaded: none should be, since DataFrames and widgets are built on
request only.

    python bench/bench_import.py [--repeats 15] [--json out.json]
    python bench/against.py e22d83f --script bench_import.py --rounds 7   # against an earlier commit
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import statistics
import subprocess
import sys
from pathlib import Path

GOAL_S = 0.25
HEAVY = ("pandas", "numpy", "pyarrow", "ipywidgets", "IPython")
PROBE = f"import sys, nbagent; print(','.join(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r})))"
FIRST_RUN = """
import time
start = time.perf_counter()
import nbagent
from nbagent import AssistantAgent, ReplayChatCompletionClient
from nbagent.messages import CreateResult, FunctionCall, RequestUsage

async def add(a: int, b: int) -> int:
    return a + b

call = FunctionCall(id="1", name="add", arguments='{"a": 1, "b": 2}')
answers = [CreateResult(finish_reason="function_calls", content=[call], usage=RequestUsage()), "3"]
agent = AssistantAgent("a", model_client=ReplayChatCompletionClient(answers), tools=[add])
result = nbagent.run(agent, "1 + 2?")
assert result.messages[-1].content == "3", result.messages[-1]
print(time.perf_counter() - start)
"""


def compile_nbagent() -> Path:
    """The folder of the ``nbagent`` this interpreter's path finds (not imported), its bytecode compiled."""
    spec = importlib.util.find_spec("nbagent")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("bench_import: no nbagent package on this interpreter's path")
    package = Path(next(iter(spec.submodule_search_locations)))
    if not compileall.compile_dir(package, quiet=1):
        raise SystemExit(f"bench_import: compiling {package} failed")
    return package


def import_seconds() -> float:
    """One fresh interpreter's cumulative import time of nbagent, from ``-X importtime``."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import nbagent"], capture_output=True, text=True, check=True
    )
    line = next(row for row in done.stderr.splitlines() if row.rstrip().endswith("| nbagent"))
    return int(line.split("|")[1]) / 1e6


def first_run_seconds() -> float:
    """One fresh interpreter's time from before ``import nbagent`` to the answer of one tool run."""
    done = subprocess.run([sys.executable, "-c", FIRST_RUN], capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--json", metavar="PATH", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}")
    package = compile_nbagent()
    imports: list[float] = []
    first_runs: list[float] = []
    for _ in range(args.repeats):
        imports.append(import_seconds())
        first_runs.append(first_run_seconds())
    imports.sort()
    loaded = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True).stdout.strip()
    figures = {
        "import_s": statistics.median(imports),
        "import_min_s": imports[0],
        "first_run_s": statistics.median(first_runs),
        "first_run_min_s": min(first_runs),
        "goal_s": GOAL_S,
        "met": statistics.median(imports) <= GOAL_S,
        "heavy_modules_loaded": loaded or "none",
        "package": str(package),
    }
    print(
        f"import nbagent: {figures['import_s']:.3f} s median of {args.repeats} (min {imports[0]:.3f} s, "
        f"goal {GOAL_S} s); import and a first tool run: {figures['first_run_s']:.3f} s (min "
        f"{figures['first_run_min_s']:.3f} s); heavy packages loaded: {figures['heavy_modules_loaded']}"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(figures, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
