"""The loop's shape is written once, in ``records.MOVES``: every run of the contract's scenarios follows it.

The scenarios are the ones the other tests already encode: each test of ``test_event_orders.py`` (one
per row of docs/contract.md's event-order table), ``test_summary_and_errors.py`` (defaults, summary,
tool errors) and ``test_fixes.py`` (the nbagent fixes), run as they are, and every scripted scenario of
``tests/stepper/scenarios.py``. While they run, each agent's runs are observed through a recorder
(``AgentRun.__init__``, whichever entry point makes the run, is wrapped to add it), and the moves of
each run are checked against MOVES:

- each move is ``possible`` under the agent's ``loop_settings``, a run starts at ``add_messages``;
- each transition (two consecutive moves, and the last move -> END when the run ends with a
  ``Response``) is an edge of MOVES, ``possible`` under those settings;
- every method MOVES names exists on ``AssistantAgent``;
- and the converse, for coverage: every move and every edge of MOVES is made by at least one scenario.
"""

from __future__ import annotations

import inspect
import itertools
import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any

import pytest

from nbagent import (
    AssistantAgent,
    CreateResult,
    ListMemory,
    MemoryContent,
    ReplayChatCompletionClient,
    Response,
)
from nbagent.agent import AgentRun
from nbagent.records import END, MOVES, LoopSettings, Move, RunFinished, RunItem, RunStarted

from ..stepper.scenarios import SCENARIOS, add, calls, text
from . import test_event_orders, test_fixes, test_summary_and_errors

CONTRACT_MODULES: list[ModuleType] = [test_event_orders, test_summary_and_errors, test_fixes]

Transition = tuple[str, str]  # (move, next move or END)


@dataclass
class ObservedRun:
    """The moves one run made, under the settings of its agent, and how it ended."""

    settings: LoopSettings
    moves: list[str] = field(default_factory=list)
    response: bool = False
    status: str | None = None
    ran: set[tuple[str, str]] = field(default_factory=set)  # (method of MOVES, the move current as it ran)

    def transitions(self) -> list[Transition]:
        pairs = list(itertools.pairwise(self.moves))
        if self.response and self.status == "ok" and self.moves:
            pairs.append((self.moves[-1], END))
        return pairs


class MoveLog:
    """A recorder that keeps the moves of every run of one agent."""

    def __init__(self, agent: AssistantAgent, runs: list[ObservedRun]) -> None:
        self.agent = agent
        self.runs = runs
        self.current: ObservedRun | None = None

    def record(self, item: RunItem) -> None:
        if isinstance(item, RunStarted):
            self.current = ObservedRun(self.agent.loop_settings)
            self.runs.append(self.current)
        elif self.current is None:
            return
        elif isinstance(item, Move):
            self.current.moves.append(item.name)
        elif isinstance(item, Response):
            self.current.response = True
        elif isinstance(item, RunFinished):
            self.current.status = item.status
            self.current = None


class Resumes:
    """An async generator that calls ``note`` each time it is resumed (its body runs on)."""

    def __init__(self, generator: AsyncGenerator[Any, Any], note: Callable[[], None]) -> None:
        self.generator = generator
        self.note = note

    def __aiter__(self) -> Resumes:
        return self

    def __anext__(self) -> Awaitable[Any]:
        self.note()
        return self.generator.__anext__()

    def asend(self, value: Any) -> Awaitable[Any]:
        self.note()
        return self.generator.asend(value)

    def athrow(self, *args: Any) -> Awaitable[Any]:
        self.note()
        return self.generator.athrow(*args)

    def aclose(self) -> Awaitable[None]:
        return self.generator.aclose()


def noting_runs(method: str, original: Callable[..., Any], note: Callable[[Any, str], None]) -> Callable[..., Any]:
    """``original`` calling ``note(agent, method)`` whenever its body runs: when a sync method or a
    coroutine starts, and at every resumption of an async generator."""
    if inspect.isasyncgenfunction(original):

        def generator(self: Any, *args: Any, **kwargs: Any) -> Resumes:
            return Resumes(original(self, *args, **kwargs), lambda: note(self, method))

        return generator
    if inspect.iscoroutinefunction(original):

        async def coroutine(self: Any, *args: Any, **kwargs: Any) -> Any:
            note(self, method)
            return await original(self, *args, **kwargs)

        return coroutine

    def function(self: Any, *args: Any, **kwargs: Any) -> Any:
        note(self, method)
        return original(self, *args, **kwargs)

    return function


def observing(monkeypatch: pytest.MonkeyPatch) -> list[ObservedRun]:
    """Observe every run started while the test runs: a new ``AgentRun`` (``iter``, ``run``... make one)
    adds a :class:`MoveLog` to its agent's recorders, and each method MOVES names notes which move is
    current whenever it runs."""
    runs: list[ObservedRun] = []
    logs: dict[int, MoveLog] = {}
    original = AgentRun.__init__

    def note(agent: Any, method: str) -> None:
        log = logs.get(id(agent))
        if log is not None and log.current is not None and log.current.moves:
            log.current.ran.add((method, log.current.moves[-1]))

    for method in {info.method for info in MOVES.values()}:
        function = getattr(AssistantAgent, method, None)
        if callable(function):
            monkeypatch.setattr(AssistantAgent, method, noting_runs(method, function, note))

    def init_observed(self: AgentRun, agent: AssistantAgent, *args: Any, **kwargs: Any) -> None:
        original(self, agent, *args, **kwargs)
        log = logs.setdefault(id(agent), MoveLog(agent, runs))
        if log not in agent.recorders:
            agent.recorders.append(log)

    monkeypatch.setattr(AgentRun, "__init__", init_observed)
    return runs


def calls_of(test: Callable[..., Awaitable[None]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The calls pytest makes of a test function: one per combination of its parametrize marks."""
    axes: list[list[dict[str, Any]]] = []
    for mark in getattr(test, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        names = [n.strip() for n in mark.args[0].split(",")] if isinstance(mark.args[0], str) else list(mark.args[0])
        axis = []
        for value in mark.args[1]:
            if hasattr(value, "values") and hasattr(value, "marks"):  # pytest.param(...)
                value = value.values if len(names) > 1 else value.values[0]
            axis.append(dict(zip(names, value)) if len(names) > 1 else {names[0]: value})
        axes.append(axis)
    for indexes in itertools.product(*(range(len(axis)) for axis in axes)):
        kwargs: dict[str, Any] = {}
        for axis, index in zip(axes, indexes):
            kwargs.update(axis[index])
        yield "-".join(map(str, indexes)), kwargs


def contract_scenarios() -> list[tuple[str, Callable[[pytest.MonkeyPatch], Awaitable[None]]]]:
    """Every scenario: the contract tests that take no fixture (each parametrized case), the stepper scripts."""
    out: list[tuple[str, Callable[[pytest.MonkeyPatch], Awaitable[None]]]] = []
    for module in CONTRACT_MODULES:
        for name, test in inspect.getmembers(module, inspect.iscoroutinefunction):
            if not name.startswith("test_") or test.__module__ != module.__name__:
                continue
            takes_monkeypatch = "monkeypatch" in inspect.signature(test).parameters
            for label, kwargs in calls_of(test):
                if set(inspect.signature(test).parameters) - set(kwargs) - {"monkeypatch"}:
                    continue  # a fixture this runner does not give

                async def run_test(
                    monkeypatch: pytest.MonkeyPatch,
                    test: Callable[..., Awaitable[None]] = test,
                    kwargs: dict[str, Any] = kwargs,
                    takes_monkeypatch: bool = takes_monkeypatch,
                ) -> None:
                    await test(**kwargs, **({"monkeypatch": monkeypatch} if takes_monkeypatch else {}))

                short = module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
                out.append((f"{short}.{name}" + (f"[{label}]" if label else ""), run_test))
    for scenario in SCENARIOS:

        async def run_script(monkeypatch: pytest.MonkeyPatch, scenario: Any = scenario) -> None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # two handoffs warn
                await scenario.agent().run(task="go")

        out.append((f"stepper.{scenario.name}", run_script))
    return out


def path_scripts(settings: LoopSettings) -> dict[str, list[str | CreateResult]]:
    """Model scripts that, under ``settings``, take every path MOVES makes possible: a text answer,
    a handoff, tool calls answered in the next iteration, tool calls until the iterations are used up."""
    call, handoff = calls(("c1", "add", '{"a": 1, "b": 2}')), calls(("h1", "transfer_to_billing", "{}"))
    after_tools = [text("3")] if settings.reflect_on_tool_use else []
    scripts: dict[str, list[str | CreateResult]] = {"text": [text("hi")]}
    scripts["tools_used_up"] = [*[call] * settings.max_tool_iterations, *after_tools]
    if settings.max_tool_iterations > 1:
        scripts["tools_then_text"] = [call, text("3")]
    if settings.handoffs:
        scripts["handoff"] = [handoff]
    return scripts


ALL_SETTINGS = [
    LoopSettings(memory, handoffs, iterations, reflect)
    for memory, handoffs, iterations, reflect in itertools.product((False, True), (False, True), (1, 2), (False, True))
]


def path_scenarios() -> list[tuple[str, Callable[[pytest.MonkeyPatch], Awaitable[None]]]]:
    """For every settings MOVES tells apart, one scenario per path of :func:`path_scripts`."""
    out: list[tuple[str, Callable[[pytest.MonkeyPatch], Awaitable[None]]]] = []
    for settings in ALL_SETTINGS:
        for path, script in path_scripts(settings).items():

            async def run_path(
                monkeypatch: pytest.MonkeyPatch, settings: LoopSettings = settings, script: list[Any] = script
            ) -> None:
                agent = AssistantAgent(
                    "assistant",
                    ReplayChatCompletionClient(list(script)),
                    tools=[add],
                    handoffs=["billing"] if settings.handoffs else None,
                    memory=[ListMemory(memory_contents=[MemoryContent(content="likes tea")])]
                    if settings.memory
                    else None,
                    max_tool_iterations=settings.max_tool_iterations,
                    reflect_on_tool_use=settings.reflect_on_tool_use,
                )
                assert canonical(agent.loop_settings) == settings
                await agent.run(task="go")

            flags = [name for name, on in vars(settings).items() if on is True or on == 2] or ["defaults"]
            out.append((f"paths.{'+'.join(flags)}.{path}", run_path))
    return out


SCENARIO_RUNS = contract_scenarios() + path_scenarios()
OBSERVED: dict[str, list[ObservedRun]] = {}  # by scenario: each is run once for both checks


async def observe(name: str, run: Callable[[pytest.MonkeyPatch], Awaitable[None]]) -> list[ObservedRun]:
    """The runs the scenario makes (run on first request only)."""
    if name not in OBSERVED:
        with pytest.MonkeyPatch.context() as monkeypatch:
            runs = observing(monkeypatch)
            await run(monkeypatch)
        OBSERVED[name] = runs
    return OBSERVED[name]


def edges_of(name: str, settings: LoopSettings) -> dict[str, bool]:
    """The targets of the edges out of ``name``, each with whether it is possible under ``settings``."""
    return {edge.target: edge.possible(settings) for edge in MOVES[name].edges}


def shape_errors(run: ObservedRun) -> list[str]:
    errors: list[str] = []
    if run.moves and run.moves[0] != "add_messages":
        errors.append(f"the run starts at {run.moves[0]!r}, not at add_messages")
    for name in run.moves:
        if name not in MOVES:
            errors.append(f"{name!r} is no move of MOVES")
        elif not MOVES[name].possible(run.settings):
            errors.append(f"{name!r} is not possible under {run.settings}")
    for index, name in enumerate(run.moves):
        if name not in MOVES or (index == len(run.moves) - 1 and run.status != "ok"):
            continue  # a run stopped at its last move may end before that move's method runs
        if (MOVES[name].method, name) not in run.ran:
            errors.append(f"{MOVES[name].method} did not run while {name!r} was the current move")
    for source, target in run.transitions():
        if source not in MOVES:
            continue
        targets = edges_of(source, run.settings)
        if target not in targets:
            errors.append(f"{source} -> {target} is no edge of MOVES")
        elif not targets[target]:
            errors.append(f"{source} -> {target} is not possible under {run.settings}")
    return errors


@pytest.mark.parametrize(("name", "run"), SCENARIO_RUNS, ids=[name for name, _ in SCENARIO_RUNS])
async def test_every_run_of_the_scenario_follows_moves(
    name: str, run: Callable[[pytest.MonkeyPatch], Awaitable[None]]
) -> None:
    runs = await observe(name, run)
    assert {name: [error for run in runs for error in shape_errors(run)]} == {name: []}


def test_every_method_moves_names_exists_on_the_agent() -> None:
    missing = {
        name: info.method for name, info in MOVES.items() if not callable(getattr(AssistantAgent, info.method, None))
    }
    assert missing == {}


def test_every_edge_target_is_a_move_or_the_end() -> None:
    assert [
        (name, edge.target) for name, info in MOVES.items() for edge in info.edges if edge.target not in (*MOVES, END)
    ] == []


async def test_every_move_and_edge_of_moves_is_made_by_some_scenario() -> None:
    made_moves: set[str] = set()
    made_edges: set[Transition] = set()
    for name, run in SCENARIO_RUNS:
        for observed in await observe(name, run):
            made_moves.update(observed.moves)
            made_edges.update(observed.transitions())
    edges = {(name, edge.target) for name, info in MOVES.items() for edge in info.edges}
    assert sorted(set(MOVES) - made_moves) == []
    assert sorted(edges - made_edges) == []


def canonical(settings: LoopSettings) -> LoopSettings:
    """Settings that make the same moves and edges possible (``possible`` reads only a tool loop's
    existence, not its length)."""
    return replace(settings, max_tool_iterations=min(settings.max_tool_iterations, 2))


def possible_under(settings: LoopSettings) -> tuple[set[str], set[Transition]]:
    """The moves and the edges (out of a possible move) MOVES makes possible under ``settings``."""
    moves: set[str] = {name for name, info in MOVES.items() if info.possible(settings)}
    edges: set[Transition] = {
        (name, edge.target)
        for name, info in MOVES.items()
        if name in moves
        for edge in info.edges
        if edge.possible(settings)
    }
    return moves, edges


async def test_under_each_settings_every_possible_move_and_edge_is_made() -> None:
    """Per settings the scenarios run under (every combination MOVES tells apart, by the path
    scenarios): what MOVES says is possible there is made there (a condition dropped from an edge or
    a move makes it possible where no run takes it)."""
    made: dict[LoopSettings, tuple[set[str], set[Transition]]] = {}
    for name, run in SCENARIO_RUNS:
        for observed in await observe(name, run):
            moves, edges = made.setdefault(canonical(observed.settings), (set(), set()))
            moves.update(observed.moves)
            edges.update(observed.transitions())
    missing = {}
    for settings, (moves, edges) in made.items():
        possible_moves, possible_edges = possible_under(settings)
        if possible_moves - moves or possible_edges - edges:
            missing[str(settings)] = sorted(possible_moves - moves), sorted(possible_edges - edges)
    assert sorted(map(str, made)) == sorted(map(str, ALL_SETTINGS))
    assert missing == {}, "\n".join(f"{key}: moves {moves}, edges {edges}" for key, (moves, edges) in missing.items())
