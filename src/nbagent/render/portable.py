"""Static copies that read well where a sanitizer cleans them: :func:`portable`.

An untrusted notebook (from a clone, an email, a download) is shown by JupyterLab and Notebook 7
through their HTML sanitizer: it drops ``<style>`` and ``<svg>`` (keeping the SVG's texts as run-on
words), every ``data-*`` attribute and any style value with ``var()``, and keeps ``class``, ``style``
declarations of plain values, and ``<img>`` with a ``data:`` URL. So a static copy carries:

* its layout in ``style`` attributes (:data:`INLINE`: spacing, flex rows, borders' widths), the same
  values as the stylesheet's; colours only as translucent tints, or as a light fallback followed by
  the themed ``var()`` (the sanitizer drops the second, a trusted page uses it), so a trusted page
  keeps its theme and an untrusted one inherits the page's text colour (contrast as the theme's);
* each SVG twice: inline in a box the stylesheet shows (``nba-svg-live``, hidden by its own
  ``style`` where the stylesheet is gone, with its texts), and as an ``<img>`` of a standalone SVG
  document (its own light colours and background) that the stylesheet hides (``nba-svg-picture``).

Only markup this package built goes through here (every text in it escaped by :func:`el`), so the
tags and attributes found by the patterns below are real ones.
"""

from __future__ import annotations

import html
import re
from urllib.parse import quote

from .markup import Markup, el
from .style import STATE_COLOURS, SVG_STYLESHEET, fallback

__all__ = ["INLINE", "picture", "portable"]

# A border's colour: the light fallback (kept by the sanitizer), then the theme's (used when trusted).
_KIND_COLOURS = {
    "nba-user": "user",
    "nba-text": "ok",
    "nba-final": "ok",
    "nba-thought": "thought",
    "nba-memory": "memory",
    "nba-tool-group": "tool",
    "nba-tool-card": "tool",
    "nba-handoff": "handoff",
    "nba-error": "error",
    "nba-discarded": "line",
    "nba-fork-walk": "handoff",
}
_STATE_COLOURS = {"error": "error", "cancelled": "tool", "ok": "ok", "streaming": "user", "running": "user"}

INLINE: dict[str, str] = {
    # class: its layout as declarations (as the stylesheet has them; no var() the sanitizer would drop alone)
    "nba-view": "border-left-width:3px;border-left-style:solid;padding-left:8px",
    "nba-header": "display:flex;flex-wrap:wrap;align-items:center;gap:4px 12px;margin:0 0 4px",
    "nba-title": "font-size:14px;margin-right:2px",
    "nba-status-text": "display:inline-block;padding:0 8px;border-radius:10px;border-style:solid;"
    "border-width:1px 1px 1px 6px",
    "nba-event": "display:block;margin:4px 0;padding:6px 8px;border-radius:6px;border-left-width:4px;"
    f"border-left-style:solid;background:{fallback('event-bg')}",
    "nba-step": "display:inline-block;font-size:10px;font-weight:600;line-height:16px;padding:0 5px;"
    f"margin-right:6px;border-radius:8px;background:{fallback('tint')};white-space:nowrap",
    "nba-label": "font-weight:600;margin-right:6px",
    "nba-muted": "font-size:11px",
    "nba-footer": "font-size:12px;margin-top:4px",
    "nba-metric": "margin-right:14px",
    "nba-tool-head": "display:flex;flex-wrap:wrap;align-items:center;gap:2px 8px;margin-bottom:4px",
    "nba-stream-head": "display:flex;flex-wrap:wrap;align-items:center;gap:2px 8px",
    "nba-tool-cards": "display:flex;flex-flow:row wrap;gap:6px;align-items:flex-start",
    "nba-tool-card": "border-style:solid;border-width:1px 1px 1px 4px;margin:0;flex:1 1 260px;min-width:220px;"
    "max-width:100%",
    "nba-value": "white-space:pre-wrap;word-break:break-word;margin:2px 0;font-size:12px",
    "nba-tool-args": "white-space:pre-wrap;word-break:break-word;margin:2px 0;font-size:12px",
    "nba-markdown": "max-height:32em;overflow:auto",
    "nba-table": "border-collapse:collapse;margin:4px 0;font-size:12px",
    "nba-stepper-head": "font-size:15px;font-weight:600;margin:6px 0 2px",
    "nba-stepper-next": "font-size:12px;margin:4px 0",
    "nba-stepper-explanation": "margin:2px 0 8px;max-width:60em",
    "nba-batch-head": "display:flex;flex-wrap:wrap;align-items:center;gap:4px 12px;margin:0 0 4px",
    "nba-batch-bar": f"height:8px;max-width:40em;border-radius:4px;background:{fallback('tint')};"
    "overflow:hidden;margin:4px 0",
    "nba-batch-metrics": "display:flex;flex-wrap:wrap;gap:2px 14px;font-size:12px",
    "nba-svg-picture": "overflow-x:auto;max-width:100%",
    "nba-fork-walk": "margin:8px 0 4px 16px;padding:4px 0 4px 10px;border-left-width:3px;border-left-style:solid",
    "nba-fork-title": "font-weight:600;font-size:14px;margin:0 0 4px",
}
"""The layout of each class, written into the ``style`` attribute of its elements in a static copy."""
_CELL = f"text-align:left;vertical-align:top;padding:2px 6px;border:1px solid {fallback('tint-rule')}"

_TAG = re.compile(r"<(?P<tag>[a-z][a-z0-9]*)(?P<attributes>(?:\s[^>]*?)?)(?P<end>/?>)")
_CLASS = re.compile(r'\sclass="([^"]*)"')
_STATE = re.compile(r'\sdata-state="([^"]*)"')
_SVG = re.compile(r"<svg\b.*?</svg>", re.DOTALL)
_SIZE = re.compile(r'<svg\b[^>]*?\swidth="([\d.]+)"[^>]*?\sheight="([\d.]+)"')
_LABEL = re.compile(r'<svg\b[^>]*?\saria-label="([^"]*)"')


def _style(tag: str, attributes: str) -> str:
    declarations: list[str] = []
    if tag in ("td", "th"):
        declarations.append(_CELL)
    found = _CLASS.search(attributes)
    classes = found.group(1).split() if found else []
    for name in classes:
        if name in INLINE:
            declarations.append(INLINE[name])
    colour = next((_KIND_COLOURS[name] for name in classes if name in _KIND_COLOURS), None)
    if "nba-view" in classes:  # the run's state: the colour of the view's left border
        colour = next((STATE_COLOURS[name[10:]] for name in classes if name[10:] in STATE_COLOURS), None)
    state = _STATE.search(attributes)
    if state is not None and state.group(1) in _STATE_COLOURS and {"nba-llm-call", "nba-tool-card"} & set(classes):
        colour = _STATE_COLOURS[state.group(1)]
    if colour is not None:
        declarations.append(f"border-left-color:{fallback(colour)};border-left-color:var(--nba-{colour})")
    return ";".join(declarations)


def _inline(match: re.Match[str]) -> str:
    tag, attributes, end = match.group("tag", "attributes", "end")
    if ' style="' in attributes:
        return match.group(0)
    style = _style(tag, attributes)
    return f'<{tag}{attributes} style="{style}"{end}' if style else match.group(0)


def picture(svg: Markup) -> Markup:
    """An SVG twice: inline for pages with the stylesheet, and as an ``<img>`` for pages without it.

    The picture is a standalone SVG document: the diagram's and timeline's rules (:data:`SVG_STYLESHEET`,
    light colours) and a background of its own, so it reads the same on a light or dark page.
    """
    head_end = svg.index(">") + 1
    document = (
        svg[:head_end]
        + "<style>"
        + SVG_STYLESHEET
        + "</style>"
        + f'<rect width="100%" height="100%" fill="{fallback("surface")}"/>'
        + svg[head_end:]
    )
    if 'xmlns="' not in svg[:head_end]:
        document = document.replace("<svg", '<svg xmlns="http://www.w3.org/2000/svg"', 1)
    size = _SIZE.match(svg)
    label = _LABEL.match(svg)
    image = el(
        "img",
        src="data:image/svg+xml;charset=utf-8," + quote(document, safe=" /:=;,'()-._"),
        alt=html.unescape(label.group(1)) if label else "diagram",
        width=size.group(1) if size else None,
        height=size.group(2) if size else None,
        class_="nba-svg-img",
        style="max-width:none;display:block",
    )
    return el("div", svg, class_="nba-svg-live", style="display:none") + el("div", image, class_="nba-svg-picture")


def portable(markup: Markup) -> Markup:
    """``markup`` (a static copy this package built) laid out by ``style`` attributes, its SVGs as pictures too."""
    with_pictures = _SVG.sub(lambda found: picture(Markup(found.group(0))), markup)
    return Markup(_TAG.sub(_inline, with_pictures))
