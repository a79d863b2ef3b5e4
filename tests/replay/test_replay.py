"""``trace.replay(run_id)``: a recorded run made again offline, equal to the original ids and times aside.

Every scenario of docs/contract.md (tests/stepper/scenarios.py) is run, recorded, written to Parquet
and JSON lines, loaded back and replayed from the live trace and from each file; the replayed run's
frames and context equal the original's. Then the cases the scenarios do not cover: failures, a second
turn (a starting context), formats and redaction, the entry points, pacing and bad input.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

import nbagent
from nbagent import (
    AssistantAgent,
    CreateResult,
    ReplayChatCompletionClient,
    RequestUsage,
    Stepper,
    TraceFrames,
    load_jsonl,
    load_parquet,
)
from nbagent.messages import ModelClientStreamingChunkEvent
from nbagent.models.base import UnreportedUsage
from nbagent.models.replay import ReplayExhaustedError
from nbagent.trace import LazyTrace
from nbagent.trace.replay import LIMITS, Replay

from ..stepper.scenarios import SCENARIOS, Scenario, Weather, add, calls, fail
from .helpers import assert_same_run, run_frames

pytestmark = pytest.mark.filterwarnings("ignore:Multiple handoffs detected")
TASK = "What is 2 + 3?"


def loaded(trace: TraceFrames, tmp_path: Path) -> dict[str, TraceFrames]:
    """The trace as it is, and read back from Parquet and from JSON lines."""
    return {
        "live": trace,
        "parquet": load_parquet(trace.to_parquet(tmp_path / "parquet")),
        "jsonl": load_jsonl(trace.to_jsonl(tmp_path / "jsonl")),
    }


async def run_quietly(agent: AssistantAgent, task: Any) -> BaseException | None:
    try:
        await agent.run(task=task)
    except Exception as error:  # a failed run is replayed too
        return error
    return None


async def replayed_run(source: TraceFrames, run_id: str) -> tuple[AssistantAgent, BaseException | None]:
    replay = source.replay(run_id)
    agent = AssistantAgent.from_replay(replay)
    return agent, await run_quietly(agent, list(replay.task))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_every_contract_scenario_replays_equal_through_parquet_and_jsonl(
    scenario: Scenario, tmp_path: Path
) -> None:
    agent = scenario.agent()
    await agent.run(task=TASK)
    run_id = agent.trace.last_run()
    expected = run_frames(agent.trace, run_id)  # made once, compared with each source's replay
    for name, source in loaded(agent.trace, tmp_path).items():
        again, error = await replayed_run(source, run_id)
        assert error is None, name
        assert_same_run(expected, again.trace)
        assert again.model_context.messages == agent.model_context.messages, name


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_a_replay_stepped_makes_the_recorded_moves(scenario: Scenario, tmp_path: Path) -> None:
    agent = scenario.agent()
    await agent.run(task=TASK)
    replay = load_parquet(agent.trace.to_parquet(tmp_path)).replay()
    stepper = Stepper(replay)
    results = await stepper.run_to_end()
    assert [r.name for r in results] == scenario.moves
    assert stepper.status == "finished"
    assert_same_run(agent.trace, stepper.agent.trace)


def scripted(script: list[str | CreateResult], **options: Any) -> AssistantAgent:
    return AssistantAgent("assistant", ReplayChatCompletionClient(script), **options)


FAILURES = {
    # the model has no answer for the reflection call: the run fails at STEP 5
    "model_error": (
        lambda: scripted([calls(("c1", "add", '{"a": 2, "b": 3}'))], tools=[add], reflect_on_tool_use=True)
    ),
    "tool_raises": (lambda: scripted([calls(("c1", "fail", '{"reason": "boom"}'))], tools=[fail])),
    "unknown_tool": (lambda: scripted([calls(("c1", "nope", "{}"))], tools=[add])),
    "bad_json_arguments": (lambda: scripted([calls(("c1", "add", '{"a": 2,'))], tools=[add])),
    "unreported_usage": (
        lambda: scripted(
            [
                CreateResult(
                    finish_reason="stop", content="hi", usage=UnreportedUsage(prompt_tokens=0, completion_tokens=0)
                )
            ]
        )
    ),
    "no_system_message": (lambda: scripted(["hi"], system_message=None)),
    "custom_summary": (
        lambda: scripted(
            [calls(("c1", "add", '{"a": 2, "b": 3}'), ("c2", "add", '{"a": 1, "b": 1}'))],
            tools=[add],
            tool_call_summary_format="{tool_name} gave {result}",
        )
    ),
    "request_params_and_ids": (
        lambda: scripted(
            [
                CreateResult(
                    finish_reason="stop",
                    content="ok",
                    usage=RequestUsage(prompt_tokens=1, completion_tokens=2),
                    cached=True,
                    response_model="m-2",
                    response_id="r-1",
                )
            ]
        )
    ),
}


@pytest.mark.parametrize("case", list(FAILURES), ids=str)
async def test_failures_and_odd_answers_replay_equal(case: str, tmp_path: Path) -> None:
    agent = FAILURES[case]()
    error = await run_quietly(agent, TASK)
    run_id = agent.trace.last_run()
    expected = run_frames(agent.trace, run_id)
    for name, source in loaded(agent.trace, tmp_path).items():
        again, replay_error = await replayed_run(source, run_id)
        assert (type(error).__name__, str(error)) == (type(replay_error).__name__, str(replay_error)), name
        assert_same_run(expected, again.trace)


async def test_a_second_turn_replays_from_the_context_it_started_with(tmp_path: Path) -> None:
    agent = scripted(
        [calls(("c1", "add", '{"a": 2, "b": 3}')), "5", calls(("c2", "add", '{"a": 5, "b": 1}')), "6"],
        tools=[add],
        reflect_on_tool_use=True,
    )
    await agent.run(task=TASK)
    await agent.run(task="And plus one?")
    run_id = agent.trace.last_run()
    expected = run_frames(agent.trace, run_id)
    for source in loaded(agent.trace, tmp_path).values():
        replay = source.replay(run_id)
        assert [m.to_text() for m in replay.task] == ["And plus one?"]
        assert len(replay.start_context) == 4  # the first turn: task, tool calls, results, answer
        again, error = await replayed_run(source, run_id)
        assert error is None
        assert_same_run(expected, again.trace)
        assert again.model_context.messages == agent.model_context.messages


async def test_runs_whose_tool_calls_share_an_id_each_replay_their_own_results(tmp_path: Path) -> None:
    agent = scripted(  # the replay model and many servers number calls per answer: "call_1" in both runs
        [calls(("call_1", "add", '{"a": 2, "b": 3}')), "5", calls(("call_1", "add", '{"a": 40, "b": 2}')), "42"],
        tools=[add],
        reflect_on_tool_use=True,
    )
    await agent.run(task=TASK)
    after_first = list(agent.model_context.messages)
    await agent.run(task="And 40 + 2?")
    first, second = (str(run) for run in agent.trace.runs_df()["run_id"])
    sources = loaded(agent.trace, tmp_path)
    sources["lazy"] = LazyTrace(agent.trace.to_parquet(tmp_path / "lazy"))
    expected = {run_id: run_frames(agent.trace, run_id) for run_id in (first, second)}
    for name, source in sources.items():
        for run_id, before, context in ((first, [], after_first), (second, after_first, agent.model_context.messages)):
            replay = source.replay(run_id)
            assert list(replay.start_context) == before, (name, run_id)  # the first run's result, "5"
            again, error = await replayed_run(source, run_id)
            assert error is None, name
            assert_same_run(expected[run_id], again.trace)
            assert again.model_context.messages[len(before) :] == context[len(before) :], (name, run_id)


async def test_structured_output_from_a_file_gets_a_model_of_the_same_fields(tmp_path: Path) -> None:
    scenario = next(s for s in SCENARIOS if s.name == "structured_output")
    agent = scenario.agent()
    await agent.run(task=TASK)
    assert agent.trace.replay().output_content_type is Weather  # the live trace holds the class
    replay = load_parquet(agent.trace.to_parquet(tmp_path)).replay()
    assert replay.output_content_type is not Weather
    assert replay.output_content_type is not None
    assert set(replay.output_content_type.model_fields) == {"city", "degrees"}
    assert replay.output_content_type_format == "{city}: {degrees}"


async def test_a_structured_output_that_failed_replays_failing_from_the_live_trace() -> None:
    agent = scripted(['{"city": 3}'], output_content_type=Weather)
    error = await run_quietly(agent, TASK)
    again, replay_error = await replayed_run(agent.trace, agent.trace.last_run())
    assert type(error) is type(replay_error) and str(error) == str(replay_error)
    assert_same_run(agent.trace, again.trace)


def test_nbagent_run_takes_a_replay() -> None:
    agent = scripted([calls(("c1", "add", '{"a": 2, "b": 3}'))], tools=[add])
    first = nbagent.run(agent, TASK)
    again = nbagent.run(agent.trace.replay())
    assert [m.to_text() for m in again.messages] == [m.to_text() for m in first.messages]


async def test_a_replay_calls_no_tool() -> None:
    called: list[int] = []

    def counted(a: int, b: int) -> int:
        """Add, counting the calls."""
        called.append(1)
        return a + b

    agent = scripted([calls(("c1", "counted", '{"a": 2, "b": 3}'))], tools=[counted])
    await agent.run(task=TASK)
    again, _ = await replayed_run(agent.trace, agent.trace.last_run())
    assert called == [1]
    assert again.trace.tool_calls_df()["result"].tolist() == ["5"]


async def test_streamed_pieces_come_back_as_recorded(tmp_path: Path) -> None:
    client = ReplayChatCompletionClient(["one  two\nthree"])
    agent = AssistantAgent("assistant", client, model_client_stream=True)
    await agent.run(task=TASK)
    replay = load_parquet(agent.trace.to_parquet(tmp_path)).replay()
    assert replay.answers[0].chunks == ("one  ", "two\n", "three")
    again = AssistantAgent.from_replay(replay)
    stream = again.run_stream(task=list(replay.task))
    pieces = [item.content async for item in stream if isinstance(item, ModelClientStreamingChunkEvent)]
    assert pieces == ["one  ", "two\n", "three"]


async def test_pace_waits_the_recorded_times() -> None:
    agent = AssistantAgent("assistant", ReplayChatCompletionClient(["hi"], latency=0.2))
    await agent.run(task=TASK)
    fast = AssistantAgent.from_replay(agent.trace.replay())
    paced = AssistantAgent.from_replay(agent.trace.replay(pace=True))
    started = time.perf_counter()
    await paced.run(task=TASK)
    assert time.perf_counter() - started >= 0.2
    assert fast.model_client.pace is False  # type: ignore[attr-defined]


async def test_past_the_recording_the_model_says_so() -> None:
    agent = scripted(["hi"])
    await agent.run(task=TASK)
    again = AssistantAgent.from_replay(agent.trace.replay())
    await again.run(task=TASK)
    with pytest.raises(ReplayExhaustedError, match="the recording has no answer for model call 2"):
        await again.run(task="more")


async def test_bad_input_names_the_parameter() -> None:
    agent = scripted(["hi"])
    with pytest.raises(ValueError, match="no run to replay"):
        agent.trace.replay()
    await agent.run(task=TASK)
    with pytest.raises(ValueError, match="run_id"):
        agent.trace.replay("not-a-run")
    with pytest.raises(TypeError, match="run_id"):
        agent.trace.replay(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="task"):
        Stepper(agent.trace.replay(), "another task")
    with pytest.raises(TypeError, match="replay"):
        AssistantAgent.from_replay("run-1")  # type: ignore[arg-type]


def test_the_replay_says_what_it_cannot_reproduce() -> None:
    agent = scripted(["hi"])
    nbagent.run(agent, TASK)
    replay = agent.trace.replay()
    assert isinstance(replay, Replay)
    assert "tool side effects" in LIMITS and "redacted" in LIMITS
    assert LIMITS in (Replay.__doc__ or "") or "LIMITS" in (Replay.__doc__ or "")
    html = replay._repr_html_()
    assert "tool side effects" in html and replay.run_id in html


async def test_a_replay_stops_when_cancelled() -> None:
    agent = AssistantAgent("assistant", ReplayChatCompletionClient(["hi"], latency=0.3))
    await agent.run(task=TASK)
    again = AssistantAgent.from_replay(agent.trace.replay(pace=True))
    task = asyncio.ensure_future(again.run(task=TASK))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert again.trace.runs_df()["status"].tolist() == ["cancelled"]


async def test_a_run_cancelled_while_a_tool_ran_replays_cancelled_there(tmp_path: Path) -> None:
    async def slow(city: str) -> str:
        """A weather station that does not answer in time."""
        await asyncio.sleep(5)
        return "never"

    script = [calls(("c1", "slow", '{"city": "Paris"}')), "sunny"]
    agent = AssistantAgent("assistant", ReplayChatCompletionClient(script), tools=[slow], reflect_on_tool_use=True)
    task = asyncio.ensure_future(agent.run(task=TASK))
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    run_id = agent.trace.last_run()
    expected = run_frames(agent.trace, run_id)
    for source in loaded(agent.trace, tmp_path).values():
        again = AssistantAgent.from_replay(source.replay(run_id))
        with pytest.raises(asyncio.CancelledError):
            await again.run(task=TASK)
        assert_same_run(expected, again.trace)


async def test_show_plays_a_replay_in_the_live_view_titled_as_a_replay() -> None:
    agent = scripted([calls(("c1", "add", '{"a": 2, "b": 3}')), "It is 5."], tools=[add], reflect_on_tool_use=True)
    await agent.run(task=TASK)
    replay = agent.trace.replay()
    view = await nbagent.show(replay)
    assert view.response is not None and view.response.chat_message.to_text() == "It is 5."
    title = view._title.value  # noqa: SLF001 the view shows its title; it has no accessor
    assert "replay of run" in title and "no model or tool called" in title


class _Loose(BaseModel):
    """A structured output that takes any keys (a crafted file's answer may have any)."""

    model_config = ConfigDict(extra="allow")


def replayed_with_peak(trace: Any) -> tuple[Replay, int]:
    """``trace.replay()`` and the most memory (bytes, tracemalloc) it took."""
    import tracemalloc

    tracemalloc.start()
    try:
        replay = trace.replay()
        return replay, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_files_answer_key_is_never_a_format_spec(tmp_path: Path) -> None:
    answer = json.dumps({"x": "1", "x:>30000000": "2"})
    trace = load_parquet(scripted_trace(answer, tmp_path))
    replay, peak = replayed_with_peak(trace)
    assert peak < 5_000_000  # "{x:>30000000}" formatted would take 30 MB
    assert replay.output_content_type_format is None
    assert '"x:>30000000"' in replay.limits and "shown as its JSON" in replay.limits


def scripted_trace(answer: str, tmp_path: Path) -> Path:
    agent = scripted([answer], output_content_type=_Loose)
    agent.run_sync(TASK)
    return agent.trace.to_parquet(tmp_path)


@pytest.mark.parametrize("key", ["x.nope", "x[0]", "x!r", "model_config", "__init__", "model_dump", "a b"])
def test_a_structured_answer_that_cannot_be_rebuilt_replays_as_its_json(key: str, tmp_path: Path) -> None:
    answer = json.dumps({"x": 1, key: "v"})
    replay = load_parquet(scripted_trace(answer, tmp_path)).replay()
    assert replay.output_content_type is not None and replay.output_content_type_format is None
    assert json.dumps(key) in replay.limits and replay.limits.startswith(LIMITS)
    again = nbagent.run(replay)
    assert json.loads(again.messages[-1].to_text()) == {"x": 1, key: "v"}
    assert json.dumps(key) in replay._repr_html_().replace("&quot;", '"')


def test_a_cassettes_error_name_is_looked_up_among_model_errors_only() -> None:
    from nbagent.models.base import ModelError, ModelRateLimitError
    from nbagent.models.cassette import _error_class

    assert _error_class("ModelRateLimitError") is ModelRateLimitError
    assert _error_class("ModelError") is ModelError
    for name in ("Any", "ModelInfo", "__builtins__", "CancellationToken", "estimate_tokens"):
        assert _error_class(name) is ModelError


def test_a_files_answer_value_cannot_make_a_format_spec_of_its_text(tmp_path: Path) -> None:
    # The answer's text "{x:>30000000}" (its format string's "{{x:>30000000}}"), escaped "{{x:>30000000}}";
    # the value "{" replaced by "{k}" takes its first brace: "{k}{x:>30000000}}" would format 30 MB.
    agent = scripted(
        [json.dumps({"k": "{", "x": 1})], output_content_type=_Loose, output_content_type_format="{{x:>30000000}}"
    )
    assert agent.run_sync(TASK).messages[-1].to_text() == "{x:>30000000}"
    trace = load_parquet(agent.trace.to_parquet(tmp_path))
    replay, peak = replayed_with_peak(trace)
    assert peak < 5_000_000
    assert replay.output_content_type_format is None
    assert json.loads(nbagent.run(replay).messages[-1].to_text()) == {"k": "{", "x": 1}
