"""The hooks through which another library's adapter reaches the core: its one seam.

The core never imports an adapter nor tests a module's name. Where it meets an object that is not
its own (a message, tool, model context or client of another library, a caller speaking that
library's types), it asks a :class:`Hook`; the adapter (:mod:`nbagent.autogen`, for AutoGen)
registers its converters into the hooks when it is imported, which ``import nbagent`` does. Each
converter returns what it makes of the value, or ``None`` when the value is not its library's: the
first answer wins, and with no adapter registered every hook answers ``None``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

__all__ = ["HINT", "Hook"]


class Hook(Generic[P, T]):
    """Converters registered by adapters, asked in turn: the first that answers (not ``None``) wins."""

    __slots__ = ("_converters", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._converters: list[Callable[P, T | None]] = []

    def register(self, converter: Callable[P, T | None]) -> None:
        """Add ``converter`` (once: registering it again changes nothing)."""
        if converter not in self._converters:
            self._converters.append(converter)

    def unregister(self, converter: Callable[P, T | None]) -> None:
        """Remove ``converter`` if it is registered."""
        if converter in self._converters:
            self._converters.remove(converter)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> T | None:
        for converter in self._converters:
            answer = converter(*args, **kwargs)
            if answer is not None:
                return answer
        return None

    def __bool__(self) -> bool:
        return bool(self._converters)

    def __repr__(self) -> str:
        return f"Hook({self.name!r}, {len(self._converters)} registered)"


HINT: Hook[[object, str], str] = Hook("hint")
"""What to tell a user who gave ``value`` (another library's object) where nbagent expected its own
``role`` (``"agent"``, ``"chat message"``); ``None`` when no adapter has anything to say."""
