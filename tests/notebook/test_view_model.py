"""The run view's model alone (notebook/view_model.py, issue 43.2): built from real runs' items, no widget.

A :class:`RunViewModel` takes the items of ``agent.iter()`` and keeps what a view shows (status, totals,
entries as the renderer's markup) and tells a listener of each change; nothing here makes a widget, and
the module imports no ipywidgets.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from nbagent import AssistantAgent, CancellationToken, CreateResult, FunctionCall, ReplayChatCompletionClient
from nbagent.agent_input import task_messages
from nbagent.messages import ToolCallRequestEvent, streaming_chunk
from nbagent.notebook.view_model import (
    SEGMENT_CHARS,
    Block,
    Entry,
    LLMLine,
    RunViewModel,
    StreamText,
    ToolCard,
    ToolGroup,
)
from nbagent.records import RunFinished

XSS = '<img src=x onerror="alert(1)">'


class Record:
    """A listener that writes down what it is told, in order."""

    def __init__(self, model: RunViewModel) -> None:
        self.model = model
        self.events: list[tuple[str, object]] = []

    def added(self, entry: Entry) -> None:
        self.events.append(("added", type(entry).__name__))

    def replaced(self, old: StreamText, new: Block) -> None:
        self.events.append(("replaced", (old.text, new.kind)))

    def changed(self, part: Block | ToolCard | StreamText) -> None:
        self.events.append(("changed", type(part).__name__))

    def streamed(self, stream: StreamText, text: str) -> None:
        self.events.append(("streamed", text))

    def stream_ended(self, stream: StreamText) -> None:
        self.events.append(("stream_ended", stream.text))

    def status_changed(self, previous: str) -> None:
        self.events.append(("status", (previous, self.model.status)))

    def footer_changed(self) -> None:
        self.events.append(("footer", None))

    def title_changed(self) -> None:
        self.events.append(("title", self.model.title))

    def named(self, name: str) -> list[object]:
        return [what for kind, what in self.events if kind == name]


def listened(title: str = "") -> tuple[RunViewModel, Record]:
    model = RunViewModel(title)
    record = Record(model)
    model.listener = record
    return model, record


async def drive(model: RunViewModel, agent: AssistantAgent, task: str) -> None:
    """Hand every item of a run to ``model``, as a view's runner does (chunks as plain text)."""
    async for item in agent.iter(task_messages(task), CancellationToken(), chunk_events=False):
        model.handle(item)


def kinds(model: RunViewModel) -> list[str]:
    return [
        entry.kind if isinstance(entry, Block) else "stream" if isinstance(entry, StreamText) else "tools"
        for entry in model.entries
    ]


@pytest.mark.subprocess
def test_the_model_imports_no_widget_library() -> None:
    code = "import sys, nbagent.notebook.view_model; print('ipywidgets' in sys.modules, 'IPython' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["False", "False"]


async def test_a_streamed_tool_run_as_entries_and_changes() -> None:
    request = CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id="c0", name="shout", arguments='{"text": "hi"}')],
        thought="I will shout.",
    )

    def shout(text: str) -> str:
        """Echo text back."""
        return text + XSS

    client = ReplayChatCompletionClient([request, "Shouted **hi**."])
    agent = AssistantAgent("bot", client, tools=[shout], reflect_on_tool_use=True, model_client_stream=True)
    model, record = listened()
    await drive(model, agent, "shout hi")

    assert model.status == "ok" and model.detail is None and model.error is None
    assert kinds(model) == ["user", "llm", "thought", "tools", "llm", "final"]
    assert model.response is not None and model.response.chat_message.to_text() == "Shouted **hi**."
    assert len(model.llm_calls) == 2 and len(model.tool_executions) == 1
    # The answer's text was shown as it streamed, then gave way to the answer drawn whole.
    assert record.named("replaced") == [("Shouted **hi**.", "final")]
    assert "".join(str(text) for text in record.named("streamed")) == "Shouted **hi**."
    assert record.named("status")[0] == ("idle", "running") and record.named("status")[-1] == ("running", "ok")
    group = model.entries[3]
    assert isinstance(group, ToolGroup) and [card.call.id for card in group.cards] == ["c0"]
    card = group.cards[0]
    assert card.done and 'data-state="ok"' in card.html
    assert XSS not in card.html and "&lt;img src=x" in card.html  # the tool's text escaped
    line = model.entries[1]
    assert isinstance(line, LLMLine) and 'data-state="ok"' in line.html
    footer = dict(re.findall(r'data-metric="(\w+)" data-value="([^"]*)"', model.footer_html))
    assert footer["llm_calls"] == "2" and footer["tool_calls"] == "1" and footer["status"] == "ok"
    text = model.to_text()
    assert text.startswith("bot · ok\nShouted **hi**.\n") and "2 LLM calls · 1 tool call" in text


async def test_the_static_copy_is_the_model_drawn() -> None:
    agent = AssistantAgent("bot", ReplayChatCompletionClient(["fine <b>thanks</b>"]))
    model = RunViewModel("greeter")
    await drive(model, agent, "hello")
    page = model.html()
    assert page.startswith('<div class="nba-view nba-state-ok" data-status="ok"')
    assert "<style>" in page and "<style>" not in model.html(stylesheet=False)
    assert 'class="nba-header"' in page and "<b>greeter</b>" in page and 'data-status="ok"' in page
    assert 'class="nba-body"' in page and "fine &lt;b&gt;thanks&lt;/b&gt;" in page
    assert page.count('data-metric="llm_calls" data-value="1"') == 1


async def test_tool_calls_without_a_result_are_cancelled_at_the_end() -> None:
    request = CreateResult(
        finish_reason="function_calls", content=[FunctionCall(id="c0", name="shout", arguments='{"text": "x"}')]
    )

    def shout(text: str) -> str:
        """Echo text back."""
        return text

    agent = AssistantAgent("bot", ReplayChatCompletionClient([request, "done"]), tools=[shout])
    model, record = listened()
    run = agent.iter(task_messages("go"), CancellationToken(), chunk_events=False)
    async for item in run:  # stopped as the batch is requested, before it runs
        model.handle(item)
        if isinstance(item, ToolCallRequestEvent):
            break
    await run.aclose()
    model.end("cancelled", "stopped with the Stop button")
    assert model.status == "cancelled" and model.detail == "stopped with the Stop button"
    (group,) = [entry for entry in model.entries if isinstance(entry, ToolGroup)]
    assert group.cards[0].done and 'data-state="cancelled"' in group.cards[0].html
    assert ("changed", "ToolCard") in record.events and record.named("status")[-1] == ("running", "cancelled")
    assert model.to_text().startswith("bot · cancelled (stopped with the Stop button)")


def test_streamed_text_before_its_end_is_discarded() -> None:
    model, record = listened("t")
    model.handle(streaming_chunk("half a sen", "bot", "m1"))  # a chunk event (an AutoGen run's) of message m1
    model.end("interrupted", "kernel interrupt")
    (stream,) = model.entries
    assert isinstance(stream, StreamText) and stream.discarded and "nba-discarded" in stream.classes
    assert record.named("stream_ended") == ["half a sen"] and "StreamText" in record.named("changed")
    assert "never entered the model context" in model.html()
    assert model.status == "interrupted" and model.to_text().startswith("t · interrupted (kernel interrupt)")


def test_long_streamed_text_is_cut_into_escaped_segments() -> None:
    model = RunViewModel()
    text = ("<b>x</b> " * (SEGMENT_CHARS // 4))[: SEGMENT_CHARS * 2 + 10]
    for at in range(0, len(text), 333):
        model.handle(streaming_chunk(text[at : at + 333], "bot", "m1"))
    (stream,) = model.entries
    assert isinstance(stream, StreamText) and stream.text == text
    segments = stream.segments()
    assert len(segments) == 3 and all("<b>" not in segment for segment in segments)
    assert (
        "".join(re.sub(r"<[^>]+>", "", segment) for segment in segments).replace("&lt;", "<").replace("&gt;", ">")
        == text
    )


async def test_an_error_is_shown_once() -> None:
    """In the line of the LLM call that failed with it; a failure elsewhere gets a block of its own."""
    agent = AssistantAgent("bot", ReplayChatCompletionClient([]))  # no answer left: the model call fails
    model = RunViewModel()
    try:
        await drive(model, agent, "go")
    except Exception as error:  # noqa: BLE001 the run's exception, which the runner hands to the view
        model.end("error", f"{type(error).__name__}: {error}")
        model.end("error", f"{type(error).__name__}: {error}")  # the run's end and its exception both bring it
    assert model.status == "error" and model.error is not None and model.error.startswith("ReplayExhaustedError")
    assert kinds(model) == ["user", "llm"] and 'data-state="error"' in model.entries[1].html  # type: ignore[union-attr]
    assert model.html().count("ReplayExhaustedError") == 1

    other = RunViewModel()
    other.end("error", "RuntimeError: the <tool> broke")
    other.end("error", "RuntimeError: the <tool> broke")
    assert kinds(other) == ["error"] and other.html().count("the &lt;tool&gt; broke") == 1


async def test_recorded_times_replace_the_measured_ones() -> None:
    agent = AssistantAgent("bot", ReplayChatCompletionClient(["ok"]))
    model, record = listened()
    await drive(model, agent, "go")
    before = len(record.events)
    model.show_recorded_times([0.404], {}, 1.5)
    (line,) = [entry for entry in model.entries if isinstance(entry, LLMLine)]
    assert line.recorded_s == 0.404 and "404 ms" in line.html
    assert model.elapsed_s == 1.5
    assert ("changed", "LLMLine") in record.events[before:] and ("footer", None) in record.events[before:]


def test_a_run_finished_item_ends_the_model() -> None:
    model, record = listened()
    model.handle(RunFinished("r1", "bot", "ok", None))
    assert model.status == "ok" and model.finished_perf is not None
    assert record.named("status") == [("idle", "ok")]
