"""A prototype: an ``AgentRunView`` served as one anywidget (issue 33 point 7), for measurement only.

``ViewMirror(view)`` is an ``anywidget.AnyWidget`` that shows an existing view's widget tree: it
watches every widget of the view (HTML values, Box children, CSS classes, the Stop button) and sends
each change as one custom message holding only that widget's new value, the same granularity as
ipywidgets' own updates. Its ES module keeps one DOM element per widget (an HTML widget's element
gets the value as ``innerHTML``, as ipywidgets' HTML view does; a box orders its children); it draws
nothing itself, so the one renderer (``nbagent.render``) still makes every piece of HTML. A click on
the mirrored Stop button comes back as a custom message and clicks the view's button.

The view's own ipywidgets models are closed as the mirror finds them (their traits and observers go
on; only their comms go): a frontend then gets each update once, through the mirror.

Not shipped in ``src``: ``bench/anywidget_probe/probe.py`` measures it (see its docstring).
"""

from __future__ import annotations

import time
from typing import Any

import anywidget
import ipywidgets as widgets
import traitlets

ESM = r"""
function build(nodes, id, els) {
  const node = nodes[id];
  if (!node) return null;
  let el = els[id];
  if (!el) {
    if (node.kind === 'button') {
      el = document.createElement('button');
      el.addEventListener('click', () => el._send({type: 'click', id}));
    } else {
      el = document.createElement('div');
    }
    els[id] = el;
  }
  return el;
}

function apply(nodes, els, id, send) {
  const node = nodes[id];
  const el = build(nodes, id, els);
  if (!el) return;
  el._send = send;
  const box = 'widget-container widget-box';
  const base = {html: 'widget-html', box, vbox: box + ' widget-vbox',
    hbox: box + ' widget-hbox', button: 'jupyter-button widget-button'}[node.kind] || '';
  el.className = base + ' ' + node.classes.join(' ');
  if (node.kind === 'html') {
    let inner = el.firstChild;
    if (!inner) {
      inner = document.createElement('div'); inner.className = 'widget-html-content'; el.appendChild(inner);
    }
    if (inner._value !== node.value) { inner.innerHTML = node.value; inner._value = node.value; }
  } else if (node.kind === 'button') {
    el.textContent = node.description;
    el.disabled = node.disabled;
  } else if (node.children) {
    const kids = node.children.map(c => { apply(nodes, els, c, send); return els[c]; }).filter(Boolean);
    kids.forEach((kid, i) => { if (el.children[i] !== kid) el.insertBefore(kid, el.children[i] || null); });
    while (el.children.length > kids.length) el.removeChild(el.lastChild);
  }
}

// One store of nodes per model, kept from the model's creation (initialize), so the custom messages
// that come before a view renders are not lost; each view draws from it and follows it.
const stores = new WeakMap();

function store(model) {
  let s = stores.get(model);
  if (!s) {
    const tree = model.get('tree') || {nodes: {}, root: null};
    s = {nodes: Object.assign({}, tree.nodes), root: tree.root, views: new Set()};
    stores.set(model, s);
    model.on('msg:custom', (msg) => {
      if (msg.type !== 'snapshot' && msg.type !== 'nodes') return;
      Object.assign(s.nodes, msg.nodes);
      if (msg.root) s.root = msg.root;
      for (const view of s.views) view(msg);
    });
  }
  return s;
}

export default {
  initialize({ model }) { store(model); },
  render({ model, el }) {
    const s = store(model);
    const els = {};
    const send = (content) => model.send(content);
    el.classList.add('nbaw-root');
    const draw = (ids) => {
      if (s.root === null) return;
      for (const id of ids) apply(s.nodes, els, id, send);
      if (el.firstChild !== els[s.root]) { el.textContent = ''; el.appendChild(els[s.root]); }
      window.__nbawUpdates = (window.__nbawUpdates || 0) + 1;
    };
    const view = (msg) => draw(msg.type === 'snapshot' ? [s.root] : Object.keys(msg.nodes));
    s.views.add(view);
    draw([s.root]);
    model.send({type: 'ready'});
    return () => s.views.delete(view);
  }
};
"""

CSS = """
.nbaw-root .widget-box{display:flex;box-sizing:border-box;margin:0}
.nbaw-root .widget-vbox{flex-direction:column}
.nbaw-root .widget-hbox{flex-direction:row;align-items:baseline}
"""

_WATCHED = ("value", "children", "_dom_classes", "disabled", "description")


class ViewMirror(anywidget.AnyWidget):  # type: ignore[misc]
    """Mirror an ipywidgets tree (an ``AgentRunView``) into one anywidget model."""

    _esm = traitlets.Unicode(ESM).tag(sync=True)
    _css = traitlets.Unicode(CSS).tag(sync=True)
    tree = traitlets.Dict().tag(sync=True)
    """The tree when the mirror was made (its first state): a frontend draws it before any message."""

    def __init__(self, root: widgets.Widget, *, close_models: bool = True) -> None:
        super().__init__()
        self.root = root
        self.close_models = close_models
        self._ids: dict[int, str] = {}
        self._widgets: dict[str, widgets.Widget] = {}
        self.sent = 0
        self.sent_bytes = 0
        self.send_s = 0.0
        self._watch(root)
        self.tree = self.snapshot()
        self.on_msg(self._on_msg)

    def _id(self, widget: widgets.Widget) -> str:
        return self._ids[id(widget)]

    def _watch(self, widget: widgets.Widget) -> None:
        if id(widget) in self._ids:
            return
        key = f"w{len(self._ids)}"
        self._ids[id(widget)] = key
        self._widgets[key] = widget
        for child in getattr(widget, "children", ()):
            self._watch(child)
        names = [name for name in _WATCHED if widget.has_trait(name)]
        widget.observe(lambda change, w=widget: self._changed(w), names=names)
        if self.close_models and widget.comm is not None:
            widget.close()

    def _node(self, widget: widgets.Widget) -> dict[str, Any]:
        classes = list(widget._dom_classes)  # noqa: SLF001 ipywidgets' CSS classes trait (no public reader)
        if isinstance(widget, widgets.HTML):
            return {"kind": "html", "classes": classes, "value": str(widget.value)}
        if isinstance(widget, widgets.Button):
            return {
                "kind": "button",
                "classes": classes,
                "description": str(widget.description),
                "disabled": widget.disabled,
            }
        kind = "vbox" if isinstance(widget, widgets.VBox) else "hbox" if isinstance(widget, widgets.HBox) else "box"
        return {"kind": kind, "classes": classes, "children": [self._id(child) for child in widget.children]}

    def _changed(self, widget: widgets.Widget) -> None:
        start = time.perf_counter()
        nodes: dict[str, Any] = {}
        for child in getattr(widget, "children", ()):
            if id(child) not in self._ids:
                self._watch(child)
                self._collect(child, nodes)
        nodes[self._id(widget)] = self._node(widget)
        self._emit({"type": "nodes", "nodes": nodes})
        self.send_s += time.perf_counter() - start

    def _collect(self, widget: widgets.Widget, nodes: dict[str, Any]) -> None:
        nodes[self._id(widget)] = self._node(widget)
        for child in getattr(widget, "children", ()):
            self._collect(child, nodes)

    def snapshot(self) -> dict[str, Any]:
        nodes: dict[str, Any] = {}
        self._collect(self.root, nodes)
        return {"type": "snapshot", "root": self._id(self.root), "nodes": nodes}

    def _emit(self, content: dict[str, Any]) -> None:
        self.sent += 1
        self.sent_bytes += sum(len(str(v.get("value", ""))) for v in content["nodes"].values())
        self.send(content)

    def _on_msg(self, _: Any, content: dict[str, Any], buffers: Any) -> None:
        if content.get("type") == "ready":
            self._emit(self.snapshot())
        elif content.get("type") == "click":
            button = self._widgets.get(str(content.get("id")))
            if isinstance(button, widgets.Button) and not button.disabled:
                button.click()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The widget, and the view's static copy for a frontend without it (as ``AgentRunView`` does)."""
        data = super()._repr_mimebundle_(**kwargs)
        static = getattr(self.root, "static_bundle", None)
        if static is not None:
            if isinstance(data, tuple):
                data[0].update(static())
            elif data is not None:
                data.update(static())
        return data
