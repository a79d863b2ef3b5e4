"""Safe HTML (the renderer, :mod:`nbagent.render`): escaping, sanitised Markdown, truncation, event fragments."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from nbagent import (
    FunctionCall,
    FunctionExecutionResult,
    HandoffMessage,
    MemoryContent,
    MemoryQueryEvent,
    RequestUsage,
    StructuredMessage,
    TextMessage,
    ThoughtEvent,
    ToolCallSummaryMessage,
)
from nbagent.render import escape, pretty_arguments, step_badge, truncate
from nbagent.render import footer as footer_html
from nbagent.render import markdown as markdown_html
from nbagent.render import stream_segment as stream_segment_html
from nbagent.render import to_html as event_html
from nbagent.render import to_html as final_html
from nbagent.render import tool_card as tool_card_html
from nbagent.render import value as value_html

PAYLOADS = [
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    '"><svg onload=alert(1)>',
    '<a href="javascript:alert(1)">x</a>',
    "<iframe src=//evil></iframe>",
]


def tags(fragment: str) -> set[str]:
    return {name.lower() for name in re.findall(r"<\s*([a-zA-Z][a-zA-Z0-9]*)", fragment)}


def test_escape_quotes_and_brackets() -> None:
    assert escape('<b a="1">\'&') == "&lt;b a=&quot;1&quot;&gt;&#x27;&amp;"
    assert escape(42) == "42"


@given(st.text())
def test_escaped_text_has_no_markup(text: str) -> None:
    out = escape(text)
    assert "<" not in out and ">" not in out and '"' not in out


@pytest.mark.parametrize("payload", PAYLOADS)
def test_markdown_keeps_raw_html_as_text(payload: str) -> None:
    out = markdown_html(f"Some **bold** text {payload}\n\n{payload}")
    assert "<strong>bold</strong>" in out
    assert tags(out) == {"p", "strong"}
    assert payload.replace("<", "&lt;").replace(">", "&gt;") in out


def test_markdown_links_only_safe_schemes() -> None:
    out = markdown_html("[a](javascript:alert(1)) [b](https://example.org/x) ![i](https://example.org/i.png)")
    assert 'href="javascript' not in out
    assert '<a href="https://example.org/x" rel="noopener noreferrer nofollow">b</a>' in out
    assert "<img" not in out


def test_markdown_renders_tables_code_and_lists() -> None:
    out = markdown_html("| a | b |\n|---|---|\n| 1 | 2 |\n\n- x\n- y\n\n```\n<b>code</b>\n```")
    assert "<table>" in out and "<td>1</td>" in out
    assert "<ul>\n<li>x</li>\n<li>y</li>\n</ul>" in out
    assert "<pre><code>&lt;b&gt;code&lt;/b&gt;\n</code></pre>" in out


def test_truncate() -> None:
    assert truncate("abc", 5) == ("abc", False)
    assert truncate("abcdef", 3) == ("abc", True)


def test_value_html_short_is_escaped_pre() -> None:
    assert value_html("<x>") == '<pre class="nba-value">&lt;x&gt;</pre>'


def test_value_html_long_has_show_all_with_escaped_full_text() -> None:
    text = "<b>" + "x" * 1000
    out = value_html(text, limit=10)
    assert out.startswith('<pre class="nba-value nba-preview">&lt;b&gt;xxxxxxx…</pre>')
    assert '<details class="nba-show-all"><summary>show all (1,003 characters)</summary>' in out
    assert f'<pre class="nba-value">&lt;b&gt;{"x" * 1000}</pre></details>' in out


def test_value_html_caps_show_all_and_says_the_trace_has_the_rest() -> None:
    out = value_html("y" * 50, limit=10, max_chars=20)
    assert "show all (50 characters) (30 more characters in the trace)" in out
    assert f'<pre class="nba-value">{"y" * 20}</pre>' in out
    assert "y" * 21 not in out


def test_pretty_arguments() -> None:
    assert pretty_arguments('{"a":1,"b":"é"}') == '{\n  "a": 1,\n  "b": "é"\n}'
    assert pretty_arguments("not json") == "not json"


def test_step_badge() -> None:
    assert step_badge("call_llm") == (
        '<span class="nba-step" data-step="4" data-move="call_llm" title="Call the LLM">STEP 4</span> '
    )
    assert step_badge(step=2) == '<span class="nba-step" data-step="2">STEP 2</span> '
    assert step_badge() == ""


@pytest.mark.parametrize("payload", PAYLOADS)
def test_tool_card_escapes_name_arguments_and_result(payload: str) -> None:
    call = FunctionCall(id=payload, name=payload, arguments=payload)
    requested = tool_card_html(call)  # STEP 5's tool request: the model asked, nothing runs yet
    assert 'data-state="requested"' in requested and "requested: runs at the next move" in requested
    assert "running" not in requested.replace(payload, "")
    running = tool_card_html(call, running=True)  # its batch has started
    assert tags(running) == {"div", "span", "pre"}
    assert 'data-state="running"' in running and "running…" in running
    done = tool_card_html(call, FunctionExecutionResult(content=payload, name=payload, call_id=payload), 0.25)
    assert tags(done) == {"div", "span", "pre"}
    assert 'data-state="ok"' in done and '<span class="nba-duration nba-muted">250 ms</span>' in done
    error = tool_card_html(call, FunctionExecutionResult(content=payload, name="f", call_id="1", is_error=True), 1.5)
    assert 'data-state="error"' in error and "1.50 s" in error
    assert 'data-state="cancelled"' in tool_card_html(call, cancelled=True)


class City(BaseModel):
    name: str
    population: int
    tags: list[str]


def test_final_html_kinds() -> None:
    text = final_html(TextMessage(content="# Title\n<img src=x onerror=alert(1)>", source="bot"))
    assert 'data-kind="text"' in text and "<h1>Title</h1>" in text and "<img" not in text
    structured = final_html(
        StructuredMessage[City](content=City(name="<Paris>", population=2, tags=["a"]), source="bot")
    )
    assert 'data-kind="structured"' in structured
    assert '<tr><th>name</th><td><pre class="nba-value">&lt;Paris&gt;</pre></td></tr>' in structured
    assert '<tr><th>tags</th><td><pre class="nba-value">[&quot;a&quot;]</pre></td></tr>' in structured
    call = FunctionCall(id="1", name="add", arguments="{}")
    summary = final_html(
        ToolCallSummaryMessage(
            content="3",
            source="bot",
            tool_calls=[call],
            results=[FunctionExecutionResult(content="<3>", name="add", call_id="1")],
        )
    )
    assert (
        'data-kind="summary"' in summary
        and '<span class="nba-label">add</span> <pre class="nba-value">&lt;3&gt;' in summary
    )
    handoff = final_html(HandoffMessage(content="go", target="<other>", source="bot"))
    assert 'class="nba-event nba-handoff" data-target="&lt;other&gt;"' in handoff


def test_event_html_thought_is_collapsed_and_memory_lists_hits() -> None:
    thought = event_html(ThoughtEvent(content="hmm <b>", source="bot"))
    assert thought.startswith('<details class="nba-event nba-thought"><summary>')
    assert "hmm &lt;b&gt;" in thought and "<details open" not in thought
    memory = event_html(
        MemoryQueryEvent(content=[MemoryContent(content="likes <tea>"), MemoryContent(content="x")], source="bot")
    )
    assert 'class="nba-event nba-memory" data-count="2"' in memory and "memory: 2 hits" in memory
    assert "likes &lt;tea&gt;" in memory


def test_footer_metrics() -> None:
    out = footer_html(RequestUsage(prompt_tokens=1200, completion_tokens=34), 2, 3, 1.23456, "ok")
    assert re.findall(r'data-metric="(\w+)" data-value="([^"]*)"', out) == [
        ("tokens", "1234"),
        ("prompt_tokens", "1200"),
        ("completion_tokens", "34"),
        ("llm_calls", "2"),
        ("tool_calls", "3"),
        ("elapsed", "1.235"),
        ("status", "ok"),
    ]
    assert "1,234 tokens" in out and "2 LLM calls" in out and "3 tool calls" in out and "1.23 s" in out


def test_streaming_text_is_an_escaped_inline_span() -> None:
    assert stream_segment_html(escape("a <b>\n")) == '<span class="nba-stream-text">a &lt;b&gt;\n</span>'


def test_footer_counts_the_chunks_of_a_call_still_streaming() -> None:
    out = footer_html(RequestUsage(prompt_tokens=10, completion_tokens=5), 1, 0, 2.0, "running", 37)
    metrics = re.findall(r'data-metric="(\w+)" data-value="([^"]*)"', out)
    assert metrics[:2] == [("tokens", "15"), ("streaming_chunks", "37")]
    assert "15 tokens" in out and "+ 37 chunks streaming" in out


def test_a_tool_batch_is_a_head_line_above_wrapping_cards() -> None:
    from nbagent import ToolCallRequestEvent
    from nbagent.render import Options

    calls = [FunctionCall(id=f"c{i}", name="add", arguments="{}") for i in range(4)]
    group = event_html(ToolCallRequestEvent(content=calls, source="bot"), Options("tool_request"))
    head, cards = re.match(
        r'<div class="nba-event nba-tool-group" data-count="4">(.*?)(<div class="nba-tool-cards">.*)', group
    ).groups()  # noqa: E501
    assert 'class="nba-tool-head"' in head and 'data-step="5"' in head and "4 tool calls, run in parallel" in head
    assert cards.count('class="nba-event nba-tool-card"') == 4 and "nba-step" not in cards


def test_a_long_answer_gets_an_expand_toggle_and_a_short_one_none() -> None:
    from nbagent.render import expand_toggle
    from nbagent.render.dispatch import LONG_ANSWER

    toggle = expand_toggle()
    assert toggle == ('<label class="nba-expand"><input type="checkbox" class="nba-expand-toggle"/>expand</label>')
    assert toggle in final_html(TextMessage(content="x" * LONG_ANSWER, source="bot"))
    assert "nba-expand" not in final_html(TextMessage(content="short", source="bot"))


def test_the_stream_head_says_whether_its_text_was_discarded() -> None:
    from nbagent.render import stream_head

    live, gone = stream_head(step_badge("call_llm")), stream_head(step_badge("call_llm"), discarded=True)
    assert "streaming" in live and "expand" in live and "discarded" not in live
    assert "streamed text, discarded" in gone and "never entered the model context" in gone


def test_a_stopped_batch_counts_its_cancelled_tasks_apart_from_its_failures() -> None:
    from nbagent.batch import BatchProgress
    from nbagent.notebook.batch_view import progress_html

    errors = (("t1", "cancelled", "cancelled"), ("t2", "error", "ValueError: bad"), ("t3", "cancelled", "cancelled"))
    progress = BatchProgress(
        total=10, ok=5, error=1, timeout=0, cancelled=2, skipped=0, running=0, prompt_tokens=1, completion_tokens=1,
        elapsed_s=1.0, p50_s=0.1, p95_s=0.2, state="stopped", last_errors=errors,
    )  # fmt: skip
    html = progress_html(progress, live=False)
    assert "last 1 failure" in html and "ValueError: bad" in html and "<td>t1</td>" not in html
    assert 'data-metric="cancelled" data-value="2"' in html and 'data-metric="failed" data-value="1"' in html
