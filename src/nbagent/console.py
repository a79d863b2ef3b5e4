"""``await nbagent.Console(agent.run_stream(task=...))``: a run printed in the terminal as it goes.

AutoGen's ``autogen_agentchat.ui.Console`` with its signature and behaviour: it prints every event
and message of a ``run_stream`` or ``on_messages_stream`` (streamed text as it comes) and returns the
stream's last ``TaskResult`` or ``Response``. It takes nbagent's streams and AutoGen's own (an AutoGen
agent's or team's, converted as ``nbagent.autogen`` converts them); the text is the one text
renderer's (:class:`nbagent.render.textlog.TextLog`). Writing goes through a worker thread, as
AutoGen's does, so a slow terminal or pipe never blocks the event loop.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterable, Callable
from typing import Any, Protocol, TextIO, TypeVar

from .hooks import Hook
from .messages import BaseAgentEvent, BaseChatMessage, Response, TaskResult
from .render.textlog import TextLog
from .sync import entry_point

__all__ = ["Console"]

T = TypeVar("T")


class InputNotifier(Protocol):
    """What ``user_input_manager`` must have (AutoGen's ``UserInputManager`` has it)."""

    def notify_event_received(self, request_id: str) -> None: ...


Reader = Callable[[object], tuple[str, object] | None]
"""What an item of another library's stream is to the console: ``(kind, shown)`` (``kind`` as
:func:`_kind` says it, ``shown`` nbagent's item to print), ``None`` if not that library's."""

FOREIGN_STREAM: Hook[[object], Reader] = Hook("stream")
"""For the first item of another library's stream (AutoGen's: registered by :mod:`nbagent.autogen`),
the :data:`Reader` of that stream's items (one per stream: it converts each item once)."""


@entry_point("nbagent.Console(stream)")
async def Console(  # noqa: N802 (AutoGen's name: code written for AutoGen's Console reads the same)
    stream: AsyncIterable[Any],
    *,
    no_inline_images: bool = False,
    output_stats: bool = False,
    user_input_manager: InputNotifier | None = None,
    output: TextIO | None = None,
) -> Any:
    """Print every item of ``stream`` and return its last ``TaskResult`` or ``Response``.

    ``stream`` is what ``run_stream(...)`` or ``on_messages_stream(...)`` returns, of an nbagent agent
    or of AutoGen's agents and teams. ``output_stats=True`` adds each message's tokens and a summary
    (messages, finish reason, tokens, duration). ``user_input_manager`` is told of AutoGen's
    ``UserInputRequestedEvent`` (not printed), as AutoGen's Console does. ``no_inline_images`` is
    accepted for AutoGen's signature: nbagent prints no inline images. ``output`` is where the text
    goes (``sys.stdout`` by default). Raises ``ValueError`` when the stream ended without a result.
    """
    _check(stream, output_stats, no_inline_images)
    out = output if output is not None else sys.stdout
    log = TextLog(output_stats)
    start = time.perf_counter()
    last: Any = None
    reader: Reader | None = None
    async for item in stream:
        kind, shown = _kind(item)
        if kind == "other":  # not nbagent's: another library's (AutoGen's), read by its adapter
            reader = reader or FOREIGN_STREAM(item)
            kind, shown = (reader(item) if reader is not None else None) or ("item", item)
        if kind == "result":
            last = item
            if output_stats:
                counts = (f"Number of messages: {len(item.messages)}", f"Finish reason: {item.stop_reason}")
                await _write(out, log.close() + log.summary(time.perf_counter() - start, *counts))
            continue
        if kind == "input":
            if user_input_manager is not None:
                user_input_manager.notify_event_received(item.request_id)
            continue
        text = log.text(shown)
        if kind == "response":
            last = item
            if output_stats:
                inner = len(item.inner_messages or ())
                text += log.summary(time.perf_counter() - start, f"Number of inner messages: {inner}")
        if text:
            await _write(out, text)
    if last is None:
        raise ValueError(
            "Console: the stream ended without a TaskResult or Response; give it what run_stream(...) or "
            "on_messages_stream(...) returns"
        )
    return last


def _check(stream: object, output_stats: object, no_inline_images: object) -> None:
    from . import _check as check

    check.boolean("Console", "output_stats", output_stats)
    check.boolean("Console", "no_inline_images", no_inline_images)
    if hasattr(stream, "__aiter__"):
        return
    if hasattr(stream, "__await__"):
        if hasattr(stream, "close"):
            stream.close()  # a coroutine never awaited: no "never awaited" warning on top of this error
        raise TypeError(
            "Console(stream): expected the stream of run_stream(...) or on_messages_stream(...), got an "
            f"awaitable ({type(stream).__name__}): write `await nbagent.Console(agent.run_stream(task=...))`"
        )
    raise TypeError(
        "Console(stream): expected the stream of run_stream(...) or on_messages_stream(...), got "
        f"{type(stream).__name__}"
    )


def _kind(item: object) -> tuple[str, object]:
    """What ``item`` is to the console: ``result`` (a TaskResult), ``response``, ``item`` (an event or
    message of nbagent's) or ``other`` (another library's: its :data:`Reader` says; the readers also
    say ``input``, AutoGen's UserInputRequestedEvent)."""
    if isinstance(item, TaskResult):
        return "result", item
    if isinstance(item, Response):
        return "response", item
    if isinstance(item, (BaseAgentEvent, BaseChatMessage, str)):
        return "item", item
    return "other", item


async def _write(out: TextIO, text: str) -> None:
    """Write and flush off the event loop (a terminal or pipe may block)."""
    await asyncio.to_thread(_write_now, out, text)


def _write_now(out: TextIO, text: str) -> None:
    out.write(text)
    out.flush()
