"""nbagent.Batch on the replay model: inputs, bad input, results and their dtypes, template copies,
concurrency, timeouts, cancellation, progress, and the trace's frames by task."""

from __future__ import annotations

import asyncio
import time
import warnings

import pandas as pd
import pytest

import nbagent
from nbagent import (
    AssistantAgent,
    Batch,
    BatchProgress,
    CreateResult,
    ReplayChatCompletionClient,
    TextMessage,
    run_many,
)
from nbagent.batch import RESULT_COLUMNS, STATUSES
from nbagent.models.base import ChatCompletionClient, ModelInfo, ModelRequest

from .helpers import LOOKUP, Factory, Gauge, contexts_valid, tool_script

CITIES = ["Paris", "Oslo", "Rome", "Lima", "Cairo"]


def test_exported_from_nbagent() -> None:
    assert nbagent.Batch is Batch and nbagent.run_many is run_many
    assert {"Batch", "BatchProgress", "run_many"} <= set(nbagent.__all__)


async def test_a_list_runs_in_input_order_with_real_dtypes() -> None:
    factory = Factory()
    batch = await Batch(factory, CITIES, concurrency=2, progress=None).run()
    results = batch.results
    assert list(results.columns) == list(RESULT_COLUMNS)
    assert list(results["task"]) == CITIES
    assert list(results["answer"]) == [f"It is sunny in {city}." for city in CITIES]
    assert set(results["status"]) == {"ok"} and list(results["status"].cat.categories) == list(STATUSES)
    dtypes = {name: str(dtype) for name, dtype in results.dtypes.items()}
    assert dtypes == {name: dtype for name, (dtype, _) in RESULT_COLUMNS.items()}
    assert list(results["llm_calls"]) == [2] * 5 and list(results["tool_calls"]) == [1] * 5
    assert list(results["attempts"]) == [1] * 5
    assert list(results["stop_reason"].astype(str)) == ["stop"] * 5
    assert results["prompt_tokens"].gt(0).all() and results["completion_tokens"].gt(0).all()
    assert (results["ended_at"] >= results["started_at"]).all() and str(results["started_at"].dt.tz) == "UTC"
    assert results["duration_s"].gt(0).all() and results["run_id"].is_unique
    assert contexts_valid(factory.agents) == []
    assert factory.calls == CITIES  # the factory is given the task's text


async def test_series_dataframe_and_iterables() -> None:
    series = pd.Series(CITIES[:3], index=["a", "b", "c"])
    batch = await Batch(Factory(), series, progress=None).run()
    assert list(batch.results.index) == ["a", "b", "c"] and list(batch.results["task"]) == CITIES[:3]

    frame = pd.DataFrame({"task": CITIES[:3], "expected": ["P", "O", "R"], "status": [1, 2, 3]}, index=[10, 20, 30])
    factory = Factory()
    batch = await Batch(factory, frame, progress=None).run()
    results = batch.results
    assert list(results.index) == [10, 20, 30]
    assert list(results["expected"]) == ["P", "O", "R"]  # the input's other columns are kept
    assert list(results["status_input"]) == [1, 2, 3]  # a clash with a result column is renamed
    assert isinstance(factory.calls[0], pd.Series) and factory.calls[0]["expected"] == "P"  # the row

    generated = (city for city in CITIES)
    batch = await Batch(Factory(), generated, progress=None).run()
    assert list(batch.results["task"]) == CITIES and batch.total == 5

    messages = [TextMessage(content="Paris", source="user"), [TextMessage(content="Oslo", source="user")]]
    batch = await Batch(Factory(), messages, progress=None).run()
    assert list(batch.results["status"]) == ["ok", "ok"] and list(batch.results["task"]) == ["Paris", "Oslo"]

    custom = pd.DataFrame({"question": ["Paris"]})
    batch = await Batch(lambda row: Factory()(row["question"]), custom, task_column="question", progress=None).run()
    assert list(batch.results["status"]) == ["ok"]


async def test_an_empty_task_list_gives_empty_results() -> None:
    factory = Factory()
    batch = await Batch(factory, [], progress=None).run()
    assert batch.state == "done" and factory.calls == []
    results = batch.results
    assert len(results) == 0 and list(results.columns) == list(RESULT_COLUMNS)
    assert str(results["prompt_tokens"].dtype) == "Int64"
    progress = batch.progress()
    assert (progress.total, progress.done, progress.fraction, progress.eta_s) == (0, 0, 1.0, None)


def test_wrong_arguments_raise_at_once() -> None:
    with pytest.raises(TypeError, match=r"Batch: tasks must be a list of tasks.*got str 'Paris'. A single task is"):
        Batch(Factory(), "Paris")
    with pytest.raises(TypeError, match="Batch: tasks must be .*got int 3"):
        Batch(Factory(), 3)
    with pytest.raises(TypeError, match="Batch: make_agent must be a function .* or an AssistantAgent, got str"):
        Batch("gpt-4o", CITIES)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Batch: task_column must be a column of the tasks DataFrame \(question\)"):
        Batch(Factory(), pd.DataFrame({"question": ["x"]}))
    with pytest.raises(ValueError, match=r"Batch: concurrency must be an int greater than or equal to 1, got 0"):
        Batch(Factory(), CITIES, concurrency=0)
    with pytest.raises(TypeError, match="Batch: timeout must be a number greater than 0"):
        Batch(Factory(), CITIES, timeout="60")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Batch: retries must be"):
        Batch(Factory(), CITIES, retries=-1)
    with pytest.raises(ValueError, match=r"Batch: shard must be \(i, n\) with n >= 1 and 0 <= i < n, got \(2, 2\)"):
        Batch(Factory(), CITIES, shard=(2, 2))
    with pytest.raises(TypeError, match="Batch: shard must be a tuple"):
        Batch(Factory(), CITIES, shard=[0, 2])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Batch: progress must be one of"):
        Batch(Factory(), CITIES, progress="bar")


async def test_a_failing_factory_a_wrong_task_and_a_reused_agent_are_rows() -> None:
    shared = AssistantAgent("shared", ReplayChatCompletionClient(["a", "b", "c"]))

    def make(task: object) -> object:
        if task == "boom":
            raise ValueError("no agent for boom")
        if task == "none":
            return None
        if task in ("again", "again too"):
            return shared
        return Factory()(task)

    tasks = ["Paris", "boom", 42, "none", "again", "again too", None, [], float("nan"), "Oslo"]
    batch = await Batch(make, tasks, concurrency=1, progress=None).run()  # type: ignore[arg-type]
    results = batch.results
    assert list(results["status"]) == ["ok", "error", "error", "error", "ok", "error", "error", "error", "error", "ok"]
    errors = list(results["error"])
    assert errors[1] == "make_agent raised ValueError: no agent for boom"
    assert errors[2].startswith("TypeError: Batch: the task at position 2: task must be a str, a chat message")
    assert errors[2].endswith("got int 42")
    assert errors[3] == "make_agent returned None, not an AssistantAgent"
    assert "make_agent returned the agent 'shared' that another task of this batch ran on" in errors[5]
    assert errors[6].endswith("task must be a str, a chat message or a non-empty list of chat messages, got None")
    assert errors[7].endswith("got list []") and errors[8].endswith("got float nan")
    assert list(results["task"])[2] == "42" and list(results["attempts"]) == [1, 0, 0, 0, 1, 0, 0, 0, 0, 1]
    assert batch.progress().failed == 7 and batch.state == "done"


async def test_a_template_agent_is_copied_for_each_task() -> None:
    seen: list[str] = []

    def formatter(call: object, result: object) -> str:
        seen.append("formatted")
        return "summary"

    client = ReplayChatCompletionClient(tool_script("Paris"))
    template = AssistantAgent(
        "weather", client, tools=[LOOKUP], system_message="Be brief.", tool_call_summary_formatter=formatter
    )
    batch = await Batch(template, ["Paris", "Oslo", "Rome"], concurrency=3, progress=None).run()
    results = batch.results
    # Each copy replays the script from its start (a stateful client is loaded from its config).
    assert list(results["status"]) == ["ok"] * 3 and list(results["answer"]) == ["summary"] * 3
    assert list(results["stop_reason"]) == ["tool_summary"] * 3 and seen == ["formatted"] * 3
    assert template.model_context.messages == [] and client.remaining == 2  # the template never ran
    runs = batch.trace.runs_df()
    assert len(runs) == 3 and set(runs["task"]) == {"Paris", "Oslo", "Rome"}


async def test_a_template_shares_a_stateless_client_and_the_tool_objects() -> None:
    from nbagent.batch import agent_copier

    client = nbagent.OpenAIChatCompletionClient("gpt-4o", base_url="http://127.0.0.1:9/v1", api_key="sk-x")
    template = AssistantAgent("a", client, tools=[LOOKUP], system_message="Hi.", max_tool_iterations=3)
    copy = agent_copier(template)
    first, second = copy("x"), copy("y")
    assert first.model_client is client and second.model_client is client  # its connections are shared
    assert first.workbench == template.workbench and first.tools == template.tools
    assert first.model_context is not second.model_context and first.max_tool_iterations == 3
    assert first.dump_component().config["system_message"] == "Hi."
    await client.close()


async def test_a_template_whose_stateful_client_has_no_config_cannot_be_copied_and_says_what_to_do() -> None:
    class Counting(ChatCompletionClient):
        """A client that keeps state (its calls) and has no component config."""

        model_info = ModelInfo(vision=False, function_calling=True, json_output=False, family="unknown")

        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        async def complete(self, request: ModelRequest, cancellation_token: object = None) -> CreateResult:
            self.calls += 1
            return CreateResult(finish_reason="stop", content="x")

        def checkpoint(self) -> int:
            return self.calls

    template = AssistantAgent("a", Counting())
    expected = r"make_agent.*cannot be copied for each task: its model client Counting keeps state.* pass a function"
    with pytest.raises(TypeError, match=expected):
        Batch(template, ["x"])


async def test_a_template_copy_shares_its_context_settings_and_loads_a_stateful_client_anew() -> None:
    from nbagent import TokenLimitedChatCompletionContext

    def count(messages: object) -> int:
        return 1

    context = TokenLimitedChatCompletionContext(token_limit=100, count_tokens=count)
    client = ReplayChatCompletionClient(["x"])
    template = AssistantAgent("a", client, model_context=context)
    batch = await Batch(template, ["one", "two"], progress=None).run()
    assert list(batch.results["answer"]) == ["x", "x"] and client.remaining == 1  # each copy had its own script
    assert template.model_context.messages == []  # the template never ran


async def test_concurrency_is_bounded() -> None:
    gauge = Gauge(0.05)
    factory = Factory(tool=gauge.tool)
    batch = await Batch(factory, [f"c{i}" for i in range(40)], concurrency=7, progress=None).run()
    assert gauge.started == 40 and gauge.most == 7
    assert list(batch.results["status"]) == ["ok"] * 40


async def test_a_task_past_its_timeout_is_cancelled_and_the_batch_goes_on() -> None:
    gauge = Gauge(5.0)
    slow = Factory(tool=gauge.tool)
    fast = Factory()
    batch = Batch(lambda t: slow(t) if t == "slow" else fast(t), ["Paris", "slow", "Oslo"], timeout=0.3, progress=None)
    await batch.run()
    results = batch.results
    assert list(results["status"]) == ["ok", "timeout", "ok"]  # not the 5 s tool's "ok"
    assert results["duration_s"].iloc[1] >= 0.3
    assert contexts_valid(slow.agents + fast.agents) == []
    # The tool call that never finished has an error result in the context.
    assert slow.agents[0].model_context.messages[-1].content[0].is_error  # type: ignore[union-attr]
    attempts = batch.attempts_df()
    assert list(attempts[attempts["task_index"] == 1]["status"]) == ["timeout"]


async def test_stop_ends_every_run_promptly_and_keeps_the_finished_rows() -> None:
    gauge = Gauge(30.0)
    quick = Factory()
    slow = Factory(tool=gauge.tool)
    tasks = ["Paris", "Oslo", *[f"slow{i}" for i in range(6)], "never1", "never2"]
    batch = Batch(lambda t: slow(t) if t.startswith("slow") else quick(t), tasks, concurrency=6, progress=None)
    running = asyncio.ensure_future(batch.run())
    while gauge.now < 6:
        await asyncio.sleep(0.01)
    batch.stop()
    await asyncio.wait_for(running, 60)  # a hang guard: a stop that waited for the 30 s tools would end "ok"
    assert batch.state == "stopped"
    results = batch.results
    assert list(results["status"]) == ["ok", "ok"] + ["cancelled"] * 8
    assert list(results["answer"][:2]) == ["It is sunny in Paris.", "It is sunny in Oslo."]
    assert list(results["attempts"]) == [1, 1, 1, 1, 1, 1, 1, 1, 0, 0]  # the last two never started
    assert list(results["task"][-2:]) == ["never1", "never2"]
    assert contexts_valid(slow.agents + quick.agents) == []
    assert batch.progress().state == "stopped" and batch.progress().cancelled == 6


async def test_cancelling_run_stops_every_run_keeps_the_rows_and_propagates() -> None:
    gauge = Gauge(30.0)
    factory = Factory(tool=gauge.tool)
    batch = Batch(factory, [f"c{i}" for i in range(5)], concurrency=3, progress=None)
    running = asyncio.ensure_future(batch.run())
    while gauge.now < 3:
        await asyncio.sleep(0.01)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert batch.state == "stopped"
    assert list(batch.results["status"]) == ["cancelled"] * 5
    assert contexts_valid(factory.agents) == [] and len(factory.agents) == 3
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_running_again_runs_what_did_not_end_ok() -> None:
    failing = {"Oslo"}

    def make(task: str) -> AssistantAgent:
        if task in failing:
            raise RuntimeError("down")
        return Factory()(task)

    batch = Batch(make, CITIES, progress=None)
    await batch.run()
    assert list(batch.results["status"]) == ["ok", "error", "ok", "ok", "ok"]
    first_runs = list(batch.results["run_id"])
    failing.clear()
    await batch.run()
    results = batch.results
    assert list(results["status"]) == ["ok"] * 5
    assert list(results["run_id"])[0] == first_runs[0]  # not run again
    assert pd.isna(first_runs[1]) and not pd.isna(results["run_id"].iloc[1])
    assert batch.progress().skipped == 4 and len(batch.trace.runs_df()) == 5


async def test_the_trace_holds_every_run_and_its_frames_filter_by_task() -> None:
    batch = await run_many(Factory(), CITIES, concurrency=3, progress=None)
    assert isinstance(batch.trace, nbagent.Trace)
    runs = batch.trace.runs_df()
    assert len(runs) == 5 and set(runs["run_id"]) == set(batch.results["run_id"])
    tools = batch.tool_calls_df()
    assert list(tools.sort_values("task_index")["result"]) == [f"sunny in {city}" for city in CITIES]
    calls = batch.llm_calls_df()
    rome = calls[calls["task_index"] == 2]
    assert len(rome) == 2 and set(rome["attempt"]) == {1}
    events = batch.events_df(include_chunks=False)
    assert events["task_index"].notna().all() and set(events["task_index"]) == set(range(5))
    assert len(batch.runs_df()) == 5
    run_id = batch.results["run_id"].iloc[1]
    context = batch.trace.context_df(run_id)
    assert list(context["kind"]) == ["user", "assistant", "tool_result", "assistant"]


async def test_the_agents_own_trace_is_left_as_it_was() -> None:
    factory = Factory()
    await Batch(factory, ["Paris"], progress=None).run()
    agent = factory.agents[0]
    assert agent.recorders == [agent.trace] and len(agent.trace) == 0  # recorded in the batch's trace only


async def test_progress_is_given_at_most_ten_times_a_second_and_at_the_end() -> None:
    seen: list[tuple[float, BatchProgress]] = []
    factory = Factory(latency=0.01)
    tasks = [f"c{i}" for i in range(300)]
    batch = Batch(factory, tasks, concurrency=10, progress=lambda p: seen.append((time.monotonic(), p)))
    started = time.monotonic()
    await batch.run()
    elapsed = time.monotonic() - started
    assert elapsed > 0.4
    # Updates start at least 1/10 s apart, so there are at most 10 a second and the last: a count load can
    # only lower. (The gaps between the callbacks are no measure of that: an update slowed on a loaded machine
    # and the next one on time came 0.0005 s apart.)
    assert len(seen) <= elapsed * 10 + 2
    last = seen[-1][1]
    assert (last.state, last.done, last.ok, last.total, last.running) == ("done", 300, 300, 300, 0)
    assert last.tokens == int(batch.results["prompt_tokens"].sum() + batch.results["completion_tokens"].sum())
    assert last.p50_s is not None and last.p95_s is not None and last.p50_s <= last.p95_s
    assert last.throughput is not None and last.throughput > 0
    middle = [p for _, p in seen if p.state == "running" and 0 < p.done < 300]
    assert middle and all(p.eta_s is not None for p in middle) and max(p.running for p in middle) <= 10
    assert "done · 300/300 done · 300 ok · 0 failed" in last.line()


async def test_the_text_progress_bar(capsys: pytest.CaptureFixture[str]) -> None:
    await Batch(Factory(), CITIES, progress="text", title="weather").run()
    err = capsys.readouterr().err
    assert "weather: 100%" in err and "5/5" in err
    assert "weather: done · 5/5 done · 5 ok · 0 failed" in err


async def test_auto_progress_shows_nothing_outside_a_notebook_and_a_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    await Batch(Factory(), CITIES).run()
    assert capsys.readouterr().err == ""


def test_run_sync_in_a_script() -> None:
    batch = Batch(Factory(), CITIES, progress=None).run_sync()
    assert list(batch.results["status"]) == ["ok"] * 5


async def test_run_sync_inside_a_running_loop() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        batch = Batch(Factory(), CITIES, progress=None).run_sync()
    assert list(batch.results["status"]) == ["ok"] * 5


async def test_a_batch_runs_once_at_a_time() -> None:
    batch = Batch(Factory(latency=0.05), CITIES, progress=None)
    running = asyncio.ensure_future(batch.run())
    await asyncio.sleep(0.01)
    with pytest.raises(RuntimeError, match="this batch is running"):
        await batch.run()
    await running


def test_a_template_whose_class_cannot_be_copied_fails_at_batch_not_once_per_task() -> None:
    class Flavoured(AssistantAgent):
        """A subclass whose __init__ takes other arguments than AssistantAgent's."""

        def __init__(self, client: ChatCompletionClient, flavour: str = "plain") -> None:
            super().__init__("flavoured", client)
            self.flavour = flavour

    template = Flavoured(nbagent.OpenAIChatCompletionClient("gpt-4o", base_url="http://127.0.0.1:9/v1", api_key="k"))
    with pytest.raises(TypeError, match=r"make_agent, the agent 'flavoured', cannot be copied .*Flavoured.*unexpected"):
        Batch(template, ["x"])
