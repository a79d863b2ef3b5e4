"""An AutoGen agent's model context as the trace reads it: what it held when each item was made.

:class:`RecordingContext` implements AutoGen's ``ChatCompletionContext`` around the agent's own
context and passes every call through; it notes each change (a message added, the context cleared
or loaded) with the time it happened, on AutoGen's clock (``created_at`` of messages and events).

:class:`ContextView` is the nbagent context a trace snapshots (the ``model_context`` of the agent's
:class:`~nbagent.autogen.source.AutoGenSource`). It holds the context as it was at a point of
the run: the recording run moves it forward to the time an item was made before that item is
recorded. In a team the agents run ahead of whoever reads the team's stream, so the context *now*
may already hold what the agent did after the item being recorded; the view holds what it held
*then*. Like nbagent's own contexts, its message list is only ever appended to, and replaced when
the context is cleared or loaded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Literal

from autogen_core.model_context import ChatCompletionContext as AgContext
from autogen_core.model_context import ChatCompletionContextState
from autogen_core.models import LLMMessage

from .. import messages as nb
from .._ids import utc_now
from ..context import ChatCompletionContext
from .convert import Converter

Change = tuple[datetime, Literal["add", "replace"], Any]  # (when, what, the message or the new messages)


async def stored_messages(context: AgContext) -> list[LLMMessage]:
    """Every message an AutoGen context holds (not only its view), read through its saved state."""
    try:
        return list(ChatCompletionContextState.model_validate(await context.save_state()).messages)
    except Exception:  # a custom context with another state: its view is what can be read
        return list(await context.get_messages())


class RecordingContext(AgContext):
    """An AutoGen model context that notes every change of ``inner`` (which it calls unchanged)."""

    component_type = "chat_completion_context"

    def __init__(self, inner: AgContext, converter: Converter) -> None:
        super().__init__()
        self.inner = inner
        self.converter = converter
        self.changes: list[Change] = []
        self.on_change: Callable[[], None] | None = None

    def _note(self, when: datetime, what: Literal["add", "replace"], payload: Any) -> None:
        self.changes.append((when, what, payload))
        if self.on_change is not None:
            self.on_change()

    async def add_message(self, message: LLMMessage) -> None:
        when = utc_now()
        await self.inner.add_message(message)
        self._note(when, "add", self.converter.llm(message))

    async def get_messages(self) -> list[LLMMessage]:
        return await self.inner.get_messages()

    async def clear(self) -> None:
        when = utc_now()
        await self.inner.clear()
        self._note(when, "replace", [])

    async def save_state(self) -> Mapping[str, Any]:
        return await self.inner.save_state()

    async def load_state(self, state: Mapping[str, Any]) -> None:
        when = utc_now()
        await self.inner.load_state(state)
        self._note(when, "replace", self.converter.llms(await stored_messages(self.inner)))

    def dump_component(self) -> Any:
        return self.inner.dump_component()

    def __repr__(self) -> str:
        return f"RecordingContext({self.inner!r})"


class ContextView(ChatCompletionContext):
    """An AutoGen agent's context at a point of the run, as nbagent messages (what the trace snapshots).

    ``follow(recording)`` starts following a :class:`RecordingContext` from the messages it held
    then; :meth:`advance` applies its changes up to a time.
    """

    def __init__(self) -> None:
        super().__init__()
        self._recording: RecordingContext | None = None
        self._applied = 0  # how many of the recording's changes are applied

    def follow(self, recording: RecordingContext | None, messages: list[nb.LLMMessage]) -> None:
        """Hold ``messages`` (the context when recording starts), then follow ``recording``'s changes."""
        if messages != self._messages:
            self._messages = list(messages)
        self._recording = recording
        self._applied = 0

    @property
    def position(self) -> int:
        """How many changes of the followed context are applied."""
        return self._applied

    def pending(self) -> list[Change]:
        """The changes of the followed context not applied yet."""
        if self._recording is None:
            return []
        return self._recording.changes[self._applied :]

    def advance(self, until: datetime | None = None, count: int | None = None) -> None:
        """Apply the changes made at or before ``until`` (all with ``None``), or the next ``count``."""
        changes = self.pending()
        if count is not None:
            changes = changes[:count]
        for when, what, payload in changes:
            if until is not None and when > until:
                break
            if what == "add":
                self._messages.append(payload)
            else:  # a new list: the old one stays as the trace's log of the context before
                self._messages = list(payload)
            self._applied += 1

    def advance_to(self, position: int) -> None:
        """Apply the changes up to position ``position`` (as :attr:`position` counts them)."""
        if position > self._applied:
            self.advance(count=position - self._applied)
