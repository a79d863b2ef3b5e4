"""Static copies as an untrusted notebook shows them: through JupyterLab's sanitizer (emulated here
by its rules; tests/browser/test_untrusted_browser.py opens real ones)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import unquote

from nbagent.messages import RequestUsage
from nbagent.records import LoopSettings
from nbagent.render import STYLE, el, footer, label, pipeline, portable, step_badge


class Sanitized(HTMLParser):
    """What JupyterLab's sanitizer keeps, as text and elements: no <style> (nor its text), no SVG
    element (its texts kept), no data-* attribute, no style declaration with var()."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.styles: list[dict[str, str]] = []
        self.images: list[str] = []
        self._skip = 0
        self._hidden: list[bool] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs if not name.startswith("data-")}
        if tag == "style":
            self._skip += 1
        if tag in ("div", "p", "pre", "table", "tr"):
            self.text.append("\n")  # a block starts on a line of its own
        declarations = [d for d in attributes.get("style", "").split(";") if d and "var(" not in d]
        self.styles.append(dict(d.split(":", 1) for d in declarations))
        if tag == "img":
            self.images.append(attributes["src"])
        if tag not in ("img", "path", "rect"):
            hidden = "display:none" in attributes.get("style", "") or bool(self._hidden and self._hidden[-1])
            self._hidden.append(hidden)

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._skip -= 1
        if tag not in ("img", "path", "rect") and self._hidden:
            self._hidden.pop()

    def handle_data(self, data: str) -> None:
        if not self._skip and not (self._hidden and self._hidden[-1]):
            self.text.append(data)


def sanitized(markup: str) -> Sanitized:
    parser = Sanitized()
    parser.feed(markup)
    return parser


def test_labels_badges_and_figures_stay_apart_without_the_stylesheet() -> None:
    usage = RequestUsage(prompt_tokens=79, completion_tokens=12)
    page = portable(STYLE + el("div", step_badge("call_llm"), label("LLM call 1"), "replay", footer(usage, 2, 1, 0.5)))
    text = " ".join("".join(sanitized(page).text).split())
    assert text.startswith("STEP 4 LLM call 1 replay 91 tokens 79 prompt 12 completion 2 LLM calls 1 tool call")
    assert not re.search(r"\d[a-z]|[a-z]\d", text.replace("STEP 4", ""))
    styles = sanitized(page).styles
    assert {"font-weight": "600", "margin-right": "6px"} in styles  # the label's, kept by the sanitizer
    assert {"margin-right": "14px"} in styles  # each figure of the footer


def test_an_svg_becomes_a_picture_whose_words_do_not_run_on() -> None:
    svg = pipeline([LoopSettings()], visited=["add_messages"], current="add_messages", upcoming="message_id")
    page = portable(STYLE + el("div", svg, class_="nba-stepper nba-static-copy"))
    seen = sanitized(page)
    assert "".join(seen.text).strip() == ""  # the inline SVG is in a box hidden by its own style
    (image,) = seen.images
    assert image.startswith("data:image/svg+xml;charset=utf-8,")
    document = unquote(image.split(",", 1)[1])
    assert 'xmlns="http://www.w3.org/2000/svg"' in document[:100] and "<style>" in document
    assert document.count('class="nba-arrowhead"') == document.count('class="nba-edge-group"') > 10
    assert 'data-state="current"' in document and "var(--jp-" not in document  # its own light colours
    # With the stylesheet (a trusted page, nbconvert) the inline SVG shows and the picture does not.
    assert ".nba-svg-live{display:block !important" in STYLE and ".nba-svg-picture{display:none !important}" in STYLE


def test_themed_colours_are_kept_for_trusted_pages_after_a_fallback() -> None:
    page = portable(el("div", el("div", "x", class_="nba-event nba-final"), class_="nba-view nba-state-error"))
    assert "border-left-color:#cf222e;border-left-color:var(--nba-error)" in page  # the view's state
    assert "border-left-color:#1a7f37;border-left-color:var(--nba-ok)" in page  # the answer's kind
