"""The one stylesheet of every view, its colours as CSS custom properties.

Each colour is a ``--nba-<name>`` property that follows JupyterLab's theme variable where there is
one (light and dark themes alike), with a light fallback for pages without JupyterLab's CSS
(nbconvert exports, GitHub). :data:`PALETTE` is the only place colours are written; SVG shapes also
carry the fallback as a presentation attribute (:func:`fallback`), which the stylesheet overrides,
so a page that drops ``<style>`` still draws them.
"""

from __future__ import annotations

from .markup import Markup

__all__ = ["PALETTE", "STYLE", "STYLESHEET", "fallback"]

PALETTE: dict[str, tuple[str, str]] = {
    # name: (JupyterLab theme variable it follows, or "" for a fixed colour; light fallback)
    "fg": ("--jp-ui-font-color1", "#1f2328"),
    "muted": ("--jp-ui-font-color2", "#57606a"),
    "surface": ("--jp-layout-color0", "#ffffff"),
    "raised": ("--jp-layout-color1", "#f6f8fa"),
    "chip": ("--jp-layout-color2", "#eaeef2"),
    "line": ("--jp-border-color1", "#8c959f"),
    "rule": ("--jp-border-color2", "#d0d7de"),
    "user": ("--jp-brand-color1", "#0969da"),
    "ok": ("--jp-success-color1", "#1a7f37"),
    "tool": ("--jp-warn-color1", "#bc4c00"),
    "error": ("--jp-error-color1", "#cf222e"),
    "handoff": ("--jp-info-color1", "#0e7490"),
    "memory": ("", "#8250df"),
    "thought": ("--jp-ui-font-color3", "#8c959f"),
    "event-bg": ("", "rgba(127,127,127,.06)"),
    "added-bg": ("", "rgba(46,160,67,.22)"),
    "changed-bg": ("", "rgba(212,167,44,.28)"),
    "visited-bg": ("", "rgba(46,160,67,.18)"),
    "current-bg": ("", "rgba(255,193,7,.45)"),
    "bar-llm": ("", "#4c78a8"),
    "bar-tool": ("", "#59a14f"),
    "bar-error": ("", "#e15759"),
    "bar-text": ("", "#ffffff"),
}


def fallback(name: str) -> str:
    """The light colour of ``--nba-<name>``: for SVG presentation attributes under the stylesheet."""
    return PALETTE[name][1]


def _properties() -> str:
    declarations = (
        f"--nba-{name}:var({variable},{light})" if variable else f"--nba-{name}:{light}"
        for name, (variable, light) in PALETTE.items()
    )
    return ";".join(declarations)


_ROOTS = ".nba-view,.nba-stepper,.nba-trace,.nbagent-timeline"

STYLESHEET = (
    _ROOTS
    + "{"
    + _properties()
    + ";color:var(--nba-fg)}"
    + """
.nba-view,.nba-stepper,.nba-trace{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:13px;
  line-height:1.45}
.nba-event{margin:4px 0;padding:6px 8px;border-radius:6px;border-left:4px solid var(--nba-rule);
  background:var(--nba-event-bg)}
.nba-event pre{white-space:pre-wrap;word-break:break-word;margin:2px 0;font-size:12px;color:var(--nba-fg)}
.nba-user{border-left-color:var(--nba-user)}
.nba-text,.nba-final{border-left-color:var(--nba-ok)}
.nba-stream{display:block !important}
.nba-stream .widget-html,.nba-stream .widget-html>.widget-html-content{display:inline;margin:0;height:auto;
  line-height:1.45}
.nba-stream-text{white-space:pre-wrap;word-break:break-word;font-family:var(--jp-code-font-family,monospace);
  font-size:12px}
.nba-thought{border-left-color:var(--nba-thought)}
.nba-memory{border-left-color:var(--nba-memory)}
.nba-tool-group{border-left-color:var(--nba-tool);display:flex;flex-wrap:wrap;gap:6px}
.nba-tool-card{border:1px solid var(--nba-rule);border-left:4px solid var(--nba-tool);min-width:220px;flex:1 1 260px}
.nba-tool-card[data-state=error],.nba-tool-card[data-state=cancelled]{border-left-color:var(--nba-error)}
.nba-tool-card[data-state=ok]{border-left-color:var(--nba-ok)}
.nba-handoff{border-left-color:var(--nba-handoff);font-weight:600}
.nba-error{border-left-color:var(--nba-error)}
.nba-llm-call[data-state=error]{border-left-color:var(--nba-error)}
.nba-step{display:inline-block;font-size:10px;font-weight:600;padding:0 5px;margin-right:6px;border-radius:8px;
  background:var(--nba-chip);color:var(--nba-fg)}
.nba-label{font-weight:600;margin-right:6px}
.nba-muted{color:var(--nba-muted);font-size:11px}
.nba-footer{font-size:12px;color:var(--nba-muted)}
.nba-footer span{margin-right:14px}
.nba-table{border-collapse:collapse}
.nba-table td,.nba-table th{border:1px solid var(--nba-rule);padding:2px 6px;text-align:left}
.nba-pipeline{max-width:100%;height:auto}
.nba-node rect{fill:var(--nba-raised);stroke:var(--nba-line);stroke-width:1.2}
.nba-node text{font-size:11px;fill:var(--nba-fg);text-anchor:middle}
.nba-node text.nba-node-step{font-weight:700;font-size:10px;fill:var(--nba-muted)}
.nba-node[data-state=visited] rect{fill:var(--nba-visited-bg);stroke:var(--nba-ok)}
.nba-node[data-state=upcoming] rect{stroke:var(--nba-tool);stroke-width:2;stroke-dasharray:5 3}
.nba-node[data-state=current] rect{fill:var(--nba-current-bg);stroke:var(--nba-tool);stroke-width:3}
.nba-node[data-state=unused],.nba-edge-group[data-state=unused],.nba-edge-label[data-state=unused]{opacity:.35}
.nba-end rect{fill:var(--nba-surface);stroke:var(--nba-handoff);stroke-dasharray:3 2}
.nba-end text{font-size:11px;fill:var(--nba-fg);text-anchor:middle}
.nba-edge{fill:none;stroke:var(--nba-line);stroke-width:1.3}
.nba-edge-group[data-state=taken] .nba-edge{stroke:var(--nba-ok);stroke-width:2}
.nba-arrow path{fill:var(--nba-line)}
.nba-edge-label{font-size:10px;fill:var(--nba-muted)}
.nba-stepper-head{font-size:15px;font-weight:600;margin:6px 0 2px}
.nba-stepper-head code{font-size:13px;background:var(--nba-chip);color:var(--nba-fg);padding:0 4px;border-radius:4px}
.nba-stepper-explanation{margin:2px 0 8px;max-width:60em}
.nba-stepper-next{color:var(--nba-muted);font-size:12px;margin:4px 0}
.nba-stepper h4{margin:10px 0 4px;font-size:13px}
.nba-ctx-row[data-change=added] td{background:var(--nba-added-bg)}
.nba-ctx-row[data-change=changed] td{background:var(--nba-changed-bg)}
.nba-stepper .nba-table pre{margin:0;white-space:pre-wrap;word-break:break-word;font-size:12px}
.nbagent-timeline{font:12px var(--jp-ui-font-family,sans-serif)}
.nba-timeline-title{margin:4px 0}
.nba-lane{fill:var(--nba-chip)}
.nba-lane-name,.nba-tick-label{fill:var(--nba-fg)}
.nba-axis{stroke:var(--nba-fg)}
.nba-bar{stroke:var(--nba-fg)}
.nba-bar-llm{fill:var(--nba-bar-llm)}.nba-bar-tool{fill:var(--nba-bar-tool)}.nba-bar-error{fill:var(--nba-bar-error)}
.nba-bar-label{fill:var(--nba-bar-text)}
.nba-trace-summary th{text-align:left}
"""
)
"""Every rule of every view (live view, stepper and its diagram, context tables, trace summary and timeline)."""

STYLE = Markup("<style>") + Markup(STYLESHEET) + Markup("</style>")
"""The stylesheet as a ``<style>`` element, for a view's HTML."""
