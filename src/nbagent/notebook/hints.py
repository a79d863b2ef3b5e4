"""What a notebook cell shows for ``asyncio.run(...)``: one line saying what to write instead.

A cell already runs inside the kernel's event loop, so ``asyncio.run(main())`` (the way a script runs
an agent, pasted into a cell) fails with asyncio's ``RuntimeError: asyncio.run() cannot be called from
a running event loop`` and a "coroutine was never awaited" warning. :func:`install` (called by
``nbagent`` when imported in a kernel) gives IPython a handler for that error: one line that says to
``await`` instead (or to use ``nbagent.run``), and the coroutine handed to ``asyncio.run`` is closed, so
no warning follows (only when the notebook's own code made the call: a library that calls
``asyncio.run`` keeps its traceback); ``loop.run_until_complete(main())`` (asyncio's "This event loop is already
running") gets its own line. Every other ``RuntimeError`` is shown exactly as IPython shows it. Nothing is
installed when another handler of IPython's custom exceptions is set.
"""

from __future__ import annotations

from collections.abc import Coroutine
from types import TracebackType
from typing import Any

__all__ = ["ASYNCIO_RUN_HINT", "RUN_UNTIL_COMPLETE_HINT", "install"]

ASYNCIO_RUN_HINT = (
    "RuntimeError: asyncio.run() cannot be called from a running event loop: a notebook cell already runs "
    "in one, so write `await main()` (or `result = await agent.run(task=...)`) instead of "
    "`asyncio.run(main())`; nbagent.run(agent, task) runs an agent without await"
)
RUN_UNTIL_COMPLETE_HINT = (
    "RuntimeError: This event loop is already running: a notebook cell runs in the kernel's event loop, so "
    "write `await main()` (or `result = await agent.run(task=...)`) instead of `loop.run_until_complete(main())`; "
    "nbagent.run(agent, task) runs an agent without await"
)
_HINTS = {
    "cannot be called from a running event loop": ASYNCIO_RUN_HINT,
    "This event loop is already running": RUN_UNTIL_COMPLETE_HINT,
}


def install(shell: Any) -> bool:
    """Set the handler on IPython's ``shell``, unless another custom exception handler is set there.
    Returns whether it is installed."""
    if id(shell) in _INSTALLED:
        return True
    if getattr(shell, "custom_exceptions", ()):
        return False
    shell.set_custom_exc((RuntimeError,), _handler)
    _INSTALLED.add(id(shell))
    return True


_INSTALLED: set[int] = set()  # the shells (IPython has one) the handler is set on


def _handler(
    shell: Any, kind: type[BaseException], error: BaseException, tb: TracebackType | None, tb_offset: Any = None
) -> None:
    """Show a ``RuntimeError`` a cell raised (IPython leaves the showing to the handler)."""
    hint = next((hint for text, hint in _HINTS.items() if text in str(error)), None)
    if hint is not None and _close_main(tb, getattr(shell, "user_ns", None)):
        setattr(error, "_render_traceback_", lambda: [hint])  # noqa: B010 (IPython's one-line hook)
    shell.showtraceback((kind, error, tb), tb_offset=tb_offset)


def _close_main(tb: TracebackType | None, user_ns: object) -> bool:
    """Whether the error came from ``asyncio.run`` (or ``run_until_complete``) called by the notebook's own
    code (a cell, or a function a cell defined: its globals are the notebook's namespace); then the
    coroutine it was given, which never ran, is closed. A library calling them keeps its traceback."""
    caller = None
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_filename.endswith(("asyncio/runners.py", "asyncio/base_events.py")):
            if caller is None or caller.f_globals is not user_ns:
                return False
            main = frame.f_locals.get("main", frame.f_locals.get("future"))
            if isinstance(main, Coroutine):
                main.close()
            return True
        caller, tb = frame, tb.tb_next
    return False
