"""The XSS payload corpus and the browser-side checks that prove none of it executed.

Every payload, if a browser ever runs it, calls ``__xss('<id>')``. ``MARKER_INIT_JS`` (installed
with ``context.add_init_script`` before any page script) defines ``__xss`` on the page: it records
the id in ``window.__xssHits`` and adds ``data-xss`` to ``<html>``; ``XSS_HITS_JS`` reads both markers
back. (``document.title`` was a third until JupyterLab, which sets the title itself when its current
document changes, overwrote the control's mark on a reopened page under load.)
"""

from __future__ import annotations

from typing import NamedTuple

MARKER_INIT_JS = """
(() => {
  const hits = [];
  Object.defineProperty(window, '__xssHits', {value: hits});
  const mark = (id) => {
    hits.push(String(id));
    document.documentElement.setAttribute('data-xss', String(id));
  };
  Object.defineProperty(window, '__xss', {value: mark});
})();
"""

XSS_HITS_JS = """() => ({
  window: [...(window.__xssHits || [])],
  dom: document.documentElement.getAttribute('data-xss') || '',
})"""

# Inside `root` (a selector), everything that can run script without a click, or with one.
# `<style>` is allowed (the views ship their CSS) unless it carries a payload.
DANGEROUS_DOM_JS = """(root) => {
  const found = [];
  const urlAttrs = ['href', 'src', 'action', 'formaction', 'data', 'xlink:href', 'srcdoc', 'background', 'poster'];
  for (const scope of document.querySelectorAll(root)) {
    for (const el of scope.querySelectorAll('*')) {
      const tag = el.tagName.toLowerCase();
      if (['iframe', 'object', 'embed', 'frame', 'base', 'meta', 'form', 'link'].includes(tag)) {
        found.push('<' + tag + '>');
      }
      // nbconvert writes its own scripts next to widget outputs: flag only those carrying a payload.
      if (tag === 'script' && (el.textContent.includes('__xss') || el.hasAttribute('src'))) found.push('<script>');
      if (tag === 'style' && el.textContent.includes('__xss')) found.push('<style> from a payload');
      for (const attr of el.attributes) {
        const name = attr.name.toLowerCase();
        const value = attr.value.replace(/[\\s\\u0000-\\u001f]/g, '').toLowerCase();
        if (name.startsWith('on')) found.push(tag + '[' + name + ']');
        if (urlAttrs.includes(name) && /^(javascript|vbscript|data:text\\/html)/.test(value))
          found.push(tag + '[' + name + '=' + value.slice(0, 30) + ']');
        if (name === 'style' && /javascript:|expression\\(/.test(value)) found.push(tag + '[style]');
      }
    }
  }
  return found;
}"""


class Payload(NamedTuple):
    """One attack string; ``pid`` is what it passes to ``__xss`` if it ever runs."""

    pid: str
    kind: str
    text: str


def _call(pid: str) -> str:
    return f"__xss('{pid}')"


_TEMPLATES: list[tuple[str, str]] = [
    ("img onerror", '<img src=x onerror="{js}">'),
    ("img onerror, no quotes", "<img src=x onerror={js}>"),
    ("img mixed case", '<IMG SRC=x OnErRoR="{js}">'),
    ("script tag", "<script>{js}</script>"),
    ("nested script tag", "<scr<script>ipt>{js}</scr</script>ipt>"),
    ("svg onload", '<svg onload="{js}"></svg>'),
    ("svg script", "<svg><script>{js}</script></svg>"),
    ("svg animate onbegin", '<svg><animate onbegin="{js}" attributeName="x" dur="1s"/></svg>'),
    ("svg xlink javascript", '<svg><a xlink:href="javascript:{js}"><text x="9" y="9">svg link</text></a></svg>'),
    ("a href javascript", '<a href="javascript:{js}">click me</a>'),
    ("a href entity-encoded javascript", '<a href="&#106;avascript&#58;{js}">click entity</a>'),
    ("a href tab in scheme", '<a href="jav&#x09;ascript:{js}">click tab</a>'),
    ("markdown link javascript", "[markdown link](javascript:{js})"),
    ("markdown link mixed case", "[md case](JaVaScRiPt:{js})"),
    ("markdown image javascript", "![md image](javascript:{js})"),
    ("markdown image attribute breakout", '![md alt](x" onerror="{js})'),
    ("markdown autolink", "<javascript:{js}>"),
    ("markdown reference link", "[ref link][r]\n\n[r]: javascript:{js}"),
    ("html-escaped img", '&lt;img src=x onerror="{js}"&gt;'),
    ("double-escaped img", '&amp;lt;img src=x onerror="{js}"&amp;gt;'),
    ("iframe srcdoc", '<iframe srcdoc="&lt;script&gt;parent.{js}&lt;/script&gt;"></iframe>'),
    ("iframe javascript src", '<iframe src="javascript:parent.{js}"></iframe>'),
    ("style onload", '<style onload="{js}">.nba-x{{color:red}}</style>'),
    ("style import", "<style>@import 'javascript:{js}';</style>"),
    ("details ontoggle", '<details open ontoggle="{js}"><summary>s</summary></details>'),
    ("input autofocus onfocus", '<input autofocus onfocus="{js}">'),
    ("body onload", '<body onload="{js}">'),
    ("video source onerror", '<video><source onerror="{js}"></video>'),
    ("audio onerror", '<audio src=x onerror="{js}"></audio>'),
    ("object javascript", '<object data="javascript:{js}"></object>'),
    ("embed javascript", '<embed src="javascript:{js}">'),
    ("form button formaction", '<form><button formaction="javascript:{js}">go</button></form>'),
    ("meta refresh", '<meta http-equiv="refresh" content="0;url=javascript:{js}">'),
    ("attribute breakout double quote", '"><img src=x onerror="{js}">'),
    ("attribute breakout single quote", "'><img src=x onerror='{js}'>"),
    ("closing tags breakout", '</pre></div></details></summary><img src=x onerror="{js}">'),
    ("script close breakout", '</script><img src=x onerror="{js}">'),
    ("textarea breakout", '</textarea><img src=x onerror="{js}">'),
    ("noscript mutation", '<noscript><p title="</noscript><img src=x onerror={js}>"></p></noscript>'),
    ("math mutation", '<math><mtext><table><mglyph><style><img src=x onerror="{js}">'),
    ("data url iframe", '<iframe src="data:text/html,<script>parent.{js}</script>"></iframe>'),
    ("bare javascript url", "javascript:{js}"),
    ("marquee onstart", '<marquee onstart="{js}">m</marquee>'),
]


def xss_payloads(prefix: str) -> list[Payload]:
    """The corpus with ids ``<prefix>00``, ``<prefix>01``...: one id per payload and place."""
    return [
        Payload(f"{prefix}{i:02d}", kind, template.format(js=_call(f"{prefix}{i:02d}")))
        for i, (kind, template) in enumerate(_TEMPLATES)
    ]


PAYLOAD_COUNT = len(_TEMPLATES)

PLACES = {
    "u": "task",
    "h": "thought before the tool calls",
    "k": "thought of the reflection",
    "a": "tool arguments",
    "r": "tool results",
    "e": "tool errors",
    "n": "names of unknown tools",
    "t": "streamed answer (Markdown)",
    "m": "model error",
}
"""Where a model or a tool writes, by payload prefix."""


def corpus() -> dict[str, list[str]]:
    """Every place's payload texts: what the kernel reads from ``xss_corpus.json``."""
    return {place: [p.text for p in xss_payloads(place)] for place in PLACES}


KERNEL_TOOLS = '''
with open("xss_corpus.json") as f:
    corpus = json.load(f)

def lookup(key: int, note: str) -> str:
    """Look up a record (returns hostile text)."""
    return corpus["r"][key]

def explode(key: int) -> str:
    """Fail with a hostile message."""
    raise ValueError(corpus["e"][key])
'''
"""Kernel code (after ``import json``): the corpus (``xss_corpus.json``, :func:`xss_payloads` texts by
place) and two tools returning (``lookup``) or raising (``explode``) its hostile texts."""
