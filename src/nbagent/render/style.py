"""The one stylesheet of every view, its colours as CSS custom properties.

Each colour is a ``--nba-<name>`` property that follows JupyterLab's theme variable where there is
one (light and dark themes alike), with a light fallback for pages without JupyterLab's CSS
(nbconvert exports, GitHub). :data:`PALETTE` is the only place colours are written; :data:`MIXES`
derives a few from two of them (muted text is the text colour mixed into the page's, so it keeps a
contrast of at least 4.5:1 on every background of the views in both themes). SVG shapes also carry
the fallback as a presentation attribute (:func:`fallback`), which the stylesheet overrides, so a
page that drops ``<style>`` still draws them.

Fixed colours (no theme variable) are the ones drawn under fixed text (white on the timeline's bars
and on the buttons) or translucent tints, which read on light and dark pages alike.
"""

from __future__ import annotations

from .markup import Markup

__all__ = ["MIXES", "PALETTE", "STATE_COLOURS", "STYLE", "STYLESHEET", "SVG_STYLESHEET", "fallback"]

PALETTE: dict[str, tuple[str, str]] = {
    # name: (JupyterLab theme variable it follows, or "" for a fixed colour; light fallback)
    "fg": ("--jp-ui-font-color1", "#1f2328"),
    "surface": ("--jp-layout-color0", "#ffffff"),
    "raised": ("--jp-layout-color1", "#f6f8fa"),
    "chip": ("--jp-layout-color2", "#eaeef2"),
    "line": ("--jp-border-color1", "#8c959f"),
    "rule": ("--jp-border-color2", "#d0d7de"),
    "link": ("--jp-content-link-color", "#0969da"),
    "user": ("--jp-brand-color1", "#0969da"),
    "ok": ("--jp-success-color1", "#1a7f37"),
    "tool": ("--jp-warn-color1", "#bc4c00"),
    "error": ("--jp-error-color1", "#cf222e"),
    "handoff": ("--jp-info-color1", "#0e7490"),
    "memory": ("", "#8250df"),
    "interrupted": ("", "#8250df"),
    "thought": ("--jp-ui-font-color3", "#8c959f"),
    "event-bg": ("", "rgba(127,127,127,.06)"),
    "tint": ("", "rgba(127,127,127,.2)"),
    "tint-rule": ("", "rgba(127,127,127,.45)"),
    "added-bg": ("", "rgba(46,160,67,.22)"),
    "changed-bg": ("", "rgba(212,167,44,.28)"),
    "visited-bg": ("", "rgba(46,160,67,.18)"),
    "current-bg": ("", "rgba(255,193,7,.25)"),
    "button-primary": ("", "#1565c0"),
    "button-danger": ("", "#c62828"),
    "button-text": ("", "#ffffff"),
    "bar-llm": ("", "#3f6a9a"),
    "bar-tool": ("", "#3d7a35"),
    "bar-error": ("", "#c0392b"),
    "bar-text": ("", "#ffffff"),
}

MIXES: dict[str, tuple[str, str, int]] = {
    # name: (colour, colour it is mixed into, percent of the first)
    "muted": ("fg", "surface", 72),
    "code-bg": ("chip", "surface", 50),
    "ok-text": ("ok", "fg", 75),  # the success colour as text: JupyterLab Light's alone is 4.1:1 on white
}


def _hex(colour: str) -> tuple[int, int, int]:
    digits = colour.lstrip("#")
    return int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16)


def fallback(name: str) -> str:
    """The light colour of ``--nba-<name>``: for SVG presentation attributes under the stylesheet."""
    if name in MIXES:
        first, second, percent = MIXES[name]
        mixed = (
            round(a * percent / 100 + b * (100 - percent) / 100)
            for a, b in zip(_hex(fallback(first)), _hex(fallback(second)))
        )
        return "#" + "".join(f"{part:02x}" for part in mixed)
    return PALETTE[name][1]


def _properties() -> str:
    declarations = [
        f"--nba-{name}:var({variable},{light})" if variable else f"--nba-{name}:{light}"
        for name, (variable, light) in PALETTE.items()
    ]
    declarations += [
        f"--nba-{name}:color-mix(in srgb,var(--nba-{first}) {percent}%,var(--nba-{second}))"
        for name, (first, second, percent) in MIXES.items()
    ]
    return ";".join(declarations)


_ROOTS = ".nba-view,.nba-stepper,.nba-trace,.nbagent-timeline"

# A view's state (its root's nba-state-<status> class, a status chip's data-status) sets --nba-state:
# the colour of the view's left border and of the chip's.
STATE_COLOURS = {
    "idle": "rule",
    "running": "user",
    "ok": "ok",
    "error": "error",
    "cancelled": "tool",
    "interrupted": "interrupted",
    "tool_error": "error",  # an explorer row: the run ended ok, a tool call of it gave an error
}
_STATE_RULES = "".join(
    f".nba-state-{state},[data-status={state}]{{--nba-state:var(--nba-{colour})}}"
    for state, colour in STATE_COLOURS.items()
)

STYLESHEET = (
    _ROOTS
    + "{"
    + _properties()
    + ";color:var(--nba-fg)}"
    + _STATE_RULES
    + """
.nba-view,.nba-stepper,.nba-trace{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:13px;
  line-height:1.45}
.nba-view .widget-html,.nba-stepper .widget-html{height:auto;margin:0}
.nba-view .widget-html>.widget-html-content,.nba-stepper .widget-html>.widget-html-content{line-height:1.45;
  font-size:13px;height:auto;align-self:auto;min-width:0;max-width:100%}
.nba-view a,.nba-stepper a,.nba-trace a{color:var(--nba-link)}
.nba-view{border-left:3px solid var(--nba-state,var(--nba-rule));padding-left:8px}
.nba-header{display:flex;flex-wrap:wrap;align-items:center;gap:4px 12px;margin:0 0 4px}
.nba-header>*{flex:0 0 auto}
.nba-title{font-size:14px;margin-right:2px}
.nba-status-text{display:inline-block;padding:0 8px;border-radius:10px;line-height:1.6;
  border:1px solid var(--nba-state,var(--nba-rule));border-left-width:6px}
.nba-event{margin:4px 0;padding:6px 8px;border-radius:6px;border-left:4px solid var(--nba-rule);
  background:var(--nba-event-bg);overflow-wrap:anywhere}
.nba-event pre{white-space:pre-wrap;word-break:break-word;margin:2px 0;font-size:12px;color:var(--nba-fg);
  background:none;border:0;padding:0;line-height:1.4}
.nba-event details>summary{cursor:pointer}
.nba-user{border-left-color:var(--nba-user)}
.nba-image{display:block;max-width:100%;max-height:24em;margin:.3em 0}
.nba-text,.nba-final{border-left-color:var(--nba-ok)}
.nba-stream{display:block !important}
.nba-stream-head{display:flex;flex-wrap:wrap;align-items:center;gap:2px 8px}
.nba-scroll{display:flex !important;flex-direction:column-reverse !important;max-height:16em;overflow-y:auto;
  resize:vertical}
.nba-scroll>*{flex:0 0 auto}
.nba-stream:has(.nba-expand-toggle:checked) .nba-scroll,
.nba-final:has(.nba-expand-toggle:checked) .nba-markdown{max-height:none}
.nba-stream-body{display:block !important}
.nba-stream-body .widget-html,.nba-stream-body .widget-html>.widget-html-content{display:inline !important}
.nba-stream-text{white-space:pre-wrap;word-break:break-word;font-family:var(--jp-code-font-family,monospace);
  font-size:12px}
.nba-expand{font-size:11px;cursor:pointer;user-select:none;margin-left:auto}
.nba-expand input{margin:0 3px 0 0;vertical-align:middle}
.nba-discarded{border-left-style:dashed;border-left-color:var(--nba-line)}
.nba-discarded .nba-stream-text{text-decoration:line-through;text-decoration-color:var(--nba-line)}
.nba-discarded-note{font-style:italic}
.nba-thought{border-left-color:var(--nba-thought)}
.nba-memory{border-left-color:var(--nba-memory)}
.nba-tool-group{border-left-color:var(--nba-tool);display:block !important}
.nba-tool-head{display:flex;flex-wrap:wrap;align-items:center;gap:2px 8px;margin-bottom:4px}
.nba-tool-cards{display:flex !important;flex-flow:row wrap !important;gap:6px;align-items:flex-start}
.nba-tool-cards>*{flex:1 1 260px !important;min-width:220px;max-width:100%;margin:0 !important}
.nba-tool-card{border:1px solid var(--nba-rule);border-left:4px solid var(--nba-tool);margin:0;min-width:0}
.nba-tool-card[data-state=error],.nba-tool-card[data-state=cancelled]{border-left-color:var(--nba-error)}
.nba-tool-card[data-state=ok]{border-left-color:var(--nba-ok)}
.nba-handoff{border-left-color:var(--nba-handoff);font-weight:600}
.nba-error{border-left-color:var(--nba-error)}
.nba-llm-call[data-state=error]{border-left-color:var(--nba-error)}
.nba-llm-call[data-state=cancelled]{border-left-color:var(--nba-tool)}
.nba-llm-call[data-state=paused]{border-left-color:var(--nba-line);border-left-style:dashed}
.nba-llm-call[data-state=streaming],.nba-llm-call[data-state=running]{border-left-color:var(--nba-user)}
.nba-step{display:inline-block;align-self:flex-start;font-size:10px;font-weight:600;line-height:16px;
  height:16px;padding:0 5px;margin-right:6px;border-radius:8px;background:var(--nba-chip);color:var(--nba-fg);
  white-space:nowrap;vertical-align:middle}
.nba-label{font-weight:600;margin-right:6px}
.nba-muted{color:var(--nba-muted);font-size:11px}
.nba-footer{font-size:12px;color:var(--nba-muted);margin-top:4px}
.nba-footer span{margin-right:14px}
.nba-footer .nba-status{color:var(--nba-fg)}
.nba-table{border-collapse:collapse;margin:4px 0;table-layout:auto;font-size:12px;margin-left:0;margin-right:0}
/* :is() adds a class's weight: above JupyterLab's right-aligned cells of HTML outputs */
:is(.nba-view,.nba-stepper,.nba-trace) .nba-table :is(td,th){border:1px solid var(--nba-rule);padding:2px 6px;
  text-align:left;vertical-align:top;color:var(--nba-fg);background:none;line-height:1.45}
:is(.nba-view,.nba-stepper,.nba-trace) .nba-table tr{background:none;text-align:left}
:is(.nba-view,.nba-stepper,.nba-trace) .nba-table th{background:var(--nba-raised)}
.nba-markdown{max-height:32em;overflow:auto}
.nba-markdown.nba-resizable{resize:vertical}
.nba-markdown>:first-child{margin-top:0}.nba-markdown>:last-child{margin-bottom:0}
.nba-markdown p,.nba-markdown ul,.nba-markdown ol,.nba-markdown blockquote,.nba-markdown table,
.nba-markdown pre{margin:4px 0}
.nba-markdown ul,.nba-markdown ol{padding-left:22px}
.nba-markdown h1,.nba-markdown h2,.nba-markdown h3,.nba-markdown h4,.nba-markdown h5,.nba-markdown h6{
  font-size:14px;margin:8px 0 4px;line-height:1.3;color:var(--nba-fg)}
.nba-markdown h1{font-size:17px}.nba-markdown h2{font-size:15px}
.nba-markdown blockquote{border-left:3px solid var(--nba-rule);padding-left:8px;color:var(--nba-fg)}
.nba-markdown table{border-collapse:collapse;table-layout:auto}
.nba-markdown table{margin-left:0;margin-right:0}
:is(.nba-view,.nba-stepper,.nba-trace) .nba-markdown :is(td,th){border:1px solid var(--nba-rule);padding:2px 8px;
  text-align:left;color:var(--nba-fg);background:none;line-height:1.45}
:is(.nba-view,.nba-stepper,.nba-trace) .nba-markdown tr{background:none;text-align:left}
:is(.nba-view,.nba-stepper,.nba-trace) .nba-markdown th{background:var(--nba-raised);font-weight:600}
:is(.nba-view,.nba-stepper,.nba-trace) .nba-markdown code{font-family:var(--jp-code-font-family,monospace);
  font-size:12px;background:var(--nba-chip);color:var(--nba-fg);padding:0 3px;border-radius:3px}
:is(.nba-view,.nba-stepper,.nba-trace) .nba-markdown pre{background:var(--nba-code-bg);
  border:1px solid var(--nba-rule);border-radius:4px;padding:6px 8px;overflow-x:auto;white-space:pre;word-break:normal}
:is(.nba-view,.nba-stepper,.nba-trace) .nba-markdown pre code{background:none;padding:0;font-size:12px}
.nba-view .jupyter-button.nba-stop:not(:disabled){background:var(--nba-button-danger);
  color:var(--nba-button-text)}
.nba-stepper .jupyter-button.mod-primary:not(:disabled){background:var(--nba-button-primary);
  color:var(--nba-button-text)}
.nba-diagram{overflow-x:auto;max-width:100%;min-width:0;flex:1 1 auto}
.nba-svg-live{display:block !important;overflow-x:auto;max-width:100%;min-width:0}
.nba-svg-picture{display:none !important}
.nba-pipeline{width:100%;max-width:900px;min-width:825px;height:auto;display:block}
.nba-node rect{fill:var(--nba-raised);stroke:var(--nba-line);stroke-width:1.2}
.nba-node text{font-size:12px;fill:var(--nba-fg);text-anchor:middle}
.nba-node text.nba-node-step{font-weight:700;font-size:12px;fill:var(--nba-muted)}
.nba-node[data-state=visited] rect{fill:var(--nba-visited-bg);stroke:var(--nba-ok)}
.nba-node[data-state=upcoming] rect{stroke:var(--nba-tool);stroke-width:2;stroke-dasharray:5 3}
.nba-node[data-state=current] rect{fill:var(--nba-current-bg);stroke:var(--nba-tool);stroke-width:3}
.nba-node[data-state=current] text{fill:var(--nba-fg);font-weight:700}
.nba-node[data-state=unused] rect{fill:var(--nba-surface);stroke:var(--nba-rule);stroke-dasharray:2 3}
.nba-node[data-state=unused] text{fill:var(--nba-muted)}
.nba-edge-group[data-state=unused] .nba-edge{stroke:var(--nba-line);stroke-dasharray:3 3}
.nba-edge-group[data-state=unused] .nba-arrowhead{fill:var(--nba-line)}
.nba-edge-label[data-state=unused]{fill:var(--nba-muted);font-style:italic}
.nba-end rect{fill:var(--nba-surface);stroke:var(--nba-handoff);stroke-dasharray:3 2}
.nba-end text{font-size:12px;fill:var(--nba-fg);text-anchor:middle}
.nba-edge{fill:none;stroke:var(--nba-line);stroke-width:1.3}
.nba-edge-group[data-state=taken] .nba-edge{stroke:var(--nba-ok);stroke-width:2}
.nba-arrowhead{fill:var(--nba-line);stroke:none}
.nba-edge-group[data-state=taken] .nba-arrowhead{fill:var(--nba-ok)}
.nba-edge-label{font-size:12px;fill:var(--nba-muted)}
.nba-stepper-head{font-size:15px;font-weight:600;margin:6px 0 2px}
.nba-stepper-head code{font-size:13px;background:var(--nba-chip);color:var(--nba-fg);padding:0 4px;border-radius:4px}
.nba-stepper-explanation{margin:2px 0 8px;max-width:60em}
.nba-stepper-next{color:var(--nba-muted);font-size:12px;margin:4px 0}
.nba-stepper h4{margin:10px 0 4px;font-size:13px;color:var(--nba-fg)}
.nba-stepper-bar{align-items:center;gap:4px;flex-wrap:wrap}
.nba-stepper-bar>.widget-html{align-self:center;margin-top:0;margin-bottom:0}
:is(.nba-view,.nba-stepper) .jupyter-button:disabled{background:var(--nba-chip);color:var(--nba-muted);opacity:.55;
  box-shadow:none;cursor:not-allowed}
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
.nba-compare tr[data-diverged=true]>td:first-child{border-left:4px solid var(--nba-error)}
.nba-compare .nba-table pre{margin:0;white-space:pre-wrap;word-break:break-word;font-size:12px}
.nba-intervention{border-left-color:var(--nba-handoff)}
.nba-batch-head{display:flex;flex-wrap:wrap;align-items:center;gap:4px 12px;margin:0 0 4px}
.nba-batch-bar{height:8px;max-width:40em;border-radius:4px;background:var(--nba-chip);overflow:hidden;margin:4px 0}
.nba-batch-fill{height:100%;background:var(--nba-state,var(--nba-user))}
.nba-batch-metrics{display:flex;flex-wrap:wrap;gap:2px 14px;font-size:12px;color:var(--nba-muted)}
.nba-batch-metrics b{color:var(--nba-fg);font-weight:600}
.nba-batch-errors caption{text-align:left;font-size:12px;color:var(--nba-muted)}
.nba-batch-errors td{max-width:40em;overflow-wrap:anywhere}
.nba-explorer-table tr.nba-x-selected td{background:var(--nba-tint)}
.nba-explorer-table th[data-column]{cursor:pointer;user-select:none}
.nba-explorer-table th[aria-sort=ascending]::after{content:" \\25B2"}
.nba-explorer-table th[aria-sort=descending]::after{content:" \\25BC"}
.nba-x-grid{outline:none}.nba-x-grid tr[data-run]{cursor:pointer}
.nba-x-grid:focus tr.nba-x-cursor{outline:2px solid var(--nba-link);outline-offset:-2px}
.nba-x-grid tr.nba-x-cursor{outline:1px dashed var(--nba-line);outline-offset:-1px}
.nba-x-grid:focus .nba-explorer{box-shadow:0 0 0 2px var(--nba-link)}
.nba-explorer-table td.nba-x-status{box-shadow:inset 4px 0 0 var(--nba-state,transparent);padding-left:8px}
.nba-explorer-table tr[data-status=error] td.nba-x-status{font-weight:600}
.nba-explorer-table td:is(.nba-x-task,.nba-x-error){max-width:30em;overflow-wrap:anywhere}
.nba-explorer-query{font-family:var(--jp-code-font-family,monospace);font-size:12px;white-space:pre-wrap;
  background:var(--nba-raised);color:var(--nba-fg);padding:4px 6px;margin:4px 0}
.nba-fork-walk{margin:8px 0 4px 16px;padding:4px 0 4px 10px;border-left:3px solid var(--nba-handoff)}
.nba-stepper .nba-give-call{width:16em}
.nba-stepper :is(.nba-give-result,.nba-give-answer){width:24em}
.nba-stepper .jupyter-button.nba-compare-parent{width:auto;max-width:none}
.nba-fork-title{font-weight:600;font-size:14px;margin:0 0 4px;color:var(--nba-fg)}
.nba-predict{margin:6px 0;padding:4px 0 4px 10px;border-left:3px solid var(--nba-user);color:var(--nba-fg)}
.nba-predict-title{font-weight:600;font-size:13px;margin:0 0 2px}
.nba-predict-question{margin:4px 0;color:var(--nba-fg)}
.nba-predict-verdict{margin:4px 0;color:var(--nba-fg)}
.nba-predict-verdict[data-verdict=right] .nba-predict-mark,.nba-predict-item[data-verdict=right]>.nba-predict-mark{
  color:var(--nba-ok-text);font-weight:600}
.nba-predict-verdict[data-verdict=wrong] .nba-predict-mark,.nba-predict-item[data-verdict=wrong]>.nba-predict-mark{
  color:var(--nba-error);font-weight:600}
.nba-predict-reason{color:var(--nba-muted);font-size:12px}
.nba-predict-log{margin:2px 0;padding-left:4px;list-style:none;font-size:12px}
.nba-predict-score{display:inline;font-weight:600}
.nba-predict-choices,.nba-what-if{flex-wrap:wrap;gap:4px}
:is(.nba-predict-choices,.nba-what-if) .jupyter-button{width:auto;max-width:none}
.nba-predict-choice:focus-visible{outline:2px solid var(--nba-link);outline-offset:1px}
.jp-CodeCell.jp-mod-outputsScrolled .jp-Cell-outputArea:has(:is(.nba-explorer-live,.nba-stepper-live)){
  max-height:none;overflow-y:visible}
.jp-OutputArea-child:has(.nba-static-copy):has(+.jp-OutputArea-child .nba-stepper-live):not(
  :has(+.jp-OutputArea-child .jupyter-widgets-disconnected)){display:none}
.jp-OutputArea-child:has(.nba-static-copy)+.jp-OutputArea-child:not(:has(>.jp-OutputArea-output[data-mime-type])):not(
  :has(.nba-stepper-live)),
.jp-OutputArea-child:has(.nba-static-copy)+.jp-OutputArea-child:has(.nba-stepper-live .jupyter-widgets-disconnected){
  display:none}
"""
)
"""Every rule of every view (live view, stepper and its diagram, context tables, trace summary and timeline).

A cell that shows an explorer or a stepper is never a scroll box: Notebook 7 makes a cell's outputs one
about 300 px tall (``jp-mod-outputsScrolled``) once they pass 100 lines, and the explorer's page of rows
or the stepper's panels then showed three rows at a time.

The last rules pair a stepper's static copy with its live widget (the output after it, which the
widget manager draws with no ``data-mime-type``): a connected live widget hides the copy; a
widget output that shows no live stepper gives way to the copy. In a reopened notebook the widget
manager either has no model for it ("Error displaying widget: model not found", no widget state
saved) or rebuilds it from the saved state with no kernel behind it (its widgets
``jupyter-widgets-disconnected``, dead buttons).
"""

STYLE = Markup("<style>") + Markup(STYLESHEET) + Markup("</style>")
"""The stylesheet as a ``<style>`` element, for a view's HTML."""

_SVG_CLASSES = (
    ".nba-node",
    ".nba-edge",
    ".nba-arrowhead",
    ".nba-end",
    ".nba-lane",
    ".nba-axis",
    ".nba-bar",
    ".nba-tick",
)
SVG_STYLESHEET = (
    "svg{"
    + ";".join(f"--nba-{name}:{fallback(name)}" for name in (*PALETTE, *MIXES))
    + ";font-family:system-ui,sans-serif}"
    + "".join(line for line in STYLESHEET.splitlines() if line.startswith(_SVG_CLASSES))
)
"""The rules of the loop diagram and the timeline with their light colours: the stylesheet of an SVG
shown as a picture (an ``<img>``), where neither the page's stylesheet nor its theme reaches."""
