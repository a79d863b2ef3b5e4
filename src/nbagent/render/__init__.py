"""One renderer for every view: run items to safe HTML and to terminal lines.

It sits above :mod:`nbagent.records` and below :mod:`nbagent.trace`: the live view and the stepper
widget (:mod:`nbagent.notebook`), the static copy of saved notebooks, the trace's summary and
timeline and ``python -m nbagent demo`` all draw with it.

=====================  ==================================================================
module                 what it holds
=====================  ==================================================================
``markup``             :class:`Markup` (HTML that is safe to show: ``+``, ``%``,
                       ``format`` and ``join`` escape every plain operand), :func:`escape`,
                       the element builder :func:`el` and :func:`concat`
``markdown``           :func:`markdown`: Markdown with raw HTML off, cleaned by nh3
``style``              :data:`STYLESHEET` / :data:`STYLE`: every view's CSS, colours as
                       ``--nba-*`` custom properties over JupyterLab's theme variables
``blocks``             the pieces views are made of: values with "show all", STEP badges,
                       event blocks, tool cards, footers
``dispatch``           :func:`to_html` and :func:`to_text`: one function per run item type
(``printable``)        :func:`printable` / :func:`visible_marks` (from :mod:`nbagent.printable`, a
                       layer below, as model errors use it too): terminal controls, bidi and
                       zero-width marks shown, never obeyed
``diagram``            :func:`pipeline`: the loop's SVG, drawn from ``records.MOVES``
``portable``           :func:`portable`: a static copy laid out by ``style`` attributes, its
                       SVGs also as pictures, so that a sanitizer (an untrusted notebook) keeps it
=====================  ==================================================================
"""

from ..printable import printable, visible_marks
from .blocks import (
    ANSWER_CHARS,
    MAX_CHARS,
    PREVIEW_CHARS,
    block,
    error_block,
    expand_toggle,
    footer,
    format_duration,
    label,
    muted,
    object_table,
    plural,
    pretty_arguments,
    step_badge,
    stream_head,
    stream_segment,
    streamed_chunks,
    tool_card,
    tool_group,
    tool_group_head,
    truncate,
    value,
)
from .diagram import edge_states, node_states, pipeline
from .dispatch import PLAIN, Options, heading, memory_skipped_line, short, to_html, to_text
from .markdown import markdown, sanitize
from .markup import EMPTY, Child, Markup, concat, el, escape
from .portable import picture, portable
from .style import MIXES, PALETTE, STYLE, STYLESHEET, fallback

__all__ = [
    "EMPTY",
    "ANSWER_CHARS",
    "MAX_CHARS",
    "MIXES",
    "PALETTE",
    "PLAIN",
    "PREVIEW_CHARS",
    "STYLE",
    "STYLESHEET",
    "Child",
    "Markup",
    "Options",
    "block",
    "concat",
    "edge_states",
    "el",
    "error_block",
    "escape",
    "expand_toggle",
    "fallback",
    "footer",
    "format_duration",
    "heading",
    "label",
    "markdown",
    "memory_skipped_line",
    "muted",
    "node_states",
    "object_table",
    "picture",
    "pipeline",
    "portable",
    "printable",
    "plural",
    "pretty_arguments",
    "sanitize",
    "short",
    "step_badge",
    "stream_head",
    "stream_segment",
    "streamed_chunks",
    "to_html",
    "to_text",
    "tool_card",
    "tool_group",
    "tool_group_head",
    "truncate",
    "value",
    "visible_marks",
]
