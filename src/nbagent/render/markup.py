"""The one escaping path: :class:`Markup`, :func:`escape` and the element builder :func:`el`.

``Markup`` is a ``str`` holding HTML that is safe to show. It is made only from literal markup
written in this package, from :func:`escape`, from :func:`el` and from the sanitiser of
:mod:`nbagent.render.markdown`. Whatever plain ``str`` (or other value) is combined with a
``Markup`` is escaped on the way in: ``+``, ``%``, :meth:`Markup.format` and :meth:`Markup.join`
escape every operand that is not ``Markup`` already. So untrusted text can reach a view's HTML only
escaped; the worst a mistake can do is show markup twice escaped, as text.

Other ``str`` methods (slicing, ``replace``, f-strings) return a plain ``str``: it is escaped again
if it is put back into ``Markup``.
"""

from __future__ import annotations

import html as _html
import re
import string
from collections.abc import Iterable, Mapping
from typing import Any, SupportsIndex

__all__ = ["EMPTY", "Markup", "Child", "el", "escape"]


class Markup(str):
    """HTML that is safe to show; combining it with anything else escapes the other operand."""

    __slots__ = ()

    def __html__(self) -> Markup:
        return self

    def __add__(self, other: str) -> Markup:
        return Markup(str.__add__(self, escape(other)))

    def __radd__(self, other: str) -> Markup:
        return Markup(str.__add__(escape(other), self))

    def __mul__(self, count: SupportsIndex) -> Markup:
        return Markup(str.__mul__(self, count))

    def __mod__(self, args: Any) -> Markup:
        if isinstance(args, tuple):
            escaped: Any = tuple(_Escaped(arg) for arg in args)
        elif isinstance(args, Mapping):
            escaped = {key: _Escaped(value) for key, value in args.items()}
        else:
            escaped = _Escaped(args)
        return Markup(str.__mod__(self, escaped))

    def format(self, *args: Any, **kwargs: Any) -> Markup:
        return Markup(_FORMATTER.vformat(self, args, kwargs))

    def join(self, items: Iterable[str]) -> Markup:
        return Markup(str.join(self, (escape(item) for item in items)))

    def __repr__(self) -> str:
        return f"Markup({str.__repr__(self)})"


EMPTY = Markup()


def escape(value: object) -> Markup:
    """``value`` as HTML text: ``Markup`` as it is, anything else ``str()``-ed and escaped (quotes too)."""
    if isinstance(value, Markup):
        return value
    return Markup(_html.escape(value if isinstance(value, str) else str(value), quote=True))


class _Escaped:
    """A ``%`` operand: escaped when formatted as text, itself for numbers."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __str__(self) -> str:
        return escape(self.value)

    __repr__ = __str__

    def __int__(self) -> int:
        number: Any = self.value
        return int(number)

    def __float__(self) -> float:
        number: Any = self.value
        return float(number)

    __index__ = __int__


class _Formatter(string.Formatter):
    """``str.format`` whose every replacement field is escaped (``Markup`` fields stay as they are)."""

    def format_field(self, value: Any, format_spec: str) -> str:
        if isinstance(value, Markup) and not format_spec:
            return value
        return escape(format(value, format_spec))

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        # !r and !s make plain text of a Markup too: escape it like any text.
        return value if conversion is None else escape(super().convert_field(value, conversion))


_FORMATTER = _Formatter()

Child = Markup | str | int | float | Iterable["Child"] | None
"""What :func:`el` takes as content: markup, text and numbers (escaped; any other value as its ``str()``),
iterables of children, ``None`` (nothing)."""

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9:-]*\Z")
_VOID = frozenset({"br", "hr", "rect", "path", "line", "circle", "polygon", "polyline", "ellipse", "stop"})


def _add_children(parts: list[str], children: Iterable[Child]) -> None:
    for child in children:
        if child is None:
            continue
        if isinstance(child, str):
            parts.append(escape(child))
        elif isinstance(child, Iterable):
            _add_children(parts, child)
        else:  # a number, or any other value: its text
            parts.append(escape(child))


def _attribute_name(key: str) -> str:
    name = key.rstrip("_").replace("_", "-")
    if not _NAME.match(name) or name.lower().startswith("on"):
        raise ValueError(f"not an attribute name el() writes: {key!r}")
    return name


def el(tag: str, *children: Child, **attributes: object) -> Markup:
    """The element ``<tag attributes>children</tag>``, every text child and attribute value escaped.

    Attribute names are the keywords with ``_`` for ``-`` and a trailing ``_`` dropped
    (``class_="x"``, ``data_call_id=...``, ``aria_label=...``); ``None`` and ``False`` leave an
    attribute out, ``True`` writes it bare (``open``). Event-handler attributes (``on...``) are
    refused. SVG shapes and ``br``/``hr`` without content are written self-closed.
    """
    if not _NAME.match(tag):
        raise ValueError(f"not a tag name: {tag!r}")
    parts = ["<", tag]
    for key, value in attributes.items():
        if value is None or value is False:
            continue
        parts.append(" ")
        parts.append(_attribute_name(key))
        if value is not True:
            parts.append('="')
            parts.append(escape(value))
            parts.append('"')
    body: list[str] = []
    _add_children(body, children)
    if not body and tag in _VOID:
        parts.append("/>")
    else:
        parts.append(">")
        parts.extend(body)
        parts.append(f"</{tag}>")
    return Markup("".join(parts))


def concat(*children: Child) -> Markup:
    """Children side by side, as :func:`el` would put them in an element."""
    body: list[str] = []
    _add_children(body, children)
    return Markup("".join(body))
