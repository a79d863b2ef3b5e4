"""Run every benchmark and write ``bench/RESULTS.md`` (and the raw figures in ``bench/results.json``).

Each benchmark script runs in its own process with ``--json``; its figures go into the table as
they come. A script that is absent or fails is reported as such, never replaced by numbers. The
peak memory of a 10,000-event trace is measured here with ``tracemalloc``. The loop's, the kernel-side
Stop and Pause and the import's figures are recorded in ``bench/history.jsonl`` (``bench/history.py``),
and their change against the last recorded run is printed and written into the results.

    make bench                       # or: python bench/run_all.py [--quick]
    python bench/run_all.py --no-history        # without recording into bench/history.jsonl
    python bench/run_all.py --against e22d83f   # also bench_loop.py against that commit (bench/against.py)
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import history

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PACKAGES = [
    "nbagent",
    "autogen-agentchat",
    "autogen-core",
    "autogen-ext",
    "pydantic",
    "openai",
    "ipywidgets",
    "ipykernel",
    "jupyter_client",
    "pandas",
    "pyarrow",
]
TRACE_EVENTS = 10_000


@dataclass
class Script:
    """One benchmark script, its extra arguments, and what running it gave."""

    name: str
    args: list[str] = field(default_factory=list)
    status: str = "not run"
    seconds: float = 0.0
    figures: dict[str, Any] = field(default_factory=dict)
    load: float = 0.0
    """The load average (1 min) when it started."""
    changes: list[str] = field(default_factory=list)
    """How its tracked figures moved since their last recorded run (bench/history.py)."""

    @property
    def path(self) -> Path:
        return BENCH / self.name


def run_script(script: Script, timeout: float) -> None:
    """Run one script with ``--json`` into a temporary file; record its status and figures."""
    if not script.path.exists():
        script.status = "missing"
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "figures.json"
        command = [sys.executable, str(script.path), *script.args, "--json", str(out)]
        print(f"$ {' '.join(command[1:])}", file=sys.stderr, flush=True)
        script.load = os.getloadavg()[0]
        start = time.perf_counter()
        try:
            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            script.status = f"failed: timed out after {timeout:.0f} s"
            return
        finally:
            script.seconds = time.perf_counter() - start
        sys.stderr.write(done.stdout)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            script.status = f"failed (exit {done.returncode}): {last}"
            sys.stderr.write(done.stderr)
            return
        if not out.exists():
            script.status = "failed: wrote no JSON"
            return
        script.figures = json.loads(out.read_text(encoding="utf-8"))
        script.status = "ok"


def trace_memory(events: int = TRACE_EVENTS) -> dict[str, float]:
    """Peak and retained memory (tracemalloc) of a run whose trace records ``events`` items.

    The run streams an answer of ``events - 10`` words, so that with the run's other records the
    trace holds about ``events`` items; the exact count is returned.
    """
    from nbagent import AssistantAgent, ReplayChatCompletionClient, TextMessage

    text = " ".join(f"w{i}" for i in range(events - 10))
    agent = AssistantAgent("bench", ReplayChatCompletionClient([text], keep_requests=1), model_client_stream=True)
    task = [TextMessage(content="go", source="user")]

    async def run() -> int:
        count = 0
        async for _ in agent.iter(task):
            count += 1
        return count

    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    items = asyncio.run(run())
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "trace_items": items,
        "peak_mib": (peak - before) / 2**20,
        "retained_mib": (current - before) / 2**20,
        "retained_bytes_per_item": (current - before) / items,
    }


def machine() -> dict[str, str]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for package in PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cores": str(os.cpu_count()),
        "cpu": cpu,
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "commit": commit,
        "packages": ", ".join(f"{name} {version}" for name, version in versions.items()),
    }


def number(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value == 0 or abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:.3g}" if abs(value) < 1 else f"{value:.2f}".rstrip("0").rstrip(".")
    return str(value).replace("|", "\\|")


def flatten(data: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            rows.extend(flatten(value, f"{path}."))
        elif isinstance(value, list):
            rows.append((path, f"{len(value)} values"))
        else:
            rows.append((path, value))
    return rows


def comparison_table(figures: dict[str, Any]) -> list[str]:
    """nbagent against AutoGen, from compare_autogen.py's figures."""
    medians, derived = figures["scenario_medians_us"], figures["derived_us"]
    runs = figures["runs_per_side"]
    lines = [
        "| scenario (median CPU us per run) | runs | nbagent | nbagent, no trace | AutoGen 0.7.5 | AutoGen / nbagent |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, m in medians.items():
        lines.append(
            f"| {name} | {runs[name]:,} | {number(m['nbagent'])} | {number(m['nbagent_no_trace'])} "
            f"| {number(m['autogen'])} | {m['autogen'] / m['nbagent']:.1f}x |"
        )
    targets, met = figures["targets"], figures["targets_met"]
    goals = {
        "plain_run_us": f"<= {targets['plain_run_us']:g} us",
        "extra_iteration_us": f"<= {targets['extra_iteration_us']:g} us, >= {targets['extra_iteration_ratio']:g}x",
        "chunk_us": f"<= {targets['chunk_us']:g} us, >= {targets['chunk_ratio']:g}x",
    }
    verdicts = {
        "plain_run_us": met["plain_run_us"],
        "extra_iteration_us": met["extra_iteration_us"] and met["extra_iteration_ratio"],
        "chunk_us": met["chunk_us"] and met["chunk_ratio"],
    }
    lines += [
        "",
        "| derived (CPU us) | nbagent | nbagent, no trace | AutoGen 0.7.5 | AutoGen / nbagent | target | met |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for key, ratio in figures["ratios_autogen_over_nbagent"].items():
        lines.append(
            f"| {key} | {number(derived['nbagent'][key])} | {number(derived['nbagent_no_trace'][key])} "
            f"| {number(derived['autogen'][key])} | {ratio:.1f}x | {goals.get(key, '')} "
            f"| {('yes' if verdicts[key] else '**no**') if key in verdicts else ''} |"
        )
    wall, wall_ratios = figures["derived_wall_us"], figures["ratios_wall_autogen_over_nbagent"]
    lines += [
        "",
        "| derived (wall us, same runs) | nbagent | nbagent, no trace | AutoGen 0.7.5 | AutoGen / nbagent |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {key} | {number(wall['nbagent'][key])} | {number(wall['nbagent_no_trace'][key])} "
        f"| {number(wall['autogen'][key])} | {ratio:.1f}x |"
        for key, ratio in wall_ratios.items()
    ]
    load = figures["load_average_1min"]
    lines += [
        "",
        f"Load average (1 min) during this comparison: {load['start']:.2f} at start, {load['end']:.2f} at end.",
    ]
    return lines


def against_table(figures: dict[str, Any]) -> list[str]:
    """bench/against.py's figures: each side's median and the ratio of the rounds, with its spread."""
    head, base = figures["head"], figures["base"]
    load = figures["load_average"]
    lines = [
        f"`bench/{figures['script']}` on this tree ({head}) and on {base}, {figures['rounds']} rounds alternating "
        f"in fresh interpreters ({figures['date']}, load average {load['start'][0]:.2f} at start, "
        f"{load['end'][0]:.2f} at end); the ratio is {head} / {base} per round, its median and spread:",
        "",
        f"| figure (CPU us) | {head} | {base} | ratio | lowest-highest |",
        "|---|---:|---:|---:|---|",
    ]
    lines += [
        f"| {key} | {number(row['head'])} | {number(row['base'])} | {row['ratio']:.3f} "
        f"| {row['ratio_min']:.3f}-{row['ratio_max']:.3f} |"
        for key, row in figures["figures"].items()
    ]
    return lines


def summary(script: Path) -> str:
    """The first line of a benchmark script's docstring: what it measures."""
    doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or ""
    return doc.splitlines()[0] if doc else script.name


def write_results(scripts: list[Script], memory: dict[str, float] | str, info: dict[str, str], path: Path) -> None:
    lines = [
        "# Benchmark results",
        "",
        f"Written by `make bench` (`python bench/run_all.py`) on {info['date']}, commit {info['commit']}.",
        "",
        "| machine | |",
        "|---|---|",
        f"| CPU | {info['cpu']}, {info['cores']} cores ({info['os']}) |",
        f"| load average at start | {info['load']} |",
        f"| Python | {info['python']} |",
        f"| packages | {info['packages']} |",
        "",
        "## nbagent against AutoGen AgentChat",
        "",
    ]
    compare = scripts[0]
    if compare.status == "ok":
        lines += [
            "Same scripted answers, same async tool functions, one process, frameworks alternating batch "
            "by batch; fresh agent and replay client per run (built outside the timed region); timed: "
            "`await agent.run(task=...)` (the `_run_stream` scenarios: "
            "`async for item in agent.run_stream(task=...)`, which hands the caller every event, a chunk "
            "event per chunk; nbagent's `run()` builds none, since nobody sees them, and its trace records "
            "the chunks from the LLM call's stream), as CPU time of the process (`time.process_time`; on "
            "this shared machine time spent descheduled is not the framework's) and as wall time. Per extra "
            "tool iteration = (K5 - K1) / 4; per chunk = (1,000-word streamed run - same answer unstreamed) "
            "/ 1,000, through `run()` (`chunk_us`) and `run_stream()` (`chunk_event_us`). Each run is "
            "checked: same number of LLM calls, "
            'same message types and final content in both frameworks. "nbagent" records its trace (the '
            'default); "no trace" runs with `agent.recorders = []`.',
            "",
            *comparison_table(compare.figures),
        ]
    else:
        lines.append(f"`bench/{compare.name}`: {compare.status}.")
    lines += ["", "## Trace memory", ""]
    if isinstance(memory, str):
        lines.append(f"not measured: {memory}")
    else:
        lines += [
            f"One streamed run whose trace records {memory['trace_items']:,} items (tracemalloc, in run_all.py):",
            "",
            "| peak (MiB) | retained (MiB) | retained bytes per item |",
            "|---:|---:|---:|",
            f"| {number(memory['peak_mib'])} | {number(memory['retained_mib'])} "
            f"| {number(memory['retained_bytes_per_item'])} |",
        ]
    against = next((s for s in scripts if s.name == "against.py" and s.status != "not run"), None)
    if against is not None:
        lines += ["", "## Against an earlier commit", ""]
        failed = [f"`bench/against.py`: {against.status}."]
        lines += against_table(against.figures) if against.status == "ok" else failed
    lines += ["", "## Other benchmarks", ""]
    for script in scripts[1:]:
        if script.name == "against.py":
            continue
        lines += [
            f"### `bench/{script.name}`",
            "",
            f"{summary(BENCH / script.name)} (how to read it: the script's docstring)",
            "",
        ]
        if script.status != "ok":
            lines += [f"{script.status}.", ""]
            continue
        lines += ["| figure | value |", "|---|---:|"]
        lines += [f"| {key} | {number(value)} |" for key, value in flatten(script.figures)]
        lines.append("")
    moved = [line for script in scripts for line in script.changes]
    if moved:
        lines += ["## Against the last recorded figures (bench/history.jsonl)", "", "```", *moved, "```", ""]
    lines += ["## Runs", "", "| script | status | seconds |", "|---|---|---:|"]
    lines += [f"| bench/{s.name} | {number(s.status)} | {s.seconds:.1f} |" for s in scripts]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of compare_autogen's runs (a smoke run)")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds allowed per script")
    parser.add_argument("--out", type=Path, default=BENCH / "RESULTS.md")
    parser.add_argument("--only", nargs="+", metavar="SCRIPT", help="run only these scripts (others: not run)")
    parser.add_argument(
        "--against", metavar="COMMIT", help="also run bench_loop.py against this commit, alternating (bench/against.py)"
    )
    parser.add_argument("--no-history", action="store_true", help="record no figures into bench/history.jsonl")
    args = parser.parse_args(argv)
    info = machine()
    listed = [
        Script("compare_autogen.py", ["--scale", "0.1"] if args.quick else []),
        Script("bench_loop.py"),
        Script("against.py", [args.against, "--rounds", "3" if args.quick else "5"]) if args.against else None,
        Script("bench_trace.py"),
        Script("bench_view.py"),
        Script("bench_stop_pause.py", ["--repeat", "2"] if args.quick else []),
        Script("bench_import.py", ["--repeats", "5"] if args.quick else []),
        Script("bench_batch.py", ["--rounds", "1", "--tasks", "500"] if args.quick else []),
        Script("bench_replay.py", ["--runs", "200", "--repeats", "1"] if args.quick else []),
        Script("bench_experiment.py", ["--tasks", "1000", "--rounds", "1"] if args.quick else []),
        Script(
            "bench_explorer.py",
            ["--runs", "20000", "--repeats", "2", "--live-runs", "2000", "--dataset-runs", "20000"]
            if args.quick
            else [],
        ),
        Script("bench_explorer_batch.py", ["--parts", "50", "--updates", "3"] if args.quick else []),
        Script("bench_otlp.py", ["--runs", "10"] if args.quick else []),
        Script("bench_long_session.py", ["--runs", "10000", "--big-runs", "20"] if args.quick else []),
        Script("bench_iopub.py", ["--runs", "30"] if args.quick else []),
        Script("bench_runs_at_scale.py", ["--quick"] if args.quick else []),
        Script("bench_experiment_compare.py", ["--tasks", "1000", "--rounds", "2"] if args.quick else []),
    ]
    scripts = [script for script in listed if script is not None]
    for script in scripts:
        if args.only and script.name not in args.only:
            continue
        run_script(script, args.timeout)
        print(f"{script.name}: {script.status} ({script.seconds:.1f} s)", file=sys.stderr, flush=True)
        if script.status == "ok" and not args.no_history:
            script.changes = history.record(script.name, script.figures, load=script.load)
            print("\n".join(script.changes), file=sys.stderr, flush=True)
    memory: dict[str, float] | str
    try:
        memory = trace_memory()
    except Exception as error:  # reported in the table, not hidden
        memory = f"{type(error).__name__}: {error}"
    write_results(scripts, memory, info, args.out)
    raw = {"machine": info, "trace_memory": memory, "scripts": {s.name: vars(s) for s in scripts}}
    args.out.with_name("results.json").write_text(json.dumps(raw, indent=2, default=str), encoding="utf-8")
    print(args.out.read_text(encoding="utf-8"))
    return 0 if all(s.status in ("ok", "missing", "not run") for s in scripts) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
