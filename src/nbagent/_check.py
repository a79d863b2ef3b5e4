"""Argument checks for the public entry points: one wording for every wrong argument.

Every check raises before anything runs, with one message shape::

    <where>: <parameter> must be <what is expected>, got <what was given>[. <hint>]

a ``TypeError`` for a value of the wrong type (``given`` names its type and a short repr:
``str 'gpt-4o-mini'``), a ``ValueError`` for a value of the right type that is out of range or not
one of the choices (``got 0``, ``got 'call_lm'``). ``where`` is the entry point
(``AssistantAgent``, ``AssistantAgent.run``, ``nbagent.show``...).

Bottom layer: it imports nothing of nbagent; the callers pass the types to check against.
"""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, NoReturn, TypeVar

T = TypeVar("T")

_REPR_LIMIT = 60


def short_repr(value: object) -> str:
    """``repr(value)``, cut to a readable length."""
    try:
        text = repr(value)
    except Exception:  # a broken __repr__ must not hide the real mistake
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= _REPR_LIMIT else text[: _REPR_LIMIT - 3] + "..."


def given(value: object) -> str:
    """How a wrong argument is named in a message: its type and a short repr."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return f"bool {value}"
    if inspect.isclass(value):
        return f"the class {value.__qualname__}"
    if inspect.isfunction(value) or inspect.ismethod(value) or inspect.isbuiltin(value):
        return f"function {getattr(value, '__qualname__', getattr(value, '__name__', '?'))}"
    return f"{type(value).__name__} {short_repr(value)}"


def message(where: str, param: str, expected: str, got: str, hint: str = "") -> str:
    text = f"{where}: {param} must be {expected}, got {got}"
    return f"{text}. {hint}" if hint else text


def wrong_type(where: str, param: str, expected: str, value: object, hint: str = "") -> TypeError:
    """The ``TypeError`` for ``value``, which is not of the type ``param`` takes."""
    return TypeError(message(where, param, expected, given(value), hint))


def wrong_value(where: str, param: str, expected: str, value: object, hint: str = "") -> ValueError:
    """The ``ValueError`` for ``value``, of the right type but not a value ``param`` takes."""
    return ValueError(message(where, param, expected, short_repr(value), hint))


def fail_type(where: str, param: str, expected: str, value: object, hint: str = "") -> NoReturn:
    raise wrong_type(where, param, expected, value, hint)


def instance(
    where: str,
    param: str,
    value: object,
    types: type[T] | tuple[type[T], ...],
    expected: str,
    *,
    hint: str = "",
) -> T:
    """``value`` if it is an instance of ``types``, else a ``TypeError``."""
    if not isinstance(value, types):
        raise wrong_type(where, param, expected, value, hint)
    return value


def optional(
    where: str, param: str, value: object, types: type[T] | tuple[type[T], ...], expected: str, *, hint: str = ""
) -> T | None:
    """``None``, or ``value`` if it is an instance of ``types``; else a ``TypeError`` (``expected or None``)."""
    if value is None:
        return None
    return instance(where, param, value, types, f"{expected} or None", hint=hint)


def boolean(where: str, param: str, value: object, *, none: bool = False) -> bool | None:
    """``True`` or ``False`` (or ``None`` where ``none``): not ``"yes"``, not ``1``."""
    if value is None and none:
        return None
    if not isinstance(value, bool):
        raise wrong_type(where, param, "True or False" + (" (or None)" if none else ""), value)
    return value


def integer(
    where: str, param: str, value: object, *, minimum: int | None = None, maximum: int | None = None, none: bool = False
) -> int | None:
    """An ``int`` (not a ``bool``, not ``"3"``) within ``minimum``..``maximum``."""
    if value is None and none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise wrong_type(where, param, _int_expected(minimum, maximum) + (" or None" if none else ""), value)
    number = int(value)
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise wrong_value(where, param, _int_expected(minimum, maximum), value)
    return number


def _int_expected(minimum: int | None, maximum: int | None) -> str:
    if minimum is not None and maximum is not None:
        return f"an int from {minimum} to {maximum}"
    if minimum is not None:
        return f"an int greater than or equal to {minimum}"
    if maximum is not None:
        return f"an int less than or equal to {maximum}"
    return "an int"


def number(
    where: str, param: str, value: object, *, minimum: float | None = None, positive: bool = False, none: bool = False
) -> float | None:
    """A real number (``int`` or ``float``, not a ``bool``, not ``"1"``): at least ``minimum``, or above 0."""
    if value is None and none:
        return None
    bound = "greater than 0" if positive else "" if minimum is None else f"greater than or equal to {minimum:g}"
    expected = f"a number {bound}".strip()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise wrong_type(where, param, expected + (" (seconds) or None" if none else ""), value)
    real = float(value)
    if real != real or (positive and real <= 0) or (minimum is not None and real < minimum):
        raise wrong_value(where, param, expected, value)
    return real


def string(where: str, param: str, value: object, *, none: bool = False, empty: bool = True) -> str | None:
    """A ``str`` (or ``None`` where ``none``); not empty unless ``empty``."""
    if value is None and none:
        return None
    expected = "a str" if empty else "a non-empty str"
    if not isinstance(value, str):
        raise wrong_type(where, param, expected + (" or None" if none else ""), value)
    if not empty and not value.strip():
        raise wrong_value(where, param, expected, value)
    return value


def function(where: str, param: str, value: object, expected: str = "a function", *, none: bool = False) -> Any:
    """A callable (or ``None`` where ``none``)."""
    if value is None and none:
        return None
    if not callable(value):
        raise wrong_type(where, param, expected + (" or None" if none else ""), value)
    return value


def sequence(where: str, param: str, value: object, expected: str, *, hint: str = "") -> list[Any]:
    """A list (or tuple) of items, as a list: not a bare item, not a str, a dict or a set."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise wrong_type(where, param, expected, value, hint)
    return list(value)


def mapping(where: str, param: str, value: object, expected: str = "a dict", *, none: bool = False) -> Any:
    if value is None and none:
        return None
    if not isinstance(value, Mapping):
        raise wrong_type(where, param, expected + (" or None" if none else ""), value)
    return value


def choice(where: str, param: str, value: object, choices: Collection[str], what: str = "one of") -> str:
    """One of ``choices``: a ``TypeError`` for a non-str, a ``ValueError`` naming every valid one."""
    listed = ", ".join(repr(item) for item in choices)
    if not isinstance(value, str):
        raise wrong_type(where, param, f"{what} {listed}", value)
    if value not in choices:
        close = _closest(value, choices)
        raise wrong_value(where, param, f"{what} {listed}", value, f"Did you mean {close!r}?" if close else "")
    return value


def _closest(value: str, choices: Iterable[str]) -> str | None:
    import difflib

    found = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


def each(where: str, param: str, items: Sequence[Any], check: Callable[[str, Any], T]) -> list[T]:
    """``check(f"{param}[i]", item)`` for every item: a wrong item is named by its index."""
    return [check(f"{param}[{index}]", item) for index, item in enumerate(items)]


class ItemTypeError(TypeError, ValueError):
    """A wrong item of a list where AutoGen raises ``ValueError`` ("Unsupported tool type",
    "Invalid message type in sequence"): a ``TypeError`` by this module's rule, and a
    ``ValueError`` for code written against AutoGen."""
