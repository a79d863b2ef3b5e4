"""One benchmark against an earlier commit, alternating in one run: the ratio of each figure is the result.

The commit's ``src/`` is exported (``git archive``) into a temporary directory; then the same benchmark
script (this tree's copy) runs in a fresh interpreter per round and per side, ``PYTHONPATH`` pointing at
this tree's ``src/`` ("head", uncommitted changes included) or at the commit's. Sides alternate, and
who goes first alternates from round to round, so that the machine's load falls on both alike. Each
round gives a ratio head / base of every numeric figure the script writes with ``--json``; the figure
reported is the median of those ratios with their spread (lowest and highest), beside each side's
median value. For figures in time (``_us``, ``_ms``, ``_s``) a ratio under 1 means head is faster.

    python bench/against.py e22d83f                              # bench_loop.py, 5 rounds
    python bench/against.py e22d83f --rounds 7 --script bench_trace.py --figures fresh.plain.pct
    python bench/against.py e22d83f --script compare_autogen.py -- --scale 0.3
    python bench/against.py e22d83f --json out.json
    python bench/against.py e22d83f --head ce8e2c5                # two commits, neither the working tree

Each side's interpreter is checked to import ``nbagent`` from the tree it is meant to; the script's
own arguments go after ``--``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DEFAULT_SCRIPT = "bench_loop.py"
# bench_loop.py's figures that say what the loop costs; the other scripts' figures are all compared.
DEFAULT_FIGURES = {
    "bench_loop.py": [
        "plain_run_us",
        "fresh_plain_run_us",
        "tool_k1_run_us",
        "tool_k5_run_us",
        "extra_iteration_us",
        "chunk_us",
        "chunk_event_us",
    ]
}


@dataclass
class Side:
    """One tree the benchmark runs on: its name, its ``src`` folder, and each round's figures."""

    name: str
    src: Path
    rounds: list[dict[str, float]] = field(default_factory=list)


def git(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, check=False)


def resolve(commit: str) -> str:
    """The full hash of ``commit``; a clear error naming the parameter if git does not know it."""
    done = git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
    if done.returncode != 0:
        raise SystemExit(f"against: commit {commit!r} is not a commit of this repository ({ROOT})")
    return done.stdout.decode().strip()


def head_name() -> str:
    """This tree's commit, with ``+changes`` when the working tree differs from it."""
    short = git("rev-parse", "--short", "HEAD").stdout.decode().strip() or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "src").stdout.strip()
    return f"{short}+changes" if dirty else short


@contextmanager
def exported(commit: str) -> Iterator[Path]:
    """The ``src/`` folder of ``commit``, exported into a temporary directory for the block's duration."""
    done = git("archive", "--format=tar", commit, "src")
    if done.returncode != 0:
        raise SystemExit(f"against: git archive of {commit} failed: {done.stderr.decode().strip()}")
    with tempfile.TemporaryDirectory(prefix="nbagent-against-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
            archive.extractall(tmp, filter="data")
        src = Path(tmp) / "src"
        if not (src / "nbagent" / "__init__.py").exists():
            raise SystemExit(f"against: commit {commit} has no src/nbagent")
        yield src


def environment(src: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(src)
    env.pop("PYTHONSTARTUP", None)
    return env


def check_imports(side: Side) -> None:
    """Fail unless an interpreter with this side's environment imports nbagent from ``side.src``."""
    code = "import nbagent, sys; sys.stdout.write(nbagent.__file__)"
    done = subprocess.run([sys.executable, "-c", code], env=environment(side.src), capture_output=True, text=True)
    where = Path(done.stdout.strip()).resolve() if done.returncode == 0 else None
    if where is None or not where.is_relative_to(side.src.resolve()):
        found = where or done.stderr.strip()
        raise SystemExit(f"against: the {side.name} side imports nbagent from {found}, not from {side.src}")


def numeric(data: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """Every number of a script's JSON figures, by dotted key (booleans and lists left out)."""
    out: dict[str, float] = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(numeric(value, f"{path}."))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out[path] = float(value)
    return out


def run_once(script: Path, args: Sequence[str], side: Side, timeout: float) -> dict[str, float]:
    """One run of ``script`` on ``side``'s sources; its numeric figures."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "figures.json"
        command = [sys.executable, str(script), *args, "--json", str(out)]
        try:
            done = subprocess.run(
                command, cwd=ROOT, env=environment(side.src), capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            raise SystemExit(f"against: {script.name} on {side.name} timed out after {timeout:.0f} s") from None
        if done.returncode != 0 or not out.exists():
            raise SystemExit(f"against: {script.name} on {side.name} failed (exit {done.returncode}):\n{done.stderr}")
        return numeric(json.loads(out.read_text(encoding="utf-8")))


def summarize(head: Side, base: Side, figures: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per figure: each side's median, and the median, lowest and highest of the rounds' head / base ratios."""
    table: dict[str, dict[str, float]] = {}
    for key in figures:
        pairs = [(h[key], b[key]) for h, b in zip(head.rounds, base.rounds, strict=True) if key in h and key in b]
        if not pairs:
            continue
        ratios = [h / b for h, b in pairs if b != 0]
        table[key] = {
            "head": statistics.median(h for h, _ in pairs),
            "base": statistics.median(b for _, b in pairs),
            "ratio": statistics.median(ratios) if ratios else float("nan"),
            "ratio_min": min(ratios, default=float("nan")),
            "ratio_max": max(ratios, default=float("nan")),
        }
    return table


def compare(
    commit: str,
    script: str = DEFAULT_SCRIPT,
    script_args: Sequence[str] = (),
    rounds: int = 5,
    figures: Sequence[str] | None = None,
    timeout: float = 1200,
    head: str | None = None,
) -> dict[str, Any]:
    """Run ``script`` ``rounds`` times on this tree (or on the commit ``head``) and on ``commit``,
    alternating; the figures and ratios."""
    if rounds < 1:
        raise SystemExit(f"against: rounds must be at least 1, got {rounds}")
    path = BENCH / script
    if not path.is_file():
        raise SystemExit(f"against: script {script!r} is not a file in {BENCH}")
    full = resolve(commit)
    load_start = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with ExitStack() as stack:
        base = Side(full[:7], stack.enter_context(exported(full)))
        if head is None:
            ours = Side(head_name(), ROOT / "src")
        else:
            head_full = resolve(head)
            ours = Side(head_full[:7], stack.enter_context(exported(head_full)))
        for side in (ours, base):
            check_imports(side)
        chosen: list[str] = []
        for index in range(rounds):
            for side in (ours, base) if index % 2 == 0 else (base, ours):
                got = run_once(path, script_args, side, timeout)
                side.rounds.append(got)
                print(f"  round {index + 1}/{rounds} {side.name}: done", file=sys.stderr, flush=True)
                if not chosen:  # checked on the first run's figures, before the other runs are spent
                    chosen = list(figures or DEFAULT_FIGURES.get(script) or got)
                    missing = [key for key in chosen if key not in got]
                    if missing:
                        raise SystemExit(f"against: figures {missing} are not among {script}'s: {sorted(got)}")
    return {
        "script": script,
        "script_args": list(script_args),
        "head": ours.name,
        "base": base.name,
        "rounds": rounds,
        "date": started,
        "load_average": {"start": list(load_start), "end": list(os.getloadavg())},
        "cpus": os.cpu_count(),
        "figures": summarize(ours, base, chosen),
    }


def report(data: dict[str, Any]) -> str:
    head, base = data["head"], data["base"]
    lines = [
        f"{data['script']} {' '.join(data['script_args'])}: {head} against {base}, {data['rounds']} alternating "
        f"rounds, {data['date']}, load average {data['load_average']['start'][0]:.2f} -> "
        f"{data['load_average']['end'][0]:.2f} on {data['cpus']} cores",
        f"{'figure':<34}{head:>14}{base:>14}{'ratio':>8}  {'spread':>13}",
    ]
    for key, row in data["figures"].items():
        lines.append(
            f"{key:<34}{row['head']:>14.4g}{row['base']:>14.4g}{row['ratio']:>8.3f}  "
            f"{row['ratio_min']:.3f}-{row['ratio_max']:.3f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    argv = sys.argv[1:] if argv is None else argv
    own, script_args = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("commit", help="the earlier commit (any name git knows: hash, tag, branch)")
    parser.add_argument("--head", metavar="COMMIT", help="run this commit instead of the working tree's sources")
    parser.add_argument("--script", default=DEFAULT_SCRIPT, help=f"a script in bench/ (default {DEFAULT_SCRIPT})")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (each runs the script once a side)")
    parser.add_argument("--figures", nargs="+", metavar="KEY", help="dotted keys of the script's JSON (default: all)")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds allowed per run of the script")
    parser.add_argument("--json", metavar="PATH", help="also write the figures and ratios to this JSON file")
    args = parser.parse_args(own)
    data = compare(args.commit, args.script, script_args, args.rounds, args.figures, args.timeout, args.head)
    print(report(data))
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=2), encoding="utf-8")
    return data


if __name__ == "__main__":
    main()
