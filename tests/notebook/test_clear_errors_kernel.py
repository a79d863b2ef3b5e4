"""In a real kernel: the first hour's mistakes end in one clear line. ``asyncio.run(...)`` in a cell, a
kernel interrupt of ``await agent.run(...)`` (at once, though a tool sleeps a minute) and of the sync
entry points, a forgotten ``await``; any other error is shown as IPython shows it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from jupyter_client.manager import KernelManager

from nbagent.notebook.hints import ASYNCIO_RUN_HINT, RUN_UNTIL_COMPLETE_HINT

from ..kernels import SLOW_AGENT, running_kernel
from ..kernels import kernel_dirs as make_kernel_dirs

pytestmark = pytest.mark.kernel

KERNEL = "nbagent-clear-errors-test"

SETUP = SLOW_AGENT
LEFT = "its context is valid (every tool call has a result) and keeps the task: agent.retry() goes on from it"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KernelManager, Any]]:
    dirs = make_kernel_dirs(tmp_path_factory, KERNEL, "nbagent clear errors")
    with running_kernel(KERNEL, dirs) as (manager, client):
        yield manager, client


def cell_messages(client: Any, msg_id: str, deadline_s: float = 300) -> Iterator[dict[str, Any] | None]:
    """The IOPub messages of the cell ``msg_id``, up to its idle status; ``None`` after each second without
    one. A cell not idle within ``deadline_s`` fails the test."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            message = client.get_iopub_msg(timeout=1)
        except Exception:  # queue.Empty: wait on
            yield None
            continue
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        yield message
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            return
    raise AssertionError(f"the cell {msg_id} was not idle within {deadline_s} s")


def run(client: Any, code: str, manager: KernelManager | None = None) -> tuple[str, str, list[tuple[str, list[str]]]]:
    """(stdout, stderr, errors) of ``code``; with ``manager``, the kernel is interrupted once it printed STARTED.
    The interrupt's delay (seconds until the cell ended) is printed to stdout as ``DELAY <s>``."""
    out: list[str] = []
    err: list[str] = []
    errors: list[tuple[str, list[str]]] = []
    interrupted_at = None
    for message in cell_messages(client, client.execute(code)):
        kind, content = (message["msg_type"], message["content"]) if message is not None else ("", {})
        if kind == "stream":
            (out if content["name"] == "stdout" else err).append(content["text"])
        elif kind == "error":
            errors.append((content["ename"], content["traceback"]))
        if manager is not None and interrupted_at is None and "STARTED" in "".join(out):
            time.sleep(0.3)
            manager.interrupt_kernel()
            interrupted_at = time.monotonic()
    if interrupted_at is not None:
        out.append(f"DELAY {time.monotonic() - interrupted_at:.1f}")
    return "".join(out), "".join(err), errors


def test_asyncio_run_in_a_cell_says_to_await(kernel: tuple[KernelManager, Any]) -> None:
    _, client = kernel
    assert run(client, SETUP) == ("", "", [])
    out, err, errors = run(client, "asyncio.run(make('a').run(task='go'))")
    assert errors == [("RuntimeError", [ASYNCIO_RUN_HINT])]
    assert "never awaited" not in err  # the coroutine asyncio.run never ran was closed
    # The loop's own run_until_complete: its line names it, not asyncio.run.
    out, err, errors = run(client, "asyncio.get_event_loop().run_until_complete(make('a').run(task='go'))")
    assert errors == [("RuntimeError", [RUN_UNTIL_COMPLETE_HINT])]
    assert "never awaited" not in err
    # A library that calls asyncio.run (its own globals, not the notebook's): its traceback, naming it.
    library = (
        "import types\nlib = types.ModuleType('somelib')\n"
        "exec('import asyncio\\ndef sync_api():\\n    async def work(): return 1\\n    return asyncio.run(work())', "
        "lib.__dict__)\nlib.sync_api()"
    )
    out, err, errors = run(client, library)
    assert [name for name, _ in errors] == ["RuntimeError"] and len(errors[0][1]) > 1
    assert "sync_api" in "".join(errors[0][1]) and "cannot be called from a running event loop" in errors[0][1][-1]
    # A function the notebook defined is the notebook's own code: its one line.
    out, err, errors = run(client, "def main_sync():\n    return asyncio.run(make('c').run(task='go'))\nmain_sync()")
    assert errors == [("RuntimeError", [ASYNCIO_RUN_HINT])]
    # Any other RuntimeError: IPython's traceback, as before.
    out, err, errors = run(client, "raise RuntimeError('something else')")
    assert [name for name, _ in errors] == ["RuntimeError"] and len(errors[0][1]) > 1
    assert "something else" in errors[0][1][-1]


def test_a_forgotten_await_in_a_cell_says_to_await(kernel: tuple[KernelManager, Any]) -> None:
    _, client = kernel
    run(client, SETUP)
    out, err, errors = run(client, "result = make('b').run(task='go')\nresult.messages")
    assert [name for name, _ in errors] == ["AttributeError"]
    assert "`result = await agent.run(task=...)`" in errors[0][1][-1]
    run(client, "result.close()")


def test_a_move_without_await_in_a_cell_says_the_fix(kernel: tuple[KernelManager, Any]) -> None:
    """Issue 43.6 in a notebook: a stepper's move written without ``await`` says, under its cell, in one line,
    what to write (before, ``stepper.run_until(...)`` gave Python's bare "coroutine ... was never awaited");
    left as the cell's value, its repr says the same. The walk did not move."""
    _, client = kernel
    run(client, SETUP)
    run(client, "walk = nbagent.step(make('w'), 'go')")
    out, err, errors = run(client, "walk.run_until(move='tool_request')\nprint('moves', len(walk.history))")
    assert errors == [] and "moves 0" in out
    fix = "stepper.run_until(...) was never awaited, so it did not run: write `await stepper.run_until(...)`"
    assert "NotAwaitedWarning: " + fix in err, err
    assert "coroutine 'Stepper.run_until' was never awaited" not in err
    reply = result_of(client, "walk.next()")
    assert reply.startswith("<coroutine stepper.next(), not run: write `await stepper.next()`"), reply
    out, _, errors = run(client, "print('moves', len(walk.history))")
    assert errors == [] and "moves 0" in out


def result_of(client: Any, code: str) -> str:
    """The ``text/plain`` of the ``execute_result`` of ``code`` (a cell's value, as the notebook shows it)."""
    shown = ""
    for message in cell_messages(client, client.execute(code)):
        if message is not None and message["msg_type"] == "execute_result":
            shown = message["content"]["data"]["text/plain"]
    return shown


def test_a_kernel_interrupt_of_an_awaited_run_ends_at_once_in_one_line(kernel: tuple[KernelManager, Any]) -> None:
    manager, client = kernel
    run(client, SETUP)
    out, err, errors = run(client, "await make('awaited').run(task='go')", manager)
    why = "the task awaiting it was cancelled: a kernel interrupt, Ctrl-C, task.cancel() or a timeout"
    assert errors == [
        ("CancelledError", [f"CancelledError: the run of agent 'awaited' was interrupted ({why}); {LEFT}"])
    ]
    assert float(out.split("DELAY ")[1]) < 30  # a hang guard: the tool sleeps 60 s; before, the interrupt waited for it

    for code in ("make('synced').run_sync('go')", "nbagent.run(make('synced'), 'go')"):
        out, err, errors = run(client, code, manager)
        line = f"KeyboardInterrupt: the run of agent 'synced' was interrupted (Ctrl-C or a kernel interrupt); {LEFT}"
        assert errors == [("KeyboardInterrupt", [line])], code
    out, err, errors = run(client, "await nbagent.Batch(make, ['a', 'b'], progress=None).run()", manager)
    batch = (
        "CancelledError: the batch was interrupted (the task awaiting it was cancelled: a kernel interrupt, Ctrl-C, "
        "task.cancel() or a timeout); the tasks that ended are in batch.results, and `await batch.run()` again runs "
        "the others"
    )
    assert errors == [("CancelledError", [batch])]
    out, err, errors = run(client, "print('alive')")
    assert (out, errors) == ("alive\n", [])


def test_the_offline_notice_is_no_error_box_in_a_notebook(kernel: tuple[KernelManager, Any]) -> None:
    """default_model()'s offline notice goes to stdout in a notebook (its stderr shows as an error)."""
    _, client = kernel
    out, err, errors = run(client, "import nbagent\nmodel = nbagent.default_model()")
    assert (out, err, errors) == (
        "nbagent: no OPENAI_API_KEY or NBAGENT_BASE_URL set, using the offline replay model (scripted answers).\n",
        "",
        [],
    )
