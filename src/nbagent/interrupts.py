"""One line, not a traceback, for a run ended by Ctrl-C or a kernel interrupt.

A run cancelled from outside (a kernel interrupt of ``await agent.run(...)``, Ctrl-C under
``asyncio.run``, ``task.cancel()``) raises asyncio's ``CancelledError`` with no text; the sync entry
points (``agent.run_sync``, ``batch.run_sync``, ``nbagent.run``) raise ``KeyboardInterrupt`` after a
page of asyncio's frames. Here they get words, and one line:

- :func:`explain_cancellation` gives a run's ``CancelledError`` its message (what was interrupted
  and what is left), keeping its exact type (``asyncio.timeout`` tells its own cancellation by it);
- :func:`run_interrupted` makes the ``KeyboardInterrupt`` of a sync entry point, with its message;
- both render as one line in IPython (``_render_traceback_``) and, when they end a script, through
  :func:`install_excepthook` (an ``sys.excepthook`` that prints them in one line and passes every
  other exception to the hook before it), installed at the first interrupt: a sync entry point's, or
  a cancellation that ends its task cancelled (not one ``asyncio.timeout`` turns into
  ``TimeoutError``). A ``KeyboardInterrupt`` that ``asyncio.run`` raises after cancelling such a run
  is shown in one line too, with the run's message.
"""

from __future__ import annotations

import asyncio
import sys
from types import TracebackType

from .printable import printable

__all__ = ["explain_cancellation", "install_excepthook", "one_line", "run_interrupted"]

_MARK = "nbagent_interrupted"
"""The attribute that holds the one line of an exception this module explained."""


def run_interrupted(message: str) -> KeyboardInterrupt:
    """The ``KeyboardInterrupt`` a sync entry point raises when Ctrl-C or a kernel interrupt ended its
    run: ``message`` as its text, one line in IPython and at the end of a script.

    It is a ``KeyboardInterrupt`` of that exact type, so handlers of one handle it and a script it ends
    exits as one killed by Ctrl-C (Python gives that exit status to its exact type only).
    """
    interrupt = KeyboardInterrupt(message)
    _mark(interrupt, f"KeyboardInterrupt: {message}")
    install_excepthook()
    return interrupt


def explain_cancellation(error: BaseException, message: str) -> None:
    """Give a run's ``CancelledError`` (``error``, raised by a cancellation from outside) ``message``
    as its text, shown in one line in IPython and, if it ends a script, by the excepthook.

    The canceller's own message, if any, is kept at the end, its terminal controls and invisible marks
    shown (:func:`~nbagent.printable.printable`: a canceller may be anyone). The type stays asyncio's own.
    """
    given = error.args[0] if error.args and error.args[0] else None
    text = printable(message if given is None else f"{message} (cancelled with: {given})")
    error.args = (text,)
    _mark(error, f"{type(error).__name__}: {text}")
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no loop running: nothing can turn it into another error
        task = None
    if task is None:
        install_excepthook()
    else:  # an interrupt if the task ends cancelled; a timeout (asyncio.timeout's TimeoutError) is not one
        task.add_done_callback(_install_if_cancelled)


def _install_if_cancelled(task: asyncio.Task[object]) -> None:
    if task.cancelled():
        install_excepthook()


def _mark(error: BaseException, line: str) -> None:
    """``line`` is what ``error`` shows: IPython reads ``_render_traceback_``, the excepthook the mark
    (controls and invisible marks shown: an agent's name is the user's, a canceller's message anyone's)."""
    line = printable(line)
    setattr(error, _MARK, line)
    setattr(error, "_render_traceback_", lambda: [line])  # noqa: B010 (IPython's hook; no such attribute on the type)


def one_line(error: BaseException) -> str | None:
    """The one line of an interrupt explained here (``None`` for any other exception): of ``error``
    itself, or of the explained cancellation a ``KeyboardInterrupt`` was raised during (``asyncio.run``
    raises one after cancelling its main task on Ctrl-C)."""
    line = getattr(error, _MARK, None)
    if isinstance(line, str):
        return line
    if not isinstance(error, KeyboardInterrupt):
        return None
    seen = 0
    cause = error.__context__
    while cause is not None and seen < 8:
        line = getattr(cause, _MARK, None)
        if isinstance(line, str):
            return "KeyboardInterrupt: " + line.split(": ", 1)[1]
        cause, seen = cause.__context__, seen + 1
    return None


def _excepthook(kind: type[BaseException], error: BaseException, traceback: TracebackType | None) -> None:
    line = one_line(error)
    if line is None:
        _previous(kind, error, traceback)
        return
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


_previous = sys.excepthook
_installed = False


def install_excepthook() -> None:
    """Show interrupts explained here in one line when they end a program; every other exception goes
    to the hook that was there before. Installed once, at the first interrupt (a hook set later that
    passes exceptions on to it keeps this one working)."""
    global _previous, _installed
    if not _installed:
        _installed = True
        _previous = sys.excepthook
        sys.excepthook = _excepthook
