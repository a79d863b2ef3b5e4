"""The one escaping path: :class:`Markup`, :func:`escape` and the element builder :func:`el`.

``Markup`` is a ``str`` holding HTML that is safe to show. It is made only from literal markup
written in this package, from :func:`escape`, from :func:`el` and from the sanitiser of
:mod:`nbagent.render.markdown`. Whatever plain ``str`` (or other value) is combined with a
``Markup`` is escaped on the way in: ``+``, ``%``, :meth:`Markup.format` and :meth:`Markup.join`
escape every operand that is not ``Markup`` already. So untrusted text can reach a view's HTML only
escaped; the worst a mistake can do is show markup twice escaped, as text.

Other ``str`` methods (slicing, ``replace``, f-strings) return a plain ``str``: it is escaped again
if it is put back into ``Markup``.

The same path masks secrets: every plain text goes through :func:`nbagent.redact.mask` (the keys this
process's clients hold and those of the environment, tokens, ``Authorization`` values, URLs'
``user:password@``) as it is escaped, so no view, static copy or saved notebook shows one. And it makes
bidi and zero-width marks visible (:func:`nbagent.printable.visible_marks`: ``read\u202etxt.exe`` shows
as ``read<U+202E>txt.exe``, never as ``readexe.txt``).
"""

from __future__ import annotations

import html as _html
import re
import string
from collections.abc import Iterable
from typing import Any, SupportsIndex

from ..printable import visible_marks
from ..redact import mask, valid_text

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
        # As markupsafe does: a tuple's items are wrapped one by one; anything else indexable (a
        # mapping, a list) is wrapped whole, so that ``%(key)s`` escapes what each lookup gives and
        # ``%s`` escapes the whole value's text (a dict's keys included); any other value is wrapped
        # in a 1-tuple (so a value that is itself a tuple subclass cannot be unpacked).
        escaped: Any
        if isinstance(args, tuple):
            escaped = tuple(_Escaped(arg) for arg in args)
        elif hasattr(type(args), "__getitem__") and not isinstance(args, str):
            escaped = _Escaped(args)
        else:
            escaped = (_Escaped(args),)
        return Markup(str.__mod__(self, escaped))

    def format(self, *args: Any, **kwargs: Any) -> Markup:
        return Markup(_FORMATTER.vformat(self, args, kwargs))

    def join(self, items: Iterable[str]) -> Markup:
        return Markup(str.join(self, (escape(item) for item in items)))

    def __repr__(self) -> str:
        return f"Markup({str.__repr__(self)})"


EMPTY = Markup()


def escape(value: object) -> Markup:
    """``value`` as HTML text: ``Markup`` as it is, anything else ``str()``-ed, a lone surrogate replaced
    (:func:`~nbagent.redact.valid_text`), its secrets masked, its bidi and zero-width marks made visible and
    escaped (quotes too)."""
    if isinstance(value, Markup):
        return value
    text = mask(valid_text(value if isinstance(value, str) else str(value)))
    return Markup(_html.escape(visible_marks(text), quote=True))


class _Escaped:
    """A ``%`` operand: escaped when formatted as text, itself for numbers; a mapping's lookups
    (``%(key)s``) are wrapped in turn."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __getitem__(self, key: object) -> _Escaped:
        container: Any = self.value
        return _Escaped(container[key])

    def __str__(self) -> str:
        return escape(self.value)

    def __repr__(self) -> str:
        return escape(repr(self.value))

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
_VOID = frozenset(
    {"br", "hr", "img", "input", "rect", "path", "line", "circle", "polygon", "polyline", "ellipse", "stop"}
)


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
    if not _NAME.match(name) or name.lower().startswith("on") or name.lower() == "srcdoc":
        raise ValueError(f"not an attribute name el() writes: {key!r}")
    return name


_URL_ATTRIBUTES = frozenset(
    {"href", "src", "action", "formaction", "xlink:href", "poster", "background", "cite", "data", "srcset"}
)
_SCHEME = re.compile(r"([a-z][a-z0-9+.\-]*):")
_SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
_SAFE_DATA = re.compile(r"data:image/(png|jpeg|jpg|gif|webp|bmp|avif)[;,]")
_SAFE_IMG_DATA = re.compile(r"data:image/svg\+xml[;,]")  # an <img> runs no script of its SVG
_URL_NOISE = re.compile(r"[\t\n\r]")  # what a browser removes anywhere in a URL
_C0_AND_SPACE = "".join(map(chr, range(0x21)))  # and what it strips from either end
_STYLE_UNSAFE = re.compile(r"javascript:|vbscript:|expression\(|-moz-binding|behavior:|url\(|@import")


def _checked_value(tag: str, name: str, value: str) -> str:
    """``value`` if it is a safe value for attribute ``name`` of ``tag``; a ``ValueError`` otherwise.

    A URL attribute takes a relative URL or an ``http(s)``/``mailto`` URL or a ``data:image/`` of a
    raster type (an ``<img>``'s ``src`` also an SVG one: an image's SVG runs no script), never
    ``javascript:`` and the like; a ``style`` takes no ``url()``, ``expression()`` nor script scheme.
    """
    lowered = name.lower()
    if lowered in _URL_ATTRIBUTES:
        url = _URL_NOISE.sub("", value).strip(_C0_AND_SPACE).lower()
        scheme = _SCHEME.match(url)
        image = tag.lower() == "img" and lowered == "src" and _SAFE_IMG_DATA.match(url)
        if scheme and scheme.group(1) not in _SAFE_SCHEMES and not _SAFE_DATA.match(url) and not image:
            raise ValueError(f"el() writes no {scheme.group(1)}: URL in {name}: {value!r}")
    elif lowered == "style":
        css = re.sub(r"[\s\\]|/\*.*?\*/", "", value, flags=re.DOTALL).lower()
        if _STYLE_UNSAFE.search(css):
            raise ValueError(f"el() writes no url(), expression() or script in a style: {value!r}")
    return value


def el(tag: str, *children: Child, **attributes: object) -> Markup:
    """The element ``<tag attributes>children</tag>``, every text child and attribute value escaped.

    Attribute names are the keywords with ``_`` for ``-`` and a trailing ``_`` dropped
    (``class_="x"``, ``data_call_id=...``, ``aria_label=...``); ``None`` and ``False`` leave an
    attribute out, ``True`` writes it bare (``open``). Event-handler attributes (``on...``) are
    refused, and so are ``srcdoc``, a URL attribute (``href``, ``src``, ``formaction``, ...) whose
    scheme is not http(s), mailto or a raster ``data:image/``, and a ``style`` with ``url()``,
    ``expression()`` or a script scheme. Every value is escaped, quotes included, even a ``Markup``
    one. SVG shapes and ``br``/``hr`` without content are written self-closed.
    """
    if not _NAME.match(tag):
        raise ValueError(f"not a tag name: {tag!r}")
    parts = ["<", tag]
    for key, value in attributes.items():
        if value is None or value is False:
            continue
        name = _attribute_name(key)
        parts.append(" ")
        parts.append(name)
        if value is not True:
            # Always escaped, quotes included, whatever the value's type: a Markup value (markup
            # meant for an element's content) would otherwise close the attribute.
            text = _checked_value(
                tag, name, visible_marks(mask(str.__str__(value) if isinstance(value, str) else str(value)))
            )
            parts.append('="')
            parts.append(_html.escape(text, quote=True))
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
