"""The markup type and the element builder: untrusted text reaches HTML only escaped."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nbagent.render import EMPTY, Markup, concat, el, escape

PAYLOAD = '<img src=x onerror="alert(1)">\'&'
ESCAPED = "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&#x27;&amp;"


def test_escape_gives_markup_and_leaves_markup_alone() -> None:
    assert escape(PAYLOAD) == ESCAPED and isinstance(escape(PAYLOAD), Markup)
    assert escape(3) == "3" and escape(None) == "None"
    safe = Markup("<b>x</b>")
    assert escape(safe) is safe
    assert escape(escape(PAYLOAD)) == ESCAPED  # escaping is done once


def test_concatenation_escapes_the_plain_operand_on_either_side() -> None:
    open_, close = Markup("<p>"), Markup("</p>")
    assert open_ + PAYLOAD + close == f"<p>{ESCAPED}</p>"
    assert PAYLOAD + close == f"{ESCAPED}</p>"
    assert isinstance(PAYLOAD + close, Markup) and isinstance(open_ + PAYLOAD, Markup)
    total = EMPTY
    total += PAYLOAD
    assert total == ESCAPED
    assert open_ * 2 == "<p><p>" and isinstance(open_ * 2, Markup)


def test_format_percent_and_join_escape_their_arguments() -> None:
    assert Markup("<i>{}</i>").format(PAYLOAD) == f"<i>{ESCAPED}</i>"
    assert Markup("<i>{x}:{n:03d}</i>").format(x=PAYLOAD, n=7) == f"<i>{ESCAPED}:007</i>"
    assert Markup("<i>{!r}</i>").format(Markup("<b>")) == "<i>Markup(&#x27;&lt;b&gt;&#x27;)</i>"
    assert Markup("<i>%s</i>") % PAYLOAD == f"<i>{ESCAPED}</i>"
    assert Markup("<i>%s %d</i>") % (PAYLOAD, 4) == f"<i>{ESCAPED} 4</i>"
    assert Markup("<i>%(a)s</i>") % {"a": PAYLOAD} == f"<i>{ESCAPED}</i>"
    assert Markup("<br>").join([PAYLOAD, Markup("<b>ok</b>")]) == f"{ESCAPED}<br><b>ok</b>"


def test_nested_markup_is_not_escaped_twice() -> None:
    inner = el("b", PAYLOAD)
    outer = el("div", inner, " and ", PAYLOAD, class_="x")
    assert outer == f'<div class="x"><b>{ESCAPED}</b> and {ESCAPED}</div>'
    assert Markup("<p>{}</p>").format(inner) == f"<p><b>{ESCAPED}</b></p>"
    assert Markup("<p>") + inner == f"<p><b>{ESCAPED}</b>"


def test_plain_str_operations_lose_the_mark_and_are_escaped_again() -> None:
    """Slicing or an f-string gives a plain ``str``: put back into markup, it shows as text (safe)."""
    bold = el("b", "x")
    assert type(bold[:3]) is str and type(f"{bold}") is str
    assert el("p", f"{bold}") == "<p>&lt;b&gt;x&lt;/b&gt;</p>"


def test_el_escapes_attribute_values_and_names_attributes() -> None:
    out = el("span", "t", class_="a b", data_call_id=PAYLOAD, title='"><script>', hidden=True, open=False, x=None)
    assert out == f'<span class="a b" data-call-id="{ESCAPED}" title="&quot;&gt;&lt;script&gt;" hidden>t</span>'
    assert el("rect", x=1.5, viewBox="0 0 1 1") == '<rect x="1.5" viewBox="0 0 1 1"/>'
    assert el("div") == "<div></div>"


def test_el_flattens_children_and_skips_none() -> None:
    rows = (el("li", item) for item in ["a", "<b>"])
    assert el("ul", rows, None, [[1, 2.5]]) == "<ul><li>a</li><li>&lt;b&gt;</li>12.5</ul>"
    assert concat("<", el("i", ">")) == "&lt;<i>&gt;</i>"


@pytest.mark.parametrize("name", ["onclick", "onerror", "on_load", "x y", '"', "a>b", "1a"])
def test_el_refuses_handler_and_malformed_attribute_names(name: str) -> None:
    with pytest.raises(ValueError):
        el("div", **{name: "1"})


@pytest.mark.parametrize("tag", ["img src=x", "a>", "", "<b"])
def test_el_refuses_malformed_tags(tag: str) -> None:
    with pytest.raises(ValueError):
        el(tag)


@given(st.text(), st.text())
def test_no_text_becomes_markup(text: str, attribute: str) -> None:
    out = el("div", text, el("span", text), title=attribute) + text
    # Only the tags el() wrote: two of the div, two of the span, the title's two quotes.
    assert (out.count("<"), out.count(">"), out.count('"')) == (4, 4, 2)


def test_a_markup_attribute_value_is_escaped_too() -> None:
    """Markdown's sanitised HTML as a title must not close the attribute (an ``onmouseover`` injected)."""
    from nbagent.render.markdown import markdown

    title = markdown("[a](http://x/onmouseover=alert(1)//)")
    assert isinstance(title, Markup) and '"' in title
    out = el("span", "x", title=title)
    assert out.count('"') == 2 and "onmouseover" not in out.split('"')[0]
    assert el("i", title=Markup('"><script>alert(1)</script>')) == (
        '<i title="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"></i>'
    )
    assert el("i", title=Markup("&amp;")) == '<i title="&amp;amp;"></i>'  # escaped once more, as text


def test_percent_with_a_mapping_or_other_values_escapes_all_their_text() -> None:
    assert Markup("%s") % {"<script>": 1} == "{&#x27;&lt;script&gt;&#x27;: 1}"
    assert Markup("%(a)s|%(b)d") % {"a": "<b>", "b": 2} == "&lt;b&gt;|2"
    assert Markup("%s") % ["<b>"] == "[&#x27;&lt;b&gt;&#x27;]"

    class Shout:
        def __str__(self) -> str:
            return "<script>"

    assert Markup("%s") % Shout() == "&lt;script&gt;"
    both = Markup("%s %s") % (Shout(), {"<k>": "<v>"})
    assert both == "&lt;script&gt; {&#x27;&lt;k&gt;&#x27;: &#x27;&lt;v&gt;&#x27;}"
    assert Markup("%r") % "<x>" == "&#x27;&lt;x&gt;&#x27;"


@pytest.mark.parametrize(
    "attributes",
    [
        {"href": "javascript:alert(1)"},
        {"href": " JaVaScRiPt:alert(1)"},
        {"href": "java\tscript:alert(1)"},
        {"href": "\x01javascript:alert(1)"},
        {"src": "vbscript:x"},
        {"href": "data:text/html,<script>alert(1)</script>"},
        {"src": "data:image/svg+xml,<svg onload=alert(1)>"},
        {"formaction": "javascript:alert(1)"},
        {"srcdoc": "<script>alert(1)</script>"},
        {"style": "background:url(javascript:alert(1))"},
        {"style": "width: expression(alert(1))"},
        {"style": "background: u\\rl(x)"},
    ],
)
def test_el_refuses_script_urls_srcdoc_and_unsafe_styles(attributes: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        el("a", "x", **attributes)


def test_el_keeps_safe_urls_and_styles() -> None:
    assert el("a", "x", href="https://e.org/?a=1&b=2") == '<a href="https://e.org/?a=1&amp;b=2">x</a>'
    assert el("a", "x", href="#anchor") == '<a href="#anchor">x</a>'
    assert el("a", "x", href="notes/page.html") == '<a href="notes/page.html">x</a>'
    assert el("img", src="data:image/png;base64,AAAA") == '<img src="data:image/png;base64,AAAA"/>'
    # An <img> runs no script of its SVG (a static copy's picture of a diagram); any other element might.
    assert el("img", src="data:image/svg+xml,%3Csvg/%3E") == '<img src="data:image/svg+xml,%3Csvg/%3E"/>'
    for tag, name in (("iframe", "src"), ("embed", "src"), ("a", "href"), ("object", "data")):
        with pytest.raises(ValueError):
            el(tag, **{name: "data:image/svg+xml,%3Csvg onload=alert(1)/%3E"})
    assert el("div", style="width:40%;color:var(--nba-fg)") == '<div style="width:40%;color:var(--nba-fg)"></div>'
