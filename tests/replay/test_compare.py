"""``nbagent.compare(a, b)``: two runs aligned move by move, where they diverge marked; frame, widget, static copy."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import nbagent
from nbagent import AssistantAgent, ReplayChatCompletionClient, Stepper, load_parquet
from nbagent.notebook.compare_view import CompareView

from ..stepper.scenarios import add, calls, mul

TASK = "What is 2 + 3?"
ADD_2_3 = ("c1", "add", '{"a": 2, "b": 3}')


def agent(script: list[object], **options: object) -> AssistantAgent:
    return AssistantAgent("assistant", ReplayChatCompletionClient(script), tools=[add, mul], **options)  # type: ignore[arg-type]


async def forked_walks() -> tuple[Stepper, Stepper]:
    parent = Stepper(agent([calls(ADD_2_3), "5"], reflect_on_tool_use=True), TASK)
    await parent.run_until(move="tool_request")
    fork = await parent.fork()
    fork.give_tool_result("c1", error="<script>alert(1)</script> failed")
    await fork.run_to_end()
    await parent.run_to_end()
    return parent, fork


async def test_a_fork_and_its_parent_diverge_where_the_change_was_made() -> None:
    parent, fork = await forked_walks()
    view = nbagent.compare(parent, fork, labels=("parent", "fork"))
    assert isinstance(view, CompareView)
    frame = view.frame
    assert frame["move_parent"].tolist() == [r.name for r in parent.history]
    assert frame["move_fork"].tolist() == [r.name for r in fork.history]
    assert frame["diverged"].tolist() == [False] * 4 + [True, True]
    assert str(frame["diverged"].dtype) == "boolean"
    assert view.first_divergence == 5
    row = frame.iloc[4]
    assert "tool_calls" in row["differences"] and "context" in row["differences"]
    assert "failed" in row["tool_calls_fork"] and "-> 5" in row["tool_calls_parent"]
    assert "Intervention" in row["events_fork"]
    assert "+ [tool_result]" in row["context_diff"] and "- [tool_result] 5" in row["context_diff"]
    assert frame["tokens_parent"].iloc[2] == frame["tokens_fork"].iloc[2]
    assert {"seconds_parent", "seconds_fork", "context_parent", "context_fork"} <= set(frame.columns)


async def test_the_html_marks_divergence_and_escapes_what_runs_said() -> None:
    parent, fork = await forked_walks()
    view = nbagent.compare(parent, fork)
    html = view.html()
    assert "<script>alert" not in html and "&lt;script&gt;" in html
    assert html.count('data-diverged="true"') == 2 and "≠" in html
    assert "diverge at aligned move 5" in html and "context diff" in html
    assert view.static_bundle()["text/html"] == html
    widget = view.widget()
    assert widget.body.value == html


async def test_the_widget_refresh_reads_a_walk_that_went_on() -> None:
    parent = Stepper(agent([calls(ADD_2_3), "5"], reflect_on_tool_use=True), TASK)
    await parent.run_until(move="tool_request")
    fork = await parent.fork()
    view = nbagent.compare(parent, fork)
    assert len(view.rows) == 5 and view.first_divergence is None  # the move both are paused before, too
    await fork.run_to_end()
    view.update()
    assert len(view.rows) == 6
    assert [row.left is None for row in view.rows] == [False] * 5 + [True]
    assert view.widget().body.value == view.html()


async def test_a_run_and_its_replay_from_a_file_never_diverge(tmp_path: Path) -> None:
    original = agent([calls(ADD_2_3), calls(("c2", "mul", '{"a": 5, "b": 4}')), "20"], max_tool_iterations=3)
    await original.run(task=TASK)
    loaded = load_parquet(original.trace.to_parquet(tmp_path))
    again = AssistantAgent.from_replay(loaded.replay())
    await again.run(task=TASK)
    run_id = str(loaded.runs_df()["run_id"].iloc[-1])
    view = nbagent.compare((loaded, run_id), again)
    assert view.first_divergence is None and not view.frame["diverged"].any()


async def test_two_agents_on_one_task_align_on_the_moves_they_share() -> None:
    short, long = agent(["5"]), agent([calls(ADD_2_3), "5"], max_tool_iterations=2)
    await short.run(task=TASK)
    await long.run(task=TASK)
    frame = nbagent.compare(short, long).frame
    moves_a = [None if pd.isna(move) else move for move in frame["move_A"]]
    assert moves_a == ["add_messages", "message_id", "call_llm", None, None, None, "text_exit"]
    assert frame["move_B"].tolist() == [
        "add_messages",
        "message_id",
        "call_llm",
        "tool_request",
        "tool_execution",
        "next_llm_call",
        "text_exit",
    ]
    assert frame["differences"].tolist()[3:6] == ["only_right"] * 3
    assert frame["diverged"].tolist()[:2] == [False, False]
    assert frame["differences"].iloc[-1] == "move, context"  # text_exit at iteration 0 and 1, the same text


async def test_bad_sides_raise_errors_naming_the_parameter() -> None:
    ran = agent(["5"])
    await ran.run(task=TASK)
    with pytest.raises(TypeError, match=r"nbagent.compare.*\ba\b.*\(trace, run_id\) pair"):
        nbagent.compare(42, ran)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"\bb\b.*made a move"):
        nbagent.compare(ran, Stepper(agent(["5"]), TASK))
    with pytest.raises(ValueError, match=r"b\[1\].*run of that trace"):
        nbagent.compare(ran, (ran.trace, "no-such-run"))
    with pytest.raises(TypeError, match=r"a\[0\]"):
        nbagent.compare(("trace", "run"), ran)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"\ba\b.*an agent that ran"):
        nbagent.compare(agent(["5"]), ran)
    with pytest.raises(ValueError, match="labels"):
        nbagent.compare(ran, ran, labels=("only one",))  # type: ignore[arg-type]


async def test_a_moves_seconds_are_its_own_never_the_pause_after_it() -> None:
    """Issue 43.4: a walk paused 0.5 s after its tool move showed 0.5 s for a tool that returns at once (the
    gap to the next move's start). A move's seconds are now its model calls' and tools' own durations; a
    move that made neither has none. The title names each run short (its first 8), the full id on hover."""
    import asyncio

    walks = []
    for pause in (0.0, 0.5):
        walk = Stepper(agent([calls(ADD_2_3), "5"], reflect_on_tool_use=True), TASK)
        await walk.run_until(move="tool_execution")
        await asyncio.sleep(pause)  # the walk sits paused after its tool ran
        await walk.run_to_end()
        walks.append(walk)
    view = nbagent.compare(*walks, labels=("quick", "paused"))
    frame = view.frame.set_index("move_quick")
    tool_s = frame.loc["tool_execution", ["seconds_quick", "seconds_paused"]].tolist()
    tools = [walk.agent.trace.tool_calls_df()["duration_s"].iloc[0] for walk in walks]
    assert tool_s == pytest.approx(tools), tool_s  # the tool's recorded time, not the 0.5 s pause after it
    llm = frame.loc["call_llm", ["seconds_quick", "seconds_paused"]].tolist()
    recorded = [walk.agent.trace.llm_calls_df()["duration_s"].iloc[0] for walk in walks]
    assert llm == pytest.approx(recorded)  # a model call's move: the call's recorded duration
    assert pd.isna(frame.loc["add_messages", "seconds_quick"])  # neither a model call nor a tool: no time
    html = view.html()
    assert "model + tool seconds" in html
    for walk in walks:
        run_id = str(walk.run_id)
        assert html.count(run_id) == 1 and f'title="{run_id}">{run_id[:8]}</span>' in html
