"""summary() and the run timeline (HTML/SVG, escaped)."""

from __future__ import annotations

import html
import math
import re
from urllib.parse import unquote

import pytest

from nbagent import Trace
from nbagent.models import ReplayExhaustedError

from .helpers import calls, text, tool_agent

EVIL_NAME = "<img src=x onerror=alert(1)>"
EVIL_ARGS = '{"x": "</title><script>alert(1)</script>"}'


async def two_runs() -> Trace:
    agent = tool_agent(
        "calc",
        calls(("c1", "add", '{"a": 1, "b": 2}'), ("c2", "fail", '{"reason": "no"}'), ("c3", EVIL_NAME, EVIL_ARGS)),
        text("done", 20, 7),
        text("x", 3, 2),
        reflect_on_tool_use=True,
    )
    await agent.run(task="first")
    await agent.run(task="second")
    return agent.trace


async def test_summary_figures() -> None:
    summary = (await two_runs()).summary()
    assert list(summary.index) == [
        "runs", "runs_ok", "runs_error", "runs_cancelled", "llm_calls", "prompt_tokens", "completion_tokens",
        "tool_calls", "tool_errors", "tool_error_rate", "run_p50_s", "run_p95_s", "llm_p50_s", "llm_p95_s",
        "ttft_p50_s", "ttft_p95_s", "tool_p50_s", "tool_p95_s",
    ]  # fmt: skip
    counts = summary[:10].to_dict()
    assert counts == {
        "runs": 2, "runs_ok": 2, "runs_error": 0, "runs_cancelled": 0, "llm_calls": 3, "prompt_tokens": 33,
        "completion_tokens": 14, "tool_calls": 3, "tool_errors": 2, "tool_error_rate": 2 / 3,
    }  # fmt: skip
    for name in ("run", "llm", "tool"):
        assert 0 < summary[f"{name}_p50_s"] <= summary[f"{name}_p95_s"]
    assert math.isnan(summary["ttft_p50_s"])  # nothing was streamed
    empty = Trace().summary()
    assert (empty["runs"], empty["llm_calls"], empty["tool_calls"]) == (0, 0, 0)
    assert math.isnan(empty["tool_error_rate"])


def only_pictures(page: str) -> bool:
    """Every ``<img>`` of ``page`` is the picture of one of its SVGs (a static copy's), no other."""
    sources = re.findall(r"<img\b([^>]*)>", page)
    prefix = ' src="data:image/svg+xml;charset=utf-8,'
    documents = [unquote(html.unescape(source[len(prefix) :].split('"')[0])) for source in sources]
    return all(source.startswith(prefix) for source in sources) and not any(
        re.search(r"<(img|script)\b|<[^>]*\son\w+=", document) for document in documents
    )


async def test_timeline_stacks_parallel_tools_and_escapes_everything() -> None:
    trace = await two_runs()
    first = str(trace.runs_df()["run_id"].iloc[0])
    timeline = trace.timeline(first)
    assert timeline.lanes == ("LLM", "tools 1", "tools 2", "tools 3")
    assert [(bar.lane, bar.kind, bar.label) for bar in timeline.bars] == [
        (0, "llm", "initial"), (0, "llm", "reflection"),
        (1, "tool", "add"), (2, "error", "fail"), (3, "error", EVIL_NAME),
    ]  # fmt: skip
    tools = [bar for bar in timeline.bars if bar.lane > 0]
    assert all(a.start_s < b.start_s + b.duration_s for a in tools for b in tools)  # they overlap
    assert list(trace.tool_calls_df()["concurrent_with"]) == [3, 3, 3]
    page = timeline.to_html()
    assert timeline._repr_html_() == page
    assert "<script" not in page and only_pictures(page) and "</title><script" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert page.count("<rect") == 4 + 5  # four lane backgrounds, five bars
    last = trace.timeline()
    assert last.run_id == str(trace.runs_df()["run_id"].iloc[1])
    assert [(bar.lane, bar.label) for bar in last.bars] == [(0, "initial")]
    with pytest.raises(KeyError):
        trace.timeline("no-such-run")
    with pytest.raises(LookupError):
        Trace().timeline()


async def test_trace_repr_html_shows_summary_and_last_timeline_escaped() -> None:
    trace = await two_runs()
    page = trace._repr_html_()
    assert "<script" not in page and only_pictures(page)
    assert "tool_error_rate" in page and "<svg" in page
    assert page.count('class="nbagent-timeline"') == 1
    assert "<svg" not in Trace()._repr_html_()


async def test_timeline_of_a_failed_call_shows_its_error_not_missing_values() -> None:
    agent = tool_agent("calc")  # no scripted answer: the first call fails
    with pytest.raises(ReplayExhaustedError):
        await agent.run(task="go")
    (bar,) = agent.trace.timeline().bars
    lines = bar.details.splitlines()
    assert (bar.kind, len(lines), lines[0]) == ("error", 3, "initial call to replay, iteration 0")
    assert lines[2].startswith("error: ReplayExhaustedError: ")
    assert "nan" not in bar.details and "<NA>" not in bar.details
