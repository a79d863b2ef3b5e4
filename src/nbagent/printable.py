"""One rule for untrusted text that reaches a terminal or a view: controls are shown, never obeyed.

Text from a model, a tool, a server, a task or a loaded file may hold what a terminal obeys: ESC
sequences (``ESC[2J`` clears the screen, OSC 52 writes the clipboard, OSC 8 forges a link), the 8-bit
CSI ``U+009B``, a bare carriage return (overwrites the line), and marks that change what text reads as
without showing themselves: bidi overrides and isolates (``read\\u202etxt.exe`` reads ``readexe.txt``)
and zero-width characters. :func:`printable` shows every one of them as visible text: C0 and C1
controls and DEL as ``\\x1b``-style escapes (a bare CR as ``\\r``), the marks as ``<U+202E>``. Newlines,
tabs and CRLF line ends stay, so multi-line text keeps its lines. It is idempotent: its output holds
nothing it would change.

:func:`visible_marks` applies the marks' half of the rule alone: the HTML views escape markup and let
a browser ignore controls, but a browser obeys bidi marks, so every text the one escaping path
(:func:`nbagent.render.escape`) writes goes through it. A zero-width joiner between two pictographs
(an emoji sequence such as a family) is part of the emoji and stays.

The console (:class:`nbagent.render.textlog.TextLog`), ``show()``/``start()`` outside a notebook,
``python -m nbagent demo``, the renderer's :func:`~nbagent.render.to_text` and the message of every
:class:`~nbagent.models.ModelError` (which carries a server's words) use it.
"""

from __future__ import annotations

import re

__all__ = ["MARKS", "printable", "visible_marks"]

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_ZERO_WIDTH = "\u180e\u200b\u200c\u2060-\u2064\ufeff\U000e0000-\U000e007f"  # and the joiner, U+200D
MARKS = f"{_BIDI}{_ZERO_WIDTH}\u200d"
"""The invisible marks made visible (a regex class body): bidi controls (ALM, LRM, RLM, the embeddings,
overrides and isolates), zero-width spaces and joiners, the word joiner and invisible operators, the
byte order mark inside text, and the tag characters (invisible text a model may be fed)."""

_PICTOGRAPH = (  # what an emoji ZWJ sequence joins (Unicode's emoji blocks, and the variation selector U+FE0F)
    "\u00a9\u00ae\u203c\u2049\u2122\u2139\u2194-\u21aa\u231a-\u23ff\u24c2\u25aa-\u27bf\u2934\u2935"
    "\u2b05-\u2b55\u3030\u303d\u3297\u3299\U0001f000-\U0001faff\ufe0f"
)
_MARK_PATTERN = f"[{_BIDI}{_ZERO_WIDTH}]|(?<![{_PICTOGRAPH}])\u200d|\u200d(?![{_PICTOGRAPH}])"
_CONTROL_PATTERN = "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)"
_MARK = re.compile(_MARK_PATTERN)
_CONTROL = re.compile(_CONTROL_PATTERN)
_CONTROL_OR_MARK = re.compile(f"{_CONTROL_PATTERN}|{_MARK_PATTERN}")


def _shown(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\r":
        return "\\r"
    code = ord(char)
    return f"\\x{code:02x}" if code < 0xA0 else f"<U+{code:04X}>"


def printable(text: str) -> str:
    """``text`` safe for a terminal: its controls as escapes (``\\x1b``, ``\\r`` for a bare CR, ``\\x9b``),
    its bidi and zero-width marks as ``<U+202E>``; newlines, tabs and CRLF stay."""
    return (_CONTROL if text.isascii() else _CONTROL_OR_MARK).sub(_shown, text)


def visible_marks(text: str) -> str:
    """``text`` with its bidi and zero-width marks shown as ``<U+202E>`` (controls left as they are)."""
    if text.isascii():
        return text
    return _MARK.sub(_shown, text)
