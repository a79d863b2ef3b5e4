"""Issue 40.2: AutoGen's ``Console(agent.run_stream(task=...))`` with nbagent's agent and no token.

AutoGen's ``Console`` ends a stream on ``isinstance(item, autogen_agentchat.base.TaskResult)``; once
AutoGen is imported, the ``TaskResult`` nbagent's ``run``/``run_stream`` give is AutoGen's too
(``nbagent.autogen.results``), while nbagent's users see nbagent's result.
"""

from __future__ import annotations

import dataclasses
import io
import pickle
import subprocess
import sys

import pytest
from autogen_agentchat.base import TaskResult as AgTaskResult
from autogen_agentchat.ui import Console as AgConsole

import nbagent
from nbagent import AssistantAgent, ReplayChatCompletionClient, TextMessage


async def test_autogens_console_over_run_stream_prints_the_run_and_returns_its_result(
    capsys: pytest.CaptureFixture[str],
) -> None:
    agent = AssistantAgent("calc", ReplayChatCompletionClient(["five", "six"]))
    result = await AgConsole(agent.run_stream(task="2 + 3?"), output_stats=True)
    out = capsys.readouterr().out
    assert out.startswith(
        "---------- TextMessage (user) ----------\n2 + 3?\n---------- TextMessage (calc) ----------\nfive\n"
    )
    assert "Number of messages: 2\nFinish reason: None\n" in out
    assert isinstance(result, AgTaskResult) and isinstance(result, nbagent.TaskResult)
    assert [type(m) for m in result.messages] == [TextMessage, TextMessage]  # nbagent's messages
    assert result.messages[-1].content == "five"
    runs = agent.trace.runs_df()  # the run is traced as any other
    assert list(runs["agent"]) == ["calc"] and list(runs["final_text"]) == ["five"]
    # the result is usable for the next turn, as AutoGen's is
    again = await AgConsole(agent.run_stream(task=result.messages[-1]))
    assert [m.content for m in again.messages] == ["five", "six"]


async def test_the_shared_result_is_nbagents_result_for_nbagents_users() -> None:
    agent = AssistantAgent("calc", ReplayChatCompletionClient(["five"]))
    result = await agent.run(task="2 + 3?")
    assert isinstance(result, AgTaskResult)  # AutoGen's code that checks its class takes it
    plain = nbagent.TaskResult(messages=list(result.messages))
    assert result == plain and plain == result and not result != plain  # noqa: SIM202 both operators
    assert result != nbagent.TaskResult(messages=list(result.messages), stop_reason="other")
    assert repr(result) == repr(plain) == str(result) and repr(result).startswith("TaskResult(messages=[TextMessage(")
    assert type(result).__name__ == "TaskResult"
    loaded = pickle.loads(pickle.dumps(result))  # noqa: S301 our own bytes
    assert type(loaded) is nbagent.TaskResult and loaded == result  # loads where AutoGen is not installed
    assert dataclasses.asdict(result) == dataclasses.asdict(plain)
    changed = dataclasses.replace(result, stop_reason="done")
    assert changed.stop_reason == "done" and changed.messages == result.messages
    result.stop_reason = "set"
    assert result.stop_reason == "set" and result.model_dump()["stop_reason"] == "set"
    with pytest.raises(TypeError, match="unhashable"):
        hash(result)
    with pytest.raises(AttributeError, match="mesages"):
        result.mesages  # type: ignore[attr-defined]  # noqa: B018 a misspelt attribute is still an error


async def test_nbagents_console_and_autogens_token_are_unchanged() -> None:
    agent = AssistantAgent("calc", ReplayChatCompletionClient(["five", "six"]))
    out = io.StringIO()
    shown = await nbagent.Console(agent.run_stream(task="2 + 3?"), output=out)
    assert isinstance(shown, nbagent.TaskResult) and shown.messages[-1].content == "five"
    assert "five" in out.getvalue()
    from autogen_core import CancellationToken as AgCancellationToken

    theirs = await agent.run(task="3 + 3?", cancellation_token=AgCancellationToken())
    assert type(theirs) is AgTaskResult and type(theirs.messages[-1]).__module__.startswith("autogen_agentchat")


@pytest.mark.slow
@pytest.mark.subprocess
def test_without_autogen_imported_the_result_is_nbagents_plain_class() -> None:
    code = (
        "import asyncio, sys, nbagent\n"
        "agent = nbagent.AssistantAgent('a', nbagent.ReplayChatCompletionClient(['x']))\n"
        "result = asyncio.run(agent.run(task='hi'))\n"
        "print(type(result) is nbagent.TaskResult, 'autogen_agentchat' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "True False"


async def test_a_shim_naming_nbagents_task_result_as_autogens_gets_nbagents(monkeypatch: pytest.MonkeyPatch) -> None:
    """AutoGen's own tests run through an import shim (tests/autogen_upstream) where AutoGen's name is
    nbagent's class: no class of both is made (was "TypeError: duplicate base class TaskResult")."""
    import autogen_agentchat.base

    monkeypatch.setattr(autogen_agentchat.base, "TaskResult", nbagent.TaskResult)
    result = await AssistantAgent("calc", ReplayChatCompletionClient(["five"])).run(task="2 + 3?")
    assert type(result) is nbagent.TaskResult and result.messages[-1].content == "five"
