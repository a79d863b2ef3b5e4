"""What the browser tests of issue 16 measure in the page, as JavaScript run by ``page.evaluate``.

``CONTRAST_JS([[name, selector], ...])``: for every view matched by a selector, the WCAG contrast
of every text it shows: each visible element with its own text (HTML, and SVG ``text``), its colour
(``color``, or ``fill`` in SVG, times the opacity of the element and its ancestors) over the
background behind it (the background colours of its ancestors composited from the page down; for
SVG text also the shapes painted under it, e.g. a diagram box or a timeline bar). Text in disabled
buttons is left out (WCAG exempts inactive controls) and counted apart. Returns, per name: the
number of views and texts, the minimum ratio and the worst texts.

``VISIBLE_OUTPUTS_JS``: the visible text of each code cell's outputs (an output hidden by the
stylesheet, e.g. a stepper's static copy under its live widget, is left out; ``innerText`` of a
hidden element would give its raw text, CSS included).

``EDGES_JS(selector)``: each arrow of the stepper diagram in ``selector``: its ends (the path's
first and last points) and the boxes of its two moves, in the SVG's coordinates.
"""

from __future__ import annotations

CONTRAST_JS = r"""(groups) => {
  const canvas = document.createElement('canvas').getContext('2d');
  const parse = (value) => {
    if (!value || value === 'none' || value === 'transparent') return [0, 0, 0, 0];
    let m = value.match(/^rgba?\(([^)]+)\)$/);
    if (m) {
      const p = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
      return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
    }
    m = value.match(/^color\(srgb ([^)]+)\)$/);
    if (m) {
      const p = m[1].split(/[\s/]+/).filter(Boolean).map(Number);
      return [p[0] * 255, p[1] * 255, p[2] * 255, p.length > 3 ? p[3] : 1];
    }
    canvas.fillStyle = '#000'; canvas.fillStyle = value;  // names and other forms, normalised
    const normal = canvas.fillStyle;
    if (normal.startsWith('#')) {
      return [1, 3, 5].map(i => parseInt(normal.slice(i, i + 2), 16)).concat([1]);
    }
    return normal === value ? null : parse(normal);
  };
  const over = (top, below) => {  // top composited over an opaque colour
    const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + below[i] * (1 - a)).concat([1]);
  };
  const luminance = (c) => {
    const [r, g, b] = c.slice(0, 3).map(v => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const ratio = (a, b) => {
    const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  };
  const opacityOf = (el) => {
    let o = 1;
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) o *= Number(getComputedStyle(e).opacity);
    return o;
  };
  const htmlBackground = (el) => {
    const chain = [];
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) chain.unshift(e);
    let bg = [255, 255, 255, 1];
    for (const e of chain) {
      if (e instanceof SVGElement && !(e instanceof SVGSVGElement)) continue;
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) bg = over(c, bg);
    }
    return bg;
  };
  const svgBackground = (text) => {
    const svg = text.ownerSVGElement;
    let bg = htmlBackground(svg);
    const box = text.getBBox();
    const cx = box.x + box.width / 2, cy = box.y + box.height / 2;
    for (const shape of svg.querySelectorAll('rect, circle, ellipse, polygon, path')) {
      if (shape.closest('defs, marker')) continue;
      if (!(shape.compareDocumentPosition(text) & Node.DOCUMENT_POSITION_FOLLOWING)) continue;
      const style = getComputedStyle(shape);
      const fill = parse(style.fill);
      if (!fill || fill[3] === 0 || style.display === 'none' || style.visibility === 'hidden') continue;
      const b = shape.getBBox();
      if (cx < b.x || cx > b.x + b.width || cy < b.y || cy > b.y + b.height) continue;
      const alpha = fill[3] * Number(style.fillOpacity) * opacityOf(shape);
      bg = over([fill[0], fill[1], fill[2], alpha], bg);
    }
    return bg;
  };
  const ownText = (el) => [...el.childNodes]
    .filter(n => n.nodeType === 3).map(n => n.textContent).join('').replace(/\s+/g, ' ').trim();
  const describe = (el) => {
    const parts = [];
    for (let e = el; e && parts.length < 4; e = e.parentElement) {
      const cls = e.getAttribute('class');
      parts.unshift(e.tagName.toLowerCase() + (cls ? '.' + cls.trim().split(/\s+/).slice(0, 2).join('.') : ''));
    }
    return parts.join(' > ');
  };
  const result = {};
  for (const [name, selector] of groups) {
    const roots = [...document.querySelectorAll(selector)].filter(r => r.checkVisibility());
    const entries = [];
    let disabled = 0;
    for (const root of roots) {
      for (const el of [root, ...root.querySelectorAll('*')]) {
        if (['STYLE', 'SCRIPT', 'title', 'TITLE', 'defs'].includes(el.tagName)) continue;
        if (el.closest('title, style, script, defs')) continue;
        const text = ownText(el);
        if (!text) continue;
        if (!el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})) continue;
        const rect = el.getBoundingClientRect();
        if (rect.width === 0 || rect.height === 0) continue;
        if (el.closest('button:disabled')) { disabled += 1; continue; }
        const style = getComputedStyle(el);
        const isSvg = el instanceof SVGElement;
        const fg = parse(isSvg ? style.fill : style.color);
        if (!fg) continue;
        const alpha = fg[3] * (isSvg ? Number(style.fillOpacity) : 1) * opacityOf(el);
        const bg = isSvg ? svgBackground(el) : htmlBackground(el);
        const shown = over([fg[0], fg[1], fg[2], alpha], bg);
        entries.push({
          text: text.slice(0, 60), ratio: Math.round(ratio(shown, bg) * 100) / 100,
          fg: shown.slice(0, 3).map(Math.round), bg: bg.slice(0, 3).map(Math.round),
          size: style.fontSize, where: describe(el),
        });
      }
    }
    entries.sort((a, b) => a.ratio - b.ratio);
    result[name] = {
      views: roots.length, texts: entries.length, disabled,
      min: entries.length ? entries[0].ratio : null, worst: entries.slice(0, 5),
    };
  }
  return result;
}"""

VISIBLE_OUTPUTS_JS = """() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')].map(cell =>
  [...cell.querySelectorAll('.jp-OutputArea-child')].filter(o => o.checkVisibility())
    .map(o => o.innerText).join('\\n'))"""

EDGES_JS = """(selector) => {
  const svg = document.querySelector(selector + ' svg.nba-pipeline');
  const box = (move) => {
    const g = svg.querySelector(`[data-move="${move}"]`);
    const r = g.querySelector('rect').getBBox();
    return {x: r.x, y: r.y, w: r.width, h: r.height, state: g.dataset.state || null};
  };
  return [...svg.querySelectorAll('.nba-edge-group')].map(g => {
    const path = g.querySelector('path');
    const length = path.getTotalLength();
    const a = path.getPointAtLength(0), b = path.getPointAtLength(length);
    return {
      from: g.dataset.from, to: g.dataset.to, state: g.dataset.state,
      start: [a.x, a.y], end: [b.x, b.y], source: box(g.dataset.from), target: box(g.dataset.to),
      stroke: getComputedStyle(path).stroke, visible: path.checkVisibility(),
    };
  });
}"""


def on_border(point: list[float], box: dict[str, float], tolerance: float = 1.5) -> bool:
    """Whether ``point`` (x, y) lies on the border of ``box`` (x, y, w, h)."""
    x, y = point
    inside_x = box["x"] - tolerance <= x <= box["x"] + box["w"] + tolerance
    inside_y = box["y"] - tolerance <= y <= box["y"] + box["h"] + tolerance
    near_x = min(abs(x - box["x"]), abs(x - box["x"] - box["w"])) <= tolerance
    near_y = min(abs(y - box["y"]), abs(y - box["y"] - box["h"])) <= tolerance
    return (near_x and inside_y) or (near_y and inside_x)
