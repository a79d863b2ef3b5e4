"""Markdown answers as sanitised HTML: markdown-it with raw HTML off, then an nh3 allow-list.

The result is :class:`~nbagent.render.markup.Markup`: the only markup this package takes from
outside its own code, and only once nh3 has cleaned it (no scripts, no event handlers, no styles
but ``text-align`` in table cells, links only to http, https and mailto).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from ..printable import visible_marks
from ..redact import mask
from .markup import Markup

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = ["markdown", "sanitize"]

_ALLOWED_TAGS = {
    "a", "p", "br", "hr", "em", "strong", "b", "i", "s", "del", "code", "pre", "blockquote",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6",
    "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
_ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"style"}, "td": {"style"}}
_URL_SCHEMES = {"http", "https", "mailto"}


@cache
def _parser() -> MarkdownIt:
    """The Markdown parser, made on first use: markdown-it and nh3 load when an answer is first
    shown, not with ``import nbagent`` (about 40 ms)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(["table", "strikethrough"])


def sanitize(fragment: str) -> Markup:
    """An HTML fragment cleaned with the allow-list: no scripts, handlers, styles or foreign URLs."""
    import nh3

    return Markup(
        nh3.clean(
            fragment,
            tags=_ALLOWED_TAGS,
            attributes=_ALLOWED_ATTRIBUTES,
            url_schemes=_URL_SCHEMES,
            link_rel="noopener noreferrer nofollow",
            filter_style_properties={"text-align"},
        )
    )


def markdown(text: str) -> Markup:
    """Markdown rendered to HTML (raw HTML in the source stays text, secrets masked, bidi and zero-width
    marks made visible), then sanitised."""
    return sanitize(_parser().render(visible_marks(mask(text))))
