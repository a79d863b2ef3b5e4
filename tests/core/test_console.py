"""nbagent.Console: AutoGen's Console (signature, behaviour) over nbagent's and AutoGen's streams."""

from __future__ import annotations

import inspect
import io
import subprocess
import sys
import textwrap
import warnings
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import nbagent
from nbagent import (
    AssistantAgent,
    CreateResult,
    FunctionCall,
    ReplayChatCompletionClient,
    RequestUsage,
    Response,
    TaskResult,
    TextMessage,
)
from nbagent.render.textlog import TextLog

ROOT = Path(__file__).resolve().parents[2]


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def calc_agent(*answers: str, stream: bool = True) -> AssistantAgent:
    call = CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id="c1", name="add", arguments='{"a": 2, "b": 3}')],
        usage=RequestUsage(prompt_tokens=10, completion_tokens=5),
    )
    model = ReplayChatCompletionClient([call, *answers])
    return AssistantAgent("calc", model, tools=[add], reflect_on_tool_use=True, model_client_stream=stream)


def test_the_signature_is_autogens() -> None:
    from autogen_agentchat.ui import Console as AutoGenConsole

    ours = inspect.signature(nbagent.Console).parameters
    theirs = inspect.signature(AutoGenConsole).parameters
    assert list(theirs) == list(ours)[: len(theirs)]
    for name, parameter in theirs.items():
        assert ours[name].kind == parameter.kind and ours[name].default == parameter.default, name
    # A coroutine function to inspect from Python 3.12 (nbagent.sync.entry_point marks it; 3.11 has no mark).
    assert inspect.iscoroutinefunction(nbagent.Console) or sys.version_info < (3, 12)


async def test_run_stream_prints_every_event_and_returns_the_task_result() -> None:
    agent = calc_agent("2 + 3 = 5\nthat is all")
    out = io.StringIO()
    result = await nbagent.Console(agent.run_stream(task="What is 2 + 3?"), output_stats=True, output=out)
    assert isinstance(result, TaskResult) and result.messages[-1].to_text() == "2 + 3 = 5\nthat is all"
    lines = out.getvalue().splitlines()
    usage = result.messages[-1].models_usage
    assert usage is not None
    assert lines[:11] == [
        "---------- TextMessage (user) ----------",
        "What is 2 + 3?",
        "---------- ToolCallRequestEvent (calc) ----------",
        'add({"a": 2, "b": 3})',
        "[Prompt tokens: 10, Completion tokens: 5]",
        "---------- ToolCallExecutionEvent (calc) ----------",
        "add -> 5",
        "---------- ModelClientStreamingChunkEvent (calc) ----------",
        "2 + 3 = 5",  # the streamed answer, printed once (not again as its TextMessage)
        "that is all",
        f"[Prompt tokens: {usage.prompt_tokens}, Completion tokens: {usage.completion_tokens}]",
    ]
    assert lines[11:16] == [
        "---------- Summary ----------",
        "Number of messages: 4",
        "Finish reason: None",
        f"Total prompt tokens: {10 + usage.prompt_tokens}",
        f"Total completion tokens: {5 + usage.completion_tokens}",
    ]
    assert lines[16].startswith("Duration: ") and len(lines) == 17


async def test_on_messages_stream_returns_the_response() -> None:
    agent = calc_agent("five", stream=False)
    out = io.StringIO()
    response = await nbagent.Console(
        agent.on_messages_stream([TextMessage(content="2 + 3?", source="user")]), output=out
    )
    assert isinstance(response, Response) and response.chat_message.to_text() == "five"
    text = out.getvalue()
    assert text.endswith("---------- calc ----------\nfive\n")  # AutoGen's Console: the answer under its agent
    assert "Summary" not in text


async def test_autogen_streams_print_as_autogens_console_prints_them(capsys: pytest.CaptureFixture[str]) -> None:
    from autogen_agentchat.agents import AssistantAgent as AgAssistant
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_agentchat.ui import Console as AutoGenConsole
    from autogen_ext.models.replay import ReplayChatCompletionClient as AgReplay

    def team() -> RoundRobinGroupChat:
        agents = [AgAssistant("a", AgReplay(["hello from a"])), AgAssistant("b", AgReplay(["hello from b"]))]
        return RoundRobinGroupChat(agents, termination_condition=MaxMessageTermination(3))

    theirs_result = await AutoGenConsole(team().run_stream(task="hi"))
    theirs = capsys.readouterr().out
    ours_result = await nbagent.Console(team().run_stream(task="hi"))
    ours = capsys.readouterr().out
    assert ours == theirs and "hello from b" in ours
    assert type(ours_result) is type(theirs_result)  # AutoGen's own TaskResult, returned as it came
    assert [m.to_text() for m in ours_result.messages] == [m.to_text() for m in theirs_result.messages]


async def test_autogens_user_input_request_is_passed_on_not_printed() -> None:
    from autogen_agentchat.base import TaskResult as AgTaskResult
    from autogen_agentchat.messages import TextMessage as AgText
    from autogen_agentchat.messages import UserInputRequestedEvent

    notified: list[str] = []

    class Manager:
        def notify_event_received(self, request_id: str) -> None:
            notified.append(request_id)

    async def stream() -> AsyncIterator[object]:
        yield UserInputRequestedEvent(request_id="r1", source="user_proxy")
        message = AgText(content="typed", source="user_proxy")
        yield message
        yield AgTaskResult(messages=[message])

    out = io.StringIO()
    await nbagent.Console(stream(), user_input_manager=Manager(), output=out)
    assert notified == ["r1"]
    assert out.getvalue() == "---------- TextMessage (user_proxy) ----------\ntyped\n"


async def test_wrong_streams_are_refused_naming_the_parameter() -> None:
    agent = AssistantAgent("calc", ReplayChatCompletionClient(["five"]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine was never awaited" on top
        with pytest.raises(TypeError, match=r"Console\(stream\).*awaitable.*agent\.run_stream"):
            await nbagent.Console(agent.run(task="2 + 3?"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Console\(stream\).*got list"):
        await nbagent.Console([])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="output_stats"):
        await nbagent.Console(agent.run_stream(task="x"), output_stats="yes")  # type: ignore[arg-type]

    async def empty() -> AsyncIterator[object]:
        return
        yield

    with pytest.raises(ValueError, match="without a TaskResult or Response"):
        await nbagent.Console(empty())


@pytest.mark.subprocess
def test_show_and_start_in_a_script_print_the_run_as_text(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(
        textwrap.dedent(
            """
            import asyncio
            import nbagent
            from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient

            async def add(a: int, b: int) -> int:
                \"\"\"Add two numbers.\"\"\"
                return a + b

            async def main() -> None:
                calls = [FunctionCall(id="c1", name="add", arguments='{"a": 2, "b": 3}')]
                request = CreateResult(finish_reason="function_calls", content=calls)
                model = ReplayChatCompletionClient([request, "2 + 3 = 5", "3 + 4 = 7"])
                agent = AssistantAgent("calc", model, tools=[add], reflect_on_tool_use=True)
                view = await nbagent.show(agent, "What is 2 + 3?")
                print(view)
                view = nbagent.start(agent, "And 3 + 4?")
                await view.wait()

            asyncio.run(main())
            try:
                nbagent.start(AssistantAgent("x", ReplayChatCompletionClient(["a"])), "hi")
            except RuntimeError as error:
                print("RuntimeError:", error)
            """
        )
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "children=" not in out and "<style>" not in out and len(out) < 3000
    lines = out.splitlines()
    assert "-- STEP 4: Call the LLM  [_call_llm]" in lines
    # STEP 2 has no move in a run without memory: the text says it was skipped, between STEP 1 and 3 (twice).
    skipped = "-- STEP 2: Query memory  skipped: the agent has no memory (memory=None)"
    assert lines.count(skipped) == 2
    assert lines[lines.index(skipped) - 1].startswith("-- STEP 1:")
    assert lines[lines.index(skipped) + 1].startswith("-- STEP 3:")
    assert lines.count("add -> 5") == 1 and lines.count("---------- calc ----------") == 2
    assert "2 + 3 = 5" in lines and "3 + 4 = 7" in lines
    assert "AgentRunView(agent='calc', status='ok', llm_calls=2, tool_calls=1)" in lines
    # The footer counts one tool call in the singular, then the time and the run id.
    assert any(" · 2 LLM calls · 1 tool call · " in line and " · run " in line for line in lines if "tokens ·" in line)
    assert lines[-1].startswith("RuntimeError: nbagent.start runs the agent in the background of a running event")


@pytest.mark.subprocess
def test_a_started_run_the_script_does_not_wait_for_says_how_it_ended(tmp_path: Path) -> None:
    """A script that ends before the run nbagent.start began: the run is cancelled with the program, and its
    text says so and what to write (it stopped mid-run, silently)."""
    script = tmp_path / "script.py"
    script.write_text(
        textwrap.dedent(
            """
            import asyncio
            import nbagent
            from nbagent import AssistantAgent, ReplayChatCompletionClient

            async def main() -> None:
                agent = AssistantAgent("calc", ReplayChatCompletionClient(["hello"], latency=5))
                nbagent.start(agent, "hi")
                await asyncio.sleep(0.2)

            asyncio.run(main())
            """
        )
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "run ended  calc · interrupted (task cancelled)" in lines
    assert lines[-1].startswith("(a run nbagent.start began is cancelled when its program ends: `await view.wait()`")
    assert lines.count("run ended  calc · interrupted (task cancelled)") == 1


async def test_a_run_with_memory_says_no_step_was_skipped() -> None:
    """With memory, STEP 2 is a move of its own: the text view prints it and no "skipped" line."""
    memory = nbagent.ListMemory()
    await memory.add(nbagent.MemoryContent(content="The user lives in Paris.", mime_type="text/plain"))
    agent = AssistantAgent("calc", ReplayChatCompletionClient(["hi"]), memory=[memory])
    log = TextLog()
    text = "".join([log.text(item) async for item in agent.iter([nbagent.TextMessage(content="x", source="user")])])
    assert "-- STEP 2: Query memory  [_update_model_context_with_memory]" in text and "skipped" not in text
