"""nbagent against AutoGen AgentChat 0.7.5: the same scripted runs, side by side, in one process.

Each scenario replays the same script (same tool functions, same answers) through
``nbagent.AssistantAgent`` and ``autogen_agentchat.agents.AssistantAgent``, each on its own
``ReplayChatCompletionClient``. Frameworks alternate batch by batch (who goes first alternates too);
every run gets a fresh agent and client, built outside the timed region, and the time of
``await agent.run(task=...)`` is recorded, as CPU time of the process (``time.process_time``: on a
shared machine, time spent descheduled is not the framework's) and as wall time. Figures are
medians over all runs. Each run is checked:
both frameworks must make the expected number of LLM calls and return the same messages (types and
final content), else the script exits with an error.

Scenarios: a plain text answer; K=1 and K=5 tool iterations (the model calls one tool K times, then
answers; per extra iteration = (K5 - K1) / 4); a 1,000-word answer streamed and unstreamed (per
chunk = difference / 1,000), the same two through ``run_stream()`` (every event reaches the caller, a
chunk event per chunk: ``chunk_event_us``); 3 parallel tool calls; a plain answer with a 3-item
``ListMemory``. nbagent's ``run()`` builds no chunk events (the caller never sees them; the trace
records the chunks from the LLM call's stream), AutoGen's ``run()`` does.
nbagent is measured with its trace recording (the default) and with ``recorders = []``.

    pip install -e '.[bench]'
    python bench/compare_autogen.py [--scale 1.0] [--json out.json] [--profile SCENARIO]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import json
import logging
import os
import pstats
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import autogen_agentchat
import autogen_core
import autogen_ext
from autogen_agentchat.agents import AssistantAgent as AgAssistantAgent
from autogen_core import FunctionCall as AgFunctionCall
from autogen_core.memory import ListMemory as AgListMemory
from autogen_core.memory import MemoryContent as AgMemoryContent
from autogen_core.memory import MemoryMimeType
from autogen_core.models import CreateResult as AgCreateResult
from autogen_core.models import ModelInfo as AgModelInfo
from autogen_core.models import RequestUsage as AgRequestUsage
from autogen_core.tools import FunctionTool as AgFunctionTool
from autogen_ext.models.replay import ReplayChatCompletionClient as AgReplayClient

import nbagent

TARGETS = {
    "plain_run_us": 100.0,
    "extra_iteration_us": 60.0,
    "chunk_us": 1.5,
    "extra_iteration_ratio": 10.0,
    "chunk_ratio": 5.0,
}
STREAM_WORDS = 1000
TASK = "go"
# autogen-ext's replay client logs a warning for every message whose content is not a string; printing
# them would bill stderr writes to AutoGen, so warnings and below are disabled for both frameworks.
logging.disable(logging.WARNING)

MEMORY_ITEMS = ["The user likes short answers.", "The user's city is Lyon.", "Units are metric."]


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def mul(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


async def neg(a: int) -> int:
    """Negate a number."""
    return -a


TOOL_FUNCS = {"add": add, "mul": mul, "neg": neg}

Call = tuple[str, str, str]  # (id, tool name, JSON arguments)
Step = str | list[Call]  # a text answer or one response with tool calls


@dataclass(frozen=True)
class Scenario:
    """A scripted run: the model's answers in order, and how the agent is set up."""

    name: str
    script: tuple[Step, ...]
    tools: tuple[str, ...] = ()
    max_tool_iterations: int = 1
    stream: bool = False
    memory: bool = False
    run_stream: bool = False  # consume ``run_stream()`` (every event, chunk events included), not ``run()``
    runs: int = 1000

    @property
    def llm_calls(self) -> int:
        return len(self.script)


def tool_rounds(k: int) -> tuple[Step, ...]:
    """K responses calling ``add`` once each, then the text answer."""
    return (*([(f"call_{i}", "add", '{"a": 1, "b": 2}')] for i in range(k)), "The sum is 3.")


LONG_TEXT = " ".join(f"w{i}" for i in range(STREAM_WORDS))
PARALLEL: tuple[Step, ...] = (
    [("p0", "add", '{"a": 2, "b": 3}'), ("p1", "mul", '{"a": 2, "b": 3}'), ("p2", "neg", '{"a": 7}')],
    "5, 6 and -7.",
)


def scenarios(scale: float) -> list[Scenario]:
    """Every scenario, with its run count multiplied by ``scale`` (at least 5 runs)."""

    def n(runs: int) -> int:
        return max(int(runs * scale), 5)

    return [
        Scenario("plain", ("The answer is 42.",), runs=n(1000)),
        Scenario("tools_k1", tool_rounds(1), tools=("add",), max_tool_iterations=2, runs=n(600)),
        Scenario("tools_k5", tool_rounds(5), tools=("add",), max_tool_iterations=6, runs=n(300)),
        Scenario("long_unstreamed", (LONG_TEXT,), runs=n(1000)),
        Scenario("stream_1000", (LONG_TEXT,), stream=True, runs=n(100)),
        Scenario("long_unstreamed_run_stream", (LONG_TEXT,), run_stream=True, runs=n(1000)),
        Scenario("stream_1000_run_stream", (LONG_TEXT,), stream=True, run_stream=True, runs=n(100)),
        Scenario("parallel_3", PARALLEL, tools=("add", "mul", "neg"), max_tool_iterations=2, runs=n(600)),
        Scenario("memory", ("The answer is 42.",), memory=True, runs=n(1000)),
    ]


class Framework(Protocol):
    """What the runner needs from each framework."""

    name: str

    def make(self, scenario: Scenario) -> tuple[Any, Any]: ...

    def llm_calls(self, client: Any) -> int: ...


@dataclass
class NbagentSide:
    """nbagent, with the trace recording (default) or without any recorder."""

    name: str
    trace: bool = True
    tools: dict[str, nbagent.FunctionTool] = field(
        default_factory=lambda: {name: nbagent.FunctionTool(func) for name, func in TOOL_FUNCS.items()}
    )
    memory: nbagent.ListMemory = field(
        default_factory=lambda: nbagent.ListMemory(
            memory_contents=[nbagent.MemoryContent(content=t) for t in MEMORY_ITEMS]
        )
    )

    def _result(self, step: Step) -> str | nbagent.CreateResult:
        if isinstance(step, str):
            return step
        calls = [nbagent.FunctionCall(id=i, name=n, arguments=a) for i, n, a in step]
        return nbagent.CreateResult(finish_reason="function_calls", content=calls, usage=nbagent.RequestUsage())

    def make(self, scenario: Scenario) -> tuple[nbagent.AssistantAgent, nbagent.ReplayChatCompletionClient]:
        client = nbagent.ReplayChatCompletionClient([self._result(s) for s in scenario.script], keep_requests=1)
        agent = nbagent.AssistantAgent(
            "bench",
            client,
            tools=[self.tools[t] for t in scenario.tools] or None,
            max_tool_iterations=scenario.max_tool_iterations,
            model_client_stream=scenario.stream,
            memory=[self.memory] if scenario.memory else None,
        )
        if not self.trace:
            agent.recorders = []
        return agent, client

    def llm_calls(self, client: nbagent.ReplayChatCompletionClient) -> int:
        return len(client.chat_completions) - client.remaining


@dataclass
class AutogenSide:
    """autogen-agentchat's AssistantAgent on autogen-ext's replay client."""

    name: str = "autogen"
    tools: dict[str, AgFunctionTool] = field(
        default_factory=lambda: {name: AgFunctionTool(f, description=f.__doc__ or "") for name, f in TOOL_FUNCS.items()}
    )
    memory: AgListMemory = field(
        default_factory=lambda: AgListMemory(
            memory_contents=[AgMemoryContent(content=t, mime_type=MemoryMimeType.TEXT) for t in MEMORY_ITEMS]
        )
    )
    model_info: AgModelInfo = field(
        default_factory=lambda: AgModelInfo(
            vision=False, function_calling=True, json_output=False, family="unknown", structured_output=False
        )
    )

    def _result(self, step: Step) -> str | AgCreateResult:
        if isinstance(step, str):
            return step
        calls = [AgFunctionCall(id=i, name=n, arguments=a) for i, n, a in step]
        usage = AgRequestUsage(prompt_tokens=0, completion_tokens=0)
        return AgCreateResult(finish_reason="function_calls", content=calls, usage=usage, cached=False)

    def make(self, scenario: Scenario) -> tuple[AgAssistantAgent, AgReplayClient]:
        client = AgReplayClient([self._result(s) for s in scenario.script], model_info=self.model_info)
        agent = AgAssistantAgent(
            "bench",
            client,
            tools=[self.tools[t] for t in scenario.tools] or None,
            max_tool_iterations=scenario.max_tool_iterations,
            model_client_stream=scenario.stream,
            memory=[self.memory] if scenario.memory else None,
        )
        return agent, client

    def llm_calls(self, client: AgReplayClient) -> int:
        # create_stream does not log into create_calls: AutoGen's replay client counts its calls only here.
        return client._current_index  # noqa: SLF001 AutoGen's ReplayChatCompletionClient, no public count


def outcome(result: Any) -> tuple[list[str], str]:
    """What must match across frameworks: the message types of the run and the final content."""
    return [m.type for m in result.messages], str(result.messages[-1].content)


class MismatchError(AssertionError):
    """The two frameworks did not do the same work."""


async def one_run(side: Framework, scenario: Scenario) -> tuple[tuple[float, float], tuple[list[str], str]]:
    """One timed run on a fresh agent: ((CPU seconds, wall seconds), outcome)."""
    agent, client = side.make(scenario)
    cpu, wall = time.process_time(), time.perf_counter()
    if scenario.run_stream:
        async for result in agent.run_stream(task=TASK):  # noqa: B007 (the last item, the TaskResult, is used)
            pass
    else:
        result = await agent.run(task=TASK)
    elapsed = (time.process_time() - cpu, time.perf_counter() - wall)
    calls = side.llm_calls(client)
    if calls != scenario.llm_calls:
        raise MismatchError(f"{side.name} made {calls} LLM calls in {scenario.name}, expected {scenario.llm_calls}")
    return elapsed, outcome(result)


async def measure(scenario: Scenario, sides: Sequence[Framework], batches: int) -> dict[str, dict[str, float]]:
    """Median microseconds per run, ``{"cpu"|"wall": {side: us}}``; fails loudly if the sides disagree."""
    samples: dict[str, list[tuple[float, float]]] = {side.name: [] for side in sides}
    reference: tuple[list[str], str] | None = None
    for side in sides:  # warm-up, and the cross-check of what each side produced
        for _ in range(3):
            _, got = await one_run(side, scenario)
        if reference is None:
            reference = got
        elif got != reference:
            raise MismatchError(f"{scenario.name}: {side.name} returned {got}, {sides[0].name} returned {reference}")
    per_batch = max(scenario.runs // batches, 1)
    for batch in range(batches):
        order = sides if batch % 2 == 0 else list(reversed(sides))
        for side in order:
            gc.collect()
            for _ in range(per_batch):
                elapsed, got = await one_run(side, scenario)
                if got != reference:
                    raise MismatchError(f"{scenario.name}: {side.name} returned {got}, expected {reference}")
                samples[side.name].append(elapsed)
    return {
        clock: {name: statistics.median(v[index] for v in values) * 1e6 for name, values in samples.items()}
        for index, clock in enumerate(("cpu", "wall"))
    }


def derive(medians: dict[str, dict[str, float]], side: str) -> dict[str, float]:
    m = {name: values[side] for name, values in medians.items()}
    return {
        "plain_run_us": m["plain"],
        "extra_iteration_us": (m["tools_k5"] - m["tools_k1"]) / 4,
        "chunk_us": (m["stream_1000"] - m["long_unstreamed"]) / STREAM_WORDS,
        "chunk_event_us": (m["stream_1000_run_stream"] - m["long_unstreamed_run_stream"]) / STREAM_WORDS,
        "parallel_3_run_us": m["parallel_3"],
        "memory_run_us": m["memory"],
    }


def versions() -> dict[str, str]:
    return {
        "python": sys.version.split()[0],
        "nbagent": nbagent.__version__,
        "autogen-agentchat": autogen_agentchat.__version__,
        "autogen-core": autogen_core.__version__,
        "autogen-ext": autogen_ext.__version__,
    }


async def run_all(scale: float, batches: int) -> dict[str, Any]:
    sides: list[Framework] = [NbagentSide("nbagent"), AutogenSide(), NbagentSide("nbagent_no_trace", trace=False)]
    medians: dict[str, dict[str, dict[str, float]]] = {"cpu": {}, "wall": {}}
    runs: dict[str, int] = {}
    load = os.getloadavg()[0]
    for scenario in scenarios(scale):
        measured = await measure(scenario, sides, batches)
        for clock, values in measured.items():
            medians[clock][scenario.name] = values
        runs[scenario.name] = scenario.runs
        print(
            f"  {scenario.name:<16}" + "".join(f"{side.name} {measured['cpu'][side.name]:9.1f} us  " for side in sides),
            file=sys.stderr,
        )
    data: dict[str, Any] = {"runs_per_side": runs, "targets": TARGETS, "versions": versions()}
    for clock, suffix in (("cpu", ""), ("wall", "_wall")):
        derived = {side.name: derive(medians[clock], side.name) for side in sides}
        data[f"scenario_medians{suffix}_us"] = medians[clock]
        data[f"derived{suffix}_us"] = derived
        data[f"ratios{suffix}_autogen_over_nbagent"] = {
            key: derived["autogen"][key] / derived["nbagent"][key] for key in derived["nbagent"]
        }
    data["load_average_1min"] = {"start": load, "end": os.getloadavg()[0]}
    return data


def check_targets(data: dict[str, Any]) -> dict[str, bool]:
    nb, ratios = data["derived_us"]["nbagent"], data["ratios_autogen_over_nbagent"]
    return {
        "plain_run_us": nb["plain_run_us"] <= TARGETS["plain_run_us"],
        "extra_iteration_us": nb["extra_iteration_us"] <= TARGETS["extra_iteration_us"],
        "chunk_us": nb["chunk_us"] <= TARGETS["chunk_us"],
        "extra_iteration_ratio": ratios["extra_iteration_us"] >= TARGETS["extra_iteration_ratio"],
        "chunk_ratio": ratios["chunk_us"] >= TARGETS["chunk_ratio"],
    }


def report(data: dict[str, Any]) -> str:
    lines = [f"{'scenario (median CPU us/run)':<28}{'nbagent':>10}{'no trace':>10}{'AutoGen':>10}{'ratio':>8}"]
    for name, m in data["scenario_medians_us"].items():
        lines.append(
            f"{name:<28}{m['nbagent']:>10.1f}{m['nbagent_no_trace']:>10.1f}{m['autogen']:>10.1f}"
            f"{m['autogen'] / m['nbagent']:>7.1f}x"
        )
    lines.append("")
    lines.append(f"{'derived (CPU us)':<28}{'nbagent':>10}{'no trace':>10}{'AutoGen':>10}{'ratio':>8}")
    d = data["derived_us"]
    for key, ratio in data["ratios_autogen_over_nbagent"].items():
        lines.append(
            f"{key:<28}{d['nbagent'][key]:>10.2f}{d['nbagent_no_trace'][key]:>10.2f}{d['autogen'][key]:>10.2f}"
            f"{ratio:>7.1f}x"
        )
    lines.append("")
    wall, wall_ratios = data["derived_wall_us"], data["ratios_wall_autogen_over_nbagent"]
    lines.append(f"{'derived (wall us)':<28}{'nbagent':>10}{'no trace':>10}{'AutoGen':>10}{'ratio':>8}")
    for key, ratio in wall_ratios.items():
        lines.append(
            f"{key:<28}{wall['nbagent'][key]:>10.2f}{wall['nbagent_no_trace'][key]:>10.2f}"
            f"{wall['autogen'][key]:>10.2f}{ratio:>7.1f}x"
        )
    lines.append(f"load average (1 min) {data['load_average_1min']}")
    lines.append("")
    for key, ok in data["targets_met"].items():
        lines.append(f"target {key:<24} {'met' if ok else 'MISSED'} (goal {TARGETS[key]})")
    return "\n".join(lines)


def profile(name: str, runs: int, side_name: str) -> str:
    """cProfile of ``runs`` runs of one scenario on one side; the top functions by own time."""
    scenario = next(s for s in scenarios(1.0) if s.name == name)
    side: Framework = AutogenSide() if side_name == "autogen" else NbagentSide(side_name, trace=side_name == "nbagent")

    async def many() -> None:
        for _ in range(runs):
            await one_run(side, scenario)

    profiler = cProfile.Profile()
    profiler.runcall(asyncio.run, many())
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(40)
    return out.getvalue()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every scenario's run count")
    parser.add_argument("--batches", type=int, default=10, help="alternating batches per scenario")
    parser.add_argument("--json", metavar="PATH", help="also write the figures to this JSON file")
    parser.add_argument("--profile", metavar="SCENARIO", help="profile one scenario instead of comparing")
    parser.add_argument("--side", default="nbagent", choices=["nbagent", "nbagent_no_trace", "autogen"])
    parser.add_argument("--profile-runs", type=int, default=300)
    args = parser.parse_args(argv)
    if args.profile:
        print(profile(args.profile, args.profile_runs, args.side))
        return {}
    data = asyncio.run(run_all(args.scale, args.batches))
    data["targets_met"] = check_targets(data)
    print(report(data))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2)
    return data


if __name__ == "__main__":
    main(sys.argv[1:])
