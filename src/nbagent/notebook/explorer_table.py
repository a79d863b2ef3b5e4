"""The run explorer's table in the browser: the page's rows, clicked or walked with the keyboard.

An ``anywidget`` model: the kernel sends the table's HTML (made by :func:`explorer.table_html`, every
value escaped by the one renderer) in ``html``; a few lines of front-end code draw it in a focusable
box that stays while the HTML changes (so the keyboard focus does too) and send back what the user
does as messages: ``{"event": "sort", "column"}`` (a header clicked), ``{"event": "open", "run",
"add"}`` (a row clicked, or Enter on the highlighted row; ``add``: with Shift, Ctrl or Cmd, to
compare) and ``{"event": "turn", "pages"}`` (Page Down / Page Up). Up and Down (Home, End) move the
highlighted row, ``cursor``, in the browser alone. The box handles its keys itself: they stop there
(``stopPropagation``, ``data-lm-suppress-shortcuts``), so JupyterLab's and Notebook 7's shortcuts
(Up/Down select cells, Enter edits one) do not take them while the table has the focus; no key
handler is installed on the page.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anywidget
import traitlets

__all__ = ["ExplorerTable"]

_ESM = r"""
function render({ model, el }) {
  const box = document.createElement('div');
  box.className = 'nba-x-grid';
  box.tabIndex = 0;
  box.setAttribute('role', 'region');
  box.setAttribute('aria-label', 'runs: Up and Down move, Enter opens, Shift+Enter adds to a comparison');
  box.setAttribute('data-lm-suppress-shortcuts', 'true');
  el.appendChild(box);
  const rows = () => [...box.querySelectorAll('tr[data-run]')];
  const mark = () => {
    const cursor = model.get('cursor');
    for (const row of rows()) {
      const on = row.dataset.run === cursor;
      row.classList.toggle('nba-x-cursor', on);
      if (on) row.setAttribute('aria-current', 'true'); else row.removeAttribute('aria-current');
    }
  };
  const draw = () => { box.innerHTML = model.get('html'); mark(); };
  const move = (row) => {
    if (!row) return;
    model.set('cursor', row.dataset.run);
    model.save_changes();
    mark();
    row.scrollIntoView({ block: 'nearest' });
  };
  const adding = (event) => event.shiftKey || event.ctrlKey || event.metaKey;
  const onKey = (event) => {
    const list = rows();
    const at = list.findIndex((row) => row.dataset.run === model.get('cursor'));
    let handled = true;
    switch (event.key) {
      case 'ArrowDown': move(list[Math.min(at + 1, list.length - 1)]); break;
      case 'ArrowUp': move(list[Math.max(at - 1, 0)]); break;
      case 'Home': move(list[0]); break;
      case 'End': move(list[list.length - 1]); break;
      case 'Enter':
        if (at >= 0) model.send({ event: 'open', run: list[at].dataset.run, add: adding(event) });
        break;
      case 'PageDown': model.send({ event: 'turn', pages: 1 }); break;
      case 'PageUp': model.send({ event: 'turn', pages: -1 }); break;
      default: handled = false;
    }
    if (handled) { event.preventDefault(); event.stopPropagation(); }
  };
  const onClick = (event) => {
    const head = event.target.closest('th[data-column]');
    if (head && box.contains(head)) { model.send({ event: 'sort', column: head.dataset.column }); return; }
    const row = event.target.closest('tr[data-run]');
    if (!row || !box.contains(row)) return;
    box.focus({ preventScroll: true });
    move(row);
    model.send({ event: 'open', run: row.dataset.run, add: adding(event) });
  };
  box.addEventListener('keydown', onKey);
  box.addEventListener('click', onClick);
  model.on('change:html', draw);
  model.on('change:cursor', mark);
  draw();
  return () => {
    model.off('change:html', draw);
    model.off('change:cursor', mark);
    box.removeEventListener('keydown', onKey);
    box.removeEventListener('click', onClick);
  };
}
export default { render };
"""


class ExplorerTable(anywidget.AnyWidget):
    """The table of a page of runs (``html``), its highlighted row (``cursor``, a run id or ``""``)."""

    _esm = _ESM
    html = traitlets.Unicode("").tag(sync=True)
    cursor = traitlets.Unicode("").tag(sync=True)

    def __init__(self, on_event: Callable[[dict[str, Any]], None]) -> None:
        super().__init__()
        self._on_event = on_event
        self.on_msg(self._received)

    def _received(self, _widget: object, content: object, _buffers: object) -> None:
        if isinstance(content, dict) and isinstance(content.get("event"), str):
            self._on_event(content)
