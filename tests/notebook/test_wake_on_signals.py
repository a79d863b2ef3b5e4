"""notebook.kernel.wake_on_signals: a signal wakeup fd the kernel's loop watches, or nothing changed."""

from __future__ import annotations

import asyncio
import signal

import pytest

from nbagent.notebook import kernel


class NoReaders(asyncio.SelectorEventLoop):
    """A loop that watches no file descriptors, as Windows' proactor loop."""

    def add_reader(self, *args: object) -> None:  # type: ignore[override]
        raise NotImplementedError


def test_a_loop_without_readers_leaves_everything_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel, "_WAKER", [])
    loop = NoReaders()
    try:
        assert loop.run_until_complete(_wake()) is False
    finally:
        loop.close()
    assert kernel._WAKER == []  # noqa: SLF001 (the module's own state, read by its test)
    assert signal.set_wakeup_fd(-1) == -1  # no wakeup fd left set


def test_a_watching_loop_gets_the_wakeup_fd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel, "_WAKER", [])
    loop = asyncio.SelectorEventLoop()
    try:
        assert loop.run_until_complete(_wake()) is True
        reader, writer = kernel._WAKER  # noqa: SLF001
        assert signal.set_wakeup_fd(-1) == writer.fileno()
        loop.remove_reader(reader.fileno())
    finally:
        loop.close()
        for sock in kernel._WAKER:  # noqa: SLF001
            sock.close()


async def _wake() -> bool:
    return kernel.wake_on_signals()
