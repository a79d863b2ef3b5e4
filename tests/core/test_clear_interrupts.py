"""The mistakes of the first hour say what happened and what to write: a forgotten ``await``, a run
cancelled from outside, Ctrl-C in a script and in the sync entry points (one line, not a traceback)."""

from __future__ import annotations

import asyncio
import gc
import inspect
import os
import signal
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

import nbagent
from nbagent import AssistantAgent, CancellationToken, CreateResult, FunctionCall, ReplayChatCompletionClient
from nbagent.cancellation import CANCELLED
from nbagent.interrupts import one_line

from ..waits import within

ROOT = Path(__file__).resolve().parents[2]


async def slow(x: int) -> int:
    """Takes a minute."""
    await asyncio.sleep(60)
    return x


def slow_agent(name: str = "calc") -> AssistantAgent:
    call = FunctionCall(id="c1", name="slow", arguments='{"x": 1}')
    script = [CreateResult(finish_reason="function_calls", content=[call]), "done"]
    return AssistantAgent(name, ReplayChatCompletionClient(script), tools=[slow])


async def test_a_forgotten_await_says_to_await() -> None:
    agent = AssistantAgent("calc", ReplayChatCompletionClient(["five", "six"]))
    pending = agent.run(task="2 + 3?")
    with pytest.raises(
        AttributeError, match=r"agent\.run\(task=\.\.\.\) gives a coroutine.*'messages'.*`result = await "
    ):
        pending.messages  # noqa: B018
    fix = "write `await agent.run(task=...)` in a notebook cell or an async function, or `agent.run_sync(task)`"
    assert fix in repr(pending)
    assert (await pending).messages[-1].to_text() == "five"  # still the run, once awaited
    responding = agent.on_messages([nbagent.TextMessage(content="3 + 3?", source="user")])
    with pytest.raises(AttributeError, match=r"agent\.on_messages\(\.\.\.\) gives a coroutine.*'chat_message'"):
        responding.chat_message  # noqa: B018
    assert (await responding).chat_message.to_text() == "six"
    shown = nbagent.show(agent, "x")
    with pytest.raises(AttributeError, match=r"nbagent\.show\(agent, task\).*'response'.*nbagent\.run\(agent, task"):
        shown.response  # noqa: B018
    shown.close()
    retrying = agent.retry()
    with pytest.raises(AttributeError, match=r"agent\.retry\(\).*agent\.run_sync\(\)"):
        retrying.messages  # noqa: B018
    retrying.close()


async def test_the_run_is_a_coroutine_to_asyncio() -> None:
    agent = AssistantAgent("calc", ReplayChatCompletionClient(["a", "b", "c", "d"]))
    pending = agent.run(task="zero")
    assert asyncio.iscoroutine(pending)
    pending.close()
    task = asyncio.create_task(agent.run(task="one"))  # create_task takes it (a Coroutine)
    assert (await task).messages[-1].to_text() == "a"
    other = AssistantAgent("other", ReplayChatCompletionClient(["e"]))
    first, second = await asyncio.gather(other.run(task="two"), agent.run(task="three"))
    assert (first.messages[-1].to_text(), second.messages[-1].to_text()) == ("e", "b")
    assert (await within(agent.run(task="four"), "the fourth run")).messages[-1].to_text() == "c"


async def test_a_scheduled_run_reads_as_its_coroutine() -> None:
    """A task's repr, its stack and inspect see the run's coroutine (its name, frame and state), and the
    repr of a run already scheduled no longer says it was not run."""
    agent = AssistantAgent("calc", ReplayChatCompletionClient(["a", "b"], latency=0.05))
    pending = agent.run(task="one")
    assert inspect.getcoroutinestate(pending) == inspect.CORO_CREATED
    task = asyncio.create_task(pending)
    await asyncio.sleep(0.01)
    assert "coro=<AssistantAgent._run() running at" in repr(task)
    assert [frame.f_code.co_name for frame in task.get_stack()] == ["_run"]
    assert inspect.getcoroutinestate(pending) == inspect.CORO_SUSPENDED
    assert repr(pending).startswith("<coroutine object AssistantAgent._run at ")
    await task
    stream = agent.run_stream(task="two")
    assert stream.__name__ == "AssistantAgent._run_stream" and stream.ag_running is False
    with pytest.raises(AttributeError, match="'Stream' object has no attribute 'nothing'"):
        stream.nothing  # noqa: B018
    await stream.aclose()


def test_a_run_never_awaited_still_warns() -> None:
    agent = AssistantAgent("calc", ReplayChatCompletionClient(["five"]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent.run(task="x")
        gc.collect()
    assert any("was never awaited" in str(w.message) for w in caught)


async def test_every_entry_point_never_awaited_says_the_fix_at_its_line() -> None:
    """Issue 43.6: one rule for every coroutine entry point. Dropped without ``await``, each warns once, at
    the line that called it, naming what to write; Python's bare "coroutine ... was never awaited" is not
    added (before: ``stepper.next()`` gave only that, ``nbagent.show``/``Console`` in a script nothing
    until exit; ``stepper.run_until``, ``stepper.quiz.answer``, ``explorer.open`` and ``view.run``, used
    with ``await`` in the shipped notebooks, still did)."""
    agent = AssistantAgent("calc", ReplayChatCompletionClient(["five"] * 4))
    stepper = nbagent.step(agent, "x")
    quiz = nbagent.step(AssistantAgent("q", ReplayChatCompletionClient(["ok"])), "x", predict=True)
    batch = nbagent.Batch(lambda: AssistantAgent("b", ReplayChatCompletionClient(["ok"])), ["t"], progress=None)
    view = nbagent.start(agent, "y")
    await view.wait()
    explorer = nbagent.explore(agent.trace)
    calls = {
        "nbagent.show(agent, task)": lambda: nbagent.show(agent, "x"),
        "stepper.next()": stepper.next,
        "stepper.run_to_end()": stepper.run_to_end,
        "stepper.run_until(...)": lambda: stepper.run_until(step=4),
        "stepper.reset()": stepper.reset,
        "stepper.fork()": stepper.fork,
        "stepper.aclose()": stepper.aclose,
        "stepper.quiz.answer(key)": lambda: quiz.quiz.answer("add_messages"),
        "batch.run()": batch.run,
        "nbagent.run_many(make_agent, tasks)": lambda: nbagent.run_many(lambda: agent, ["t"], progress=None),
        "nbagent.Console(stream)": lambda: nbagent.Console(agent.run_stream(task="x")),
        "agent.run(task=...)": lambda: agent.run(task="x"),
        "view.wait()": view.wait,
        "view.run(agent, task)": lambda: view.run(agent, "z"),
        "explorer.open(run_id)": lambda: explorer.open("r1"),  # never run: any id
    }
    assert_each_warns_once_at_its_line(calls)
    assert stepper.history == [] and quiz.history == []  # none of them ran


async def test_a_run_a_fired_token_never_starts_warns_nothing() -> None:
    """A run handed to a token already cancelled is closed unrun: no "never awaited" warning (it was awaited
    as the code says; before, an entry point's coroutine was dropped unclosed and warned at the call)."""
    agent = AssistantAgent("calc", ReplayChatCompletionClient(["five"]))
    token = CancellationToken()
    token.cancel()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        with pytest.raises(asyncio.CancelledError):
            await token.guard(agent.run(task="x"))
        gc.collect()
    assert [str(w.message) for w in caught] == []


def assert_each_warns_once_at_its_line(calls: dict[str, Callable[[], object]]) -> None:
    """Each call (named by how it reads), dropped at once, warns once at the line that made it, saying to await it."""
    for call, make in calls.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            make()  # dropped at once: the line below is where the warning points
            line = sys._getframe().f_lineno - 1  # noqa: SLF001
            gc.collect()
        messages = [(w.category, str(w.message), w.filename, w.lineno) for w in caught]
        assert len(messages) == 1, (call, messages)
        ((category, message, filename, lineno),) = messages
        assert category is nbagent.sync.NotAwaitedWarning, call
        assert message.startswith(f"{call} was never awaited, so it did not run: write `await {call}`"), message
        # At the line that made the call: in the caller's file (a lambda's line, or the line that called ``make``).
        code = getattr(make, "__code__", None)
        if code is not None and make.__name__ == "<lambda>":
            assert (filename, lineno) == (code.co_filename, code.co_firstlineno), (call, filename, lineno)
        else:
            assert (filename, lineno) == (__file__, line), (call, filename, lineno)


async def test_a_run_cancelled_from_outside_says_what_happened() -> None:
    agent = slow_agent()
    task = asyncio.create_task(agent.run(task="go"))
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError) as caught:
        await task
    error = caught.value
    assert type(error) is asyncio.CancelledError  # asyncio's own type: asyncio.timeout tells its own by it
    text = str(error)
    assert text.startswith("the run of agent 'calc' was interrupted (the task awaiting it was cancelled: a kernel")
    assert text.endswith("keeps the task: agent.retry() goes on from it")
    assert error._render_traceback_() == [f"CancelledError: {text}"]  # one line in IPython
    assert one_line(error) == f"CancelledError: {text}"
    assert agent.failed_run is not None and agent.failed_run.status == "cancelled"

    task = asyncio.create_task(slow_agent("named").run(task="go"))
    await asyncio.sleep(0.2)
    task.cancel("the user asked")
    with pytest.raises(asyncio.CancelledError, match=r"was interrupted .*\(cancelled with: the user asked\)$"):
        await task


async def test_timeouts_and_tokens_keep_their_own_errors() -> None:
    with pytest.raises(TimeoutError):  # asyncio.timeout still turns its cancellation into TimeoutError
        async with asyncio.timeout(0.2):
            await slow_agent().run(task="go")
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(slow_agent().run(task="go"), 0.2)
    token = CancellationToken()
    asyncio.get_running_loop().call_later(0.2, token.cancel)
    with pytest.raises(asyncio.CancelledError) as caught:  # the caller's token: the token's own words
        await slow_agent().run(task="go", cancellation_token=token)
    assert str(caught.value) == CANCELLED and one_line(caught.value) is None


SCRIPT = """
import asyncio, sys
import nbagent
from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient

async def slow(x: int) -> int:
    "Takes a minute."
    print("STARTED", flush=True)
    await asyncio.sleep(60)
    return x

def make(task=None):
    call = FunctionCall(id="c1", name="slow", arguments='{"x": 1}')
    script = [CreateResult(finish_reason="function_calls", content=[call]), "done"]
    return AssistantAgent("calc", ReplayChatCompletionClient(script), tools=[slow])

mode = sys.argv[1]
if mode == "run_sync":
    make().run_sync("go")
elif mode == "nbagent.run":
    nbagent.run(make(), "go")
elif mode == "asyncio.run":
    async def main():
        await make().run(task="go")
    asyncio.run(main())
elif mode == "batch.run_sync":
    nbagent.Batch(make, ["a", "b"], concurrency=2, progress=None).run_sync()
elif mode == "await batch.run":
    asyncio.run(nbagent.Batch(make, ["a", "b"], concurrency=2, progress=None).run())
elif mode == "show":
    asyncio.run(nbagent.show(make(), "go"))
elif mode == "other":  # an interrupt that is no run's: Python's own traceback
    async def wait():
        print("STARTED", flush=True)  # once the event loop runs (Ctrl-C while asyncio.run sets it up is another story)
        await asyncio.sleep(60)
    asyncio.run(wait())
"""
AGENT_LINE = (
    "KeyboardInterrupt: the run of agent 'calc' was interrupted ({why}); its context is valid (every tool call "
    "has a result) and keeps the task: agent.retry() goes on from it"
)
EXPECTED = {
    "run_sync": AGENT_LINE.format(why="Ctrl-C or a kernel interrupt"),
    "nbagent.run": AGENT_LINE.format(why="Ctrl-C or a kernel interrupt"),
    "asyncio.run": AGENT_LINE.format(
        why="the task awaiting it was cancelled: a kernel interrupt, Ctrl-C, task.cancel() or a timeout"
    ),
    "batch.run_sync": (
        "KeyboardInterrupt: the batch was interrupted (Ctrl-C or a kernel interrupt); the tasks that ended are in "
        "batch.results, and batch.run_sync() again runs the others"
    ),
    "await batch.run": (
        "KeyboardInterrupt: the batch was interrupted (the task awaiting it was cancelled: a kernel interrupt, "
        "Ctrl-C, task.cancel() or a timeout); the tasks that ended are in batch.results, and `await batch.run()` "
        "again runs the others"
    ),
}


def interrupt_script(tmp_path: Path, mode: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(SCRIPT))
    env = {**os.environ, "OPENAI_API_KEY": ""}
    process = subprocess.Popen(
        [sys.executable, str(script), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal starts it
    )
    assert process.stdout is not None
    before = [process.stdout.readline()]  # show's text view prints its lines before the tool's STARTED
    while before[-1] not in ("STARTED\n", ""):
        before.append(process.stdout.readline())
    assert before[-1] == "STARTED\n"
    process.send_signal(signal.SIGINT)  # what Ctrl-C sends
    out, err = process.communicate(timeout=60)
    return subprocess.CompletedProcess(process.args, process.returncode, "".join(before) + out, err)


@pytest.mark.parametrize("mode", list(EXPECTED))
@pytest.mark.subprocess
def test_ctrl_c_in_a_script_ends_in_one_line(mode: str, tmp_path: Path) -> None:
    done = interrupt_script(tmp_path, mode)
    assert done.stderr.splitlines() == [EXPECTED[mode]]
    assert done.returncode == -signal.SIGINT  # the exit status of a program Ctrl-C ended


@pytest.mark.subprocess
def test_ctrl_c_of_show_in_a_script_says_ctrl_c(tmp_path: Path) -> None:
    """The text view of a run Ctrl-C ended in a script names Ctrl-C (no kernel is there to interrupt)."""
    done = interrupt_script(tmp_path, "show")
    assert "run ended  calc · interrupted (Ctrl-C)" in done.stdout.splitlines()
    assert done.stderr.splitlines() == [EXPECTED["asyncio.run"]]
    assert done.returncode == -signal.SIGINT


@pytest.mark.subprocess
def test_an_interrupt_of_no_run_keeps_pythons_traceback(tmp_path: Path) -> None:
    done = interrupt_script(tmp_path, "other")
    assert "Traceback (most recent call last)" in done.stderr and done.stderr.rstrip().endswith("KeyboardInterrupt")


async def test_a_stream_iterated_without_async_says_async_for() -> None:
    agent = AssistantAgent("calc", ReplayChatCompletionClient(["five", "six", "seven"]))
    stream = agent.run_stream(task="2 + 3?")
    with pytest.raises(
        TypeError, match=r"agent\.run_stream\(task=\.\.\.\) is an async stream: write `async for item in"
    ):
        for _ in stream:  # type: ignore[attr-defined]
            pass
    assert "nbagent.Console" in repr(stream)
    items = [item async for item in stream]  # still the stream, once iterated with async for
    assert isinstance(items[-1], nbagent.TaskResult) and items[-1].messages[-1].to_text() == "five"
    with pytest.raises(TypeError, match=r"agent\.on_messages_stream\(\.\.\.\) is an async stream"):
        list(agent.on_messages_stream([nbagent.TextMessage(content="x", source="user")]))  # type: ignore[call-overload]
    from contextlib import aclosing

    async with aclosing(agent.run_stream(task="3 + 3?")) as closing:
        async for item in closing:
            if isinstance(item, nbagent.ToolCallRequestEvent | nbagent.TextMessage) and item.source == "calc":
                break
    assert not agent.is_running


@pytest.mark.subprocess
def test_a_script_that_forgets_await_is_told_at_the_line(tmp_path: Path) -> None:
    """In a script, ``nbagent.show(...)`` and ``nbagent.Console(...)`` without await printed nothing (a bare
    RuntimeWarning at exit): now one line each on stderr, at the script's line, naming the fix."""
    script = tmp_path / "forgot.py"
    script.write_text(
        "import nbagent\n"
        "from nbagent import AssistantAgent, ReplayChatCompletionClient\n"
        "agent = AssistantAgent('a', ReplayChatCompletionClient(['hi']))\n"
        "nbagent.show(agent, 'x')\n"
        "nbagent.Console(agent.run_stream(task='x'))\n"
        "print('end')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0 and done.stdout == "end\n", done
    lines = [line for line in done.stderr.splitlines() if "NotAwaitedWarning" in line]
    assert lines == [
        f"{script}:4: NotAwaitedWarning: nbagent.show(agent, task) was never awaited, so it did not run: write "
        "`await nbagent.show(agent, task)` in a notebook cell or an async function, or "
        "`nbagent.run(agent, task, show=True)` without await",
        f"{script}:5: NotAwaitedWarning: nbagent.Console(stream) was never awaited, so it did not run: write "
        "`await nbagent.Console(stream)` in a notebook cell or an async function (in a script: inside asyncio.run)",
    ], done.stderr
    assert "coroutine" not in done.stderr.replace("NotAwaitedWarning", "")  # no bare "was never awaited" on top
