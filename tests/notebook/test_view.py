"""AgentRunView's model, driven by real runs of scripted agents, without a kernel or browser."""

from __future__ import annotations

import asyncio
import html
import json
import re

import ipywidgets as widgets
import pytest
from pydantic import BaseModel

from nbagent import (
    AssistantAgent,
    CancellationToken,
    CreateResult,
    FunctionCall,
    FunctionExecutionResultMessage,
    HandoffMessage,
    ListMemory,
    MemoryContent,
    ModelError,
    ReplayChatCompletionClient,
    RequestUsage,
    Response,
    TextMessage,
    ThoughtEvent,
)
from nbagent.messages import streaming_chunk
from nbagent.notebook.view import AgentRunView
from nbagent.records import Move

XSS = '<img src=x onerror="alert(1)"><script>alert(2)</script>'


def calls(*pairs: tuple[str, str], thought: str | None = None) -> CreateResult:
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=f"c{i}", name=name, arguments=args) for i, (name, args) in enumerate(pairs)],
        usage=RequestUsage(prompt_tokens=10, completion_tokens=5),
        thought=thought,
    )


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def shout(text: str) -> str:
    """Echo text back."""
    return text


def classes(widget: widgets.DOMWidget) -> tuple[str, ...]:
    """The CSS classes of a widget (what the browser's element has)."""
    return tuple(widget._dom_classes)  # noqa: SLF001 ipywidgets' CSS classes trait (no public reader)


def kinds(view: AgentRunView) -> list[str]:
    """The kind of each body child, from its ``nba-item-<kind>`` class."""
    found = []
    for child in view.body.children:
        (kind,) = [name[len("nba-item-") :] for name in classes(child) if name.startswith("nba-item-")]
        found.append(kind)
    return found


def metrics(view: AgentRunView) -> dict[str, str]:
    return dict(re.findall(r'data-metric="(\w+)" data-value="([^"]*)"', view.footer_html))


def html_widgets(widget: widgets.Widget) -> list[widgets.HTML]:
    if isinstance(widget, widgets.HTML):
        return [widget]
    if isinstance(widget, widgets.Box):
        return [leaf for child in widget.children for leaf in html_widgets(child)]
    return []


async def test_streamed_parallel_tools_then_reflection() -> None:
    client = ReplayChatCompletionClient(
        [calls(("add", '{"a": 1, "b": 2}'), ("add", '{"a": 3, "b": 4}')), "The sums are **3** and 7."]
    )
    agent = AssistantAgent("bot", client, tools=[add], reflect_on_tool_use=True, model_client_stream=True)
    view = AgentRunView(interval=3600)
    response = await view.run(agent, "add twice")

    assert response is not None and response.chat_message.to_text() == "The sums are **3** and 7."
    assert kinds(view) == ["user", "llm", "tools", "llm", "final"]
    user, llm1, group, llm2, final = view.body.children
    assert '<span class="nba-step" data-step="1" data-move="add_messages"' in user.value
    assert '<pre class="nba-value">add twice</pre>' in user.value
    assert 'data-state="ok" data-purpose="initial"' in llm1.value and 'data-step="4"' in llm1.value
    assert "10 + 5 tokens" in llm1.value
    assert 'data-state="ok" data-purpose="reflection"' in llm2.value and 'data-move="reflect"' in llm2.value

    assert "nba-tool-group" in classes(group)
    head, row = group.children
    cards = row.children
    assert "nba-tool-cards" in classes(row)
    assert 'data-move="tool_request"' in head.value and "2 tool calls, run in parallel" in head.value
    assert [re.findall(r'data-call-id="(\w+)" data-state="(\w+)"', c.value)[0] for c in cards] == [
        ("c0", "ok"),
        ("c1", "ok"),
    ]
    assert '<pre class="nba-value">3</pre>' in cards[0].value and '<pre class="nba-value">7</pre>' in cards[1].value
    assert all('<span class="nba-duration nba-muted">' in card.value for card in cards)

    assert 'data-kind="text"' in final.value and "<p>The sums are <strong>3</strong> and 7.</p>" in final.value
    assert 'data-move="reflect"' in final.value
    assert "nba-item-stream" not in classes(final)

    usage = client.total_usage()
    assert metrics(view) == {
        "tokens": str(usage.prompt_tokens + usage.completion_tokens),
        "prompt_tokens": str(usage.prompt_tokens),
        "completion_tokens": str(usage.completion_tokens),
        "llm_calls": "2",
        "tool_calls": "2",
        "elapsed": metrics(view)["elapsed"],
        "status": "ok",
    }
    assert view.status == "ok"
    assert "nba-state-ok" in classes(view) and "nba-state-running" not in classes(view)
    assert view.stop_button.disabled


async def test_stream_updates_are_coalesced_and_final_text_exact() -> None:
    words = [f"w{index} " for index in range(1500)]  # 7,890 characters: under ANSWER_CHARS, shown whole
    client = ReplayChatCompletionClient(["".join(words)])
    agent = AssistantAgent("bot", client, model_client_stream=True)
    view = AgentRunView(interval=3600)
    await view.run(agent, "talk")
    assert kinds(view) == ["user", "llm", "final"]
    assert f"<p>{''.join(words).strip()}</p>" in view.body.children[-1].value


def test_stream_segments_resend_only_the_last_part() -> None:
    view = AgentRunView(interval=3600)
    text = "".join(f"<w{index}> " for index in range(2000))  # 14,890 characters
    view.handle(Move("r1", "call_llm", 0))
    for index in range(2000):
        view.handle(streaming_chunk(f"<w{index}> ", "bot", "m1"))
    (box,) = view.body.children
    assert kinds(view) == ["stream"] and "nba-stream" in classes(box)
    head, scroll = box.children
    assert "nba-scroll" in classes(scroll)
    (stream_body,) = scroll.children
    (first,) = stream_body.children
    assert 'data-move="call_llm"' in head.value and 'class="nba-expand-toggle"' in head.value
    # One interval: only the first chunk went out; the rest waits for the next flush.
    assert first.value == '<span class="nba-stream-text">&lt;w0&gt; </span>'
    updates: list[str] = []
    first.observe(lambda change: updates.append(change["new"]), "value")
    view.flush()
    segments = stream_body.children
    assert len(segments) == 4 and len(updates) == 1
    texts = [
        html.unescape(s.value.removeprefix('<span class="nba-stream-text">').removesuffix("</span>")) for s in segments
    ]
    assert all(s.value.startswith('<span class="nba-stream-text">') for s in segments)
    assert [len(piece) for piece in texts] == [4000, 4000, 4000, 2890]
    assert "".join(texts) == text
    view.handle(Response(chat_message=TextMessage(id="m1", content=text, source="bot")))
    (final,) = view.body.children
    # The answer is capped at ANSWER_CHARS (10,000): the rest is in the trace, and the view says so.
    assert kinds(view) == ["final"] and "&lt;w1387&gt;" in final.value and "&lt;w1999&gt;" not in final.value
    assert "4,890 more characters in the trace" in final.value
    assert box.comm is None and all(segment.comm is None for segment in segments)


async def test_memory_thought_and_handoff() -> None:
    memory = ListMemory()
    await memory.add(MemoryContent(content="The user likes <b>tea</b>"))
    client = ReplayChatCompletionClient([calls(("transfer_to_expert", "{}"), thought="I should hand <this> off")])
    agent = AssistantAgent("bot", client, handoffs=["expert"], memory=memory)
    view = AgentRunView()
    response = await view.run(agent, "help")

    assert response is not None and isinstance(response.chat_message, HandoffMessage)
    assert kinds(view) == ["user", "memory", "llm", "thought", "tools", "handoff"]
    _, mem, _, thought, group, handoff = view.body.children
    assert 'data-move="memory"' in mem.value and "The user likes &lt;b&gt;tea&lt;/b&gt;" in mem.value
    assert thought.value.startswith('<details class="nba-event nba-thought">')
    assert "I should hand &lt;this&gt; off" in thought.value
    assert 'data-tool-name="transfer_to_expert"' in group.children[1].children[0].value
    assert 'data-target="expert"' in handoff.value and 'data-move="handoff_check"' in handoff.value


class City(BaseModel):
    name: str
    population: int


async def test_structured_answer_is_a_table() -> None:
    client = ReplayChatCompletionClient(['{"name": "<Paris>", "population": 2100000}'])
    agent = AssistantAgent("bot", client, output_content_type=City)
    view = AgentRunView()
    await view.run(agent, "a city")
    assert kinds(view) == ["user", "llm", "final"]
    final = view.body.children[-1].value
    assert 'data-kind="structured"' in final
    assert '<tr><th>name</th><td><pre class="nba-value">&lt;Paris&gt;</pre></td></tr>' in final
    assert '<tr><th>population</th><td><pre class="nba-value">2100000</pre></td></tr>' in final


async def test_tool_summary_answer_and_untrusted_strings_are_escaped() -> None:
    client = ReplayChatCompletionClient([calls(("shout", '{"text": "' + XSS.replace('"', '\\"') + '"}'))])
    agent = AssistantAgent("bot", client, tools=[shout])
    view = AgentRunView()
    await view.run(agent, XSS)
    assert kinds(view) == ["user", "llm", "tools", "final"]
    assert 'data-kind="summary"' in view.body.children[-1].value
    for widget in html_widgets(view.body):
        assert "<img" not in widget.value and "<script" not in widget.value
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in view.body.children[0].value
    static = view.to_html()
    assert "<img" not in static and "<script" not in static
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in static


def slow_agent(answers: list[str | CreateResult]) -> tuple[AssistantAgent, asyncio.Event]:
    started = asyncio.Event()

    async def wait_forever(x: int) -> int:
        """Never returns."""
        started.set()
        await asyncio.Event().wait()
        return x

    client = ReplayChatCompletionClient(answers)
    return AssistantAgent("bot", client, tools=[wait_forever], reflect_on_tool_use=True), started


async def test_stop_cancels_the_run_and_leaves_a_valid_context() -> None:
    agent, started = slow_agent([calls(("wait_forever", '{"x": 1}')), "after the stop"])
    view = AgentRunView()
    task = asyncio.ensure_future(view.run(agent, "go"))
    await started.wait()
    view.stop_button.click()
    assert await task is None

    assert view.status == "cancelled" and "nba-state-cancelled" in classes(view)
    assert kinds(view) == ["user", "llm", "tools"]
    card = view.body.children[2].children[1].children[0].value
    assert 'data-state="error"' in card and "the run was cancelled" in card
    assert metrics(view)["status"] == "cancelled"
    assert "cancelled: stopped with the Stop button" in view.status_html
    assert 'data-status="cancelled"' in view.status_html
    assert not agent.is_running
    last = agent.model_context.messages[-1]
    assert isinstance(last, FunctionExecutionResultMessage) and last.content[0].is_error

    again = AgentRunView()
    response = await again.run(agent, "and now?")
    assert response is not None and response.chat_message.to_text() == "after the stop"


async def test_outside_cancellation_propagates_and_is_shown() -> None:
    agent, started = slow_agent([calls(("wait_forever", '{"x": 1}'))])
    view = AgentRunView()
    task = asyncio.ensure_future(view.run(agent, "go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError) as raised:
        await task
    # Cancelled from outside (not the Stop button, not the token): interrupted, and plain cancellation
    # propagates (only a kernel interrupt becomes RunInterrupted, see test_kernel).
    assert type(raised.value) is asyncio.CancelledError
    assert view.status == "interrupted" and "interrupted: task cancelled" in view.status_html
    assert "nba-state-interrupted" in classes(view)
    assert not agent.is_running


async def test_model_error_is_shown_and_raised() -> None:
    agent = AssistantAgent("bot", ReplayChatCompletionClient([]))
    view = AgentRunView()
    with pytest.raises(ModelError):
        await view.run(agent, "hello")
    assert view.status == "error"
    # The error is shown once: in the line of the call that failed (no block repeating it, the status
    # says "error"), though the run's end and its exception both report it.
    assert kinds(view) == ["user", "llm"]
    assert 'data-state="error"' in view.body.children[1].value
    assert view.error is not None and view.error.startswith("ReplayExhaustedError: ")
    assert view.to_html().count("ReplayExhaustedError") == 1 and view.to_text().count("ReplayExhaustedError") == 1
    assert ">error</span>" in view.status_html


async def test_an_error_outside_a_model_call_is_shown_once_in_a_block() -> None:
    agent = AssistantAgent("bot", ReplayChatCompletionClient(["done"]))
    view = AgentRunView()

    async def failing(*_: object, **__: object) -> None:
        raise RuntimeError("the memory store is down")

    agent.model_context.add_message = failing  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        await view.run(agent, "hello")
    assert view.status == "error" and kinds(view)[-1] == "error"
    assert view.to_html().count("the memory store is down") == 1


async def test_background_start_and_wait() -> None:
    agent = AssistantAgent("bot", ReplayChatCompletionClient(["done"]))
    view = AgentRunView()
    task = view.start(agent, "later")
    assert view.task is task
    response = await view.wait()
    assert response is not None and response.chat_message.to_text() == "done"
    assert view.status == "ok"


async def test_consumes_an_agent_run_and_gives_a_mime_bundle() -> None:
    agent = AssistantAgent("bot", ReplayChatCompletionClient(["Hello <world>"]))
    view = AgentRunView("my run")
    await view.run(agent.iter([TextMessage(content="hi", source="user")]))
    bundle = view._repr_mimebundle_()
    # Never displayed, the finished view closed its widgets (no model left behind): its static copy alone.
    assert view.comm is None and set(bundle) == {"text/html", "text/plain"}
    assert bundle["text/plain"].splitlines()[:2] == ["bot · ok", "Hello <world>"]
    usage = agent.model_client.total_usage()
    tokens = usage.prompt_tokens + usage.completion_tokens
    assert bundle["text/plain"].splitlines()[2].startswith(f"{tokens} tokens · 1 LLM call · 0 tool calls · ")
    html = bundle["text/html"]
    assert html.startswith('<div class="nba-view nba-state-ok" data-status="ok" style="') and "><style>" in html[:400]
    assert '<span class="nba-title" style="font-size:14px;margin-right:2px"><b>my run</b></span>' in html
    assert "<p>Hello &lt;world&gt;</p>" in html
    assert 'data-metric="llm_calls" data-value="1"' in html


async def test_stop_before_start_and_after_end_does_nothing() -> None:
    view = AgentRunView()
    view.stop()
    assert view.status == "idle"
    agent = AssistantAgent("bot", ReplayChatCompletionClient(["x"]))
    await view.run(agent, "go")
    view.stop()
    assert view.status == "ok"


async def test_long_tool_result_is_truncated_in_the_view_but_kept_in_the_context() -> None:
    long_text = "z" * 50_000
    client = ReplayChatCompletionClient([calls(("shout", json.dumps({"text": long_text})))])
    agent = AssistantAgent("bot", client, tools=[shout])
    view = AgentRunView()
    await view.run(agent, "echo a lot")
    card = view.body.children[2].children[1].children[0].value
    assert "show all (50,000 characters) (30,000 more characters in the trace)" in card
    assert "z" * 20_000 in card and "z" * 20_001 not in card
    last = agent.model_context.messages[-1]
    assert isinstance(last, FunctionExecutionResultMessage) and last.content[0].content == long_text


# --------------------------------------------------------------------- issue 16: status, endings, static copy


async def test_the_status_ticks_while_a_call_streams() -> None:
    from nbagent.notebook import view as view_module

    client = ReplayChatCompletionClient([" ".join(f"w{i}" for i in range(30))], chunk_delay=0.04)
    agent = AssistantAgent("bot", client, model_client_stream=True)
    view = AgentRunView(interval=3600)
    rows: list[str] = []
    footers: list[dict[str, str]] = []

    async def watch() -> None:
        while view.status != "ok":
            await asyncio.sleep(view_module.TICK_INTERVAL)
            if view.status == "running":
                rows.append(view.body.children[1].value if len(view.body.children) > 1 else "")
                footers.append(metrics(view))

    await asyncio.gather(view.run(agent, "count"), watch())
    streaming = [row for row in rows if 'data-state="streaming"' in row]
    counts = [int(re.findall(r"streaming · (\d+) chunks", row)[0]) for row in streaming]
    assert len(counts) >= 2 and counts == sorted(counts) and counts[-1] > counts[0]
    assert all(re.search(r"streaming · \d+ chunks · \d+\.\d s, first token after \d+ ms", row) for row in streaming)
    elapsed = [float(footer["elapsed"]) for footer in footers]
    assert elapsed == sorted(elapsed) and elapsed[-1] > elapsed[0]
    assert any(int(footer.get("streaming_chunks", 0)) > 0 for footer in footers)
    assert footers[0]["status"] == "running"
    assert "streaming_chunks" not in metrics(view) and metrics(view)["status"] == "ok"


async def test_a_call_not_streaming_yet_waits_with_its_time() -> None:
    from nbagent.records import LLMCall
    from nbagent.render import Options, to_html

    agent = AssistantAgent("bot", ReplayChatCompletionClient(["x"]))
    seen: list[LLMCall] = []
    async for item in agent.iter(
        [TextMessage(content="hi", source="user")],
    ):
        if isinstance(item, LLMCall):
            seen.append(item)
            html_row = to_html(item, Options("call_llm", 1, now=item.start_perf + 2.5))
            assert 'data-state="running"' in html_row and "waiting for the model… 2.5 s" in html_row


async def test_endings_are_told_apart_and_discarded_text_is_marked() -> None:
    # Stopped mid-stream: cancelled, its text never entered the context.
    client = ReplayChatCompletionClient([" ".join(f"w{i}" for i in range(400))], chunk_delay=0.005)
    agent = AssistantAgent("bot", client, model_client_stream=True)
    view = AgentRunView(interval=0.01)
    task = view.start(agent, "talk")
    while "stream" not in kinds(view):
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    view.stop()
    assert await task is None
    assert view.status == "cancelled" and view.detail == "stopped with the Stop button"
    (stream_box,) = [child for child in view.body.children if "nba-item-stream" in classes(child)]
    assert "nba-discarded" in classes(stream_box)
    head = stream_box.children[0].value
    assert "streamed text, discarded" in head and "never entered the model context" in head
    assert [type(m).__name__ for m in agent.model_context.messages] == ["UserMessage"]
    static = view.to_html()
    assert 'class="nba-item nba-item-stream nba-event nba-text nba-stream nba-discarded"' in static
    # The token cancelled (not the Stop button): cancelled too, and the cancellation propagates.
    token = CancellationToken()
    slow, started = slow_agent([calls(("wait_forever", '{"x": 1}'))])
    by_token = AgentRunView()
    task = asyncio.ensure_future(by_token.run(slow, "go", cancellation_token=token))
    await started.wait()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (by_token.status, by_token.detail) == ("cancelled", "token cancelled")
    assert "cancelled: token cancelled" in by_token.status_html


async def test_a_thought_that_was_streamed_replaces_its_stream() -> None:
    view = AgentRunView(interval=3600)
    agent = AssistantAgent("bot", ReplayChatCompletionClient(["x"]))
    run = agent.iter([TextMessage(content="hi", source="user")], chunk_events=False)
    async for item in run:
        view.handle(item)
        if isinstance(item, Move) and item.name == "call_llm":
            break
    await run.aclose()
    from nbagent.records import LLMCall

    call = LLMCall("r", 0, "initial", "m", None, "m1", True)  # type: ignore[arg-type]
    view.handle(call)
    view.handle("I will think ")
    view.handle("about it.")
    assert kinds(view)[-1] == "stream"
    view.handle(ThoughtEvent(content="I will think about it.", source="bot"))
    assert kinds(view)[-1] == "thought" and "stream" not in kinds(view)


async def test_a_finished_view_is_displayed_as_its_static_copy() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shown: list[tuple[dict[str, object], dict[str, object]]] = []
    published = shell.display_pub.publish

    def publish(data: dict[str, object], metadata: dict[str, object] | None = None, **kwargs: object) -> None:
        shown.append((data, kwargs))

    shell.display_pub.publish = publish  # type: ignore[method-assign]
    try:
        view = AgentRunView("bot")
        view._ipython_display_()
        ((live, options),) = shown
        assert "application/vnd.jupyter.widget-view+json" in live and options.get("transient")
        await view.run(AssistantAgent("bot", ReplayChatCompletionClient(["done"])), "go")
        # The end of the run replaced that output by the static copy alone...
        data, options = shown[-1]
        assert set(data) == {"text/html", "text/plain"} and options.get("update") is True
        assert str(data["text/html"]).startswith('<div class="nba-view nba-state-ok" data-status="ok" style="')
        # ...and a finished view displayed again (another cell) is its static copy from the start.
        shell.execution_count += 1
        view._ipython_display_()
        assert set(shown[-1][0]) == {"text/html", "text/plain"}
    finally:
        shell.display_pub.publish = published  # type: ignore[method-assign]
        InteractiveShell.clear_instance()


def test_an_interrupted_run_renders_in_one_line() -> None:
    from nbagent.notebook.view import RunInterrupted, RunKeyboardInterrupt

    view = AgentRunView("helper")
    assert RunInterrupted(view)._render_traceback_() == [
        "RunInterrupted: the run of 'helper' was interrupted; its view: nbagent.last_view()"
    ]
    assert isinstance(RunInterrupted(view), asyncio.CancelledError)
    assert RunKeyboardInterrupt(view)._render_traceback_() == [
        "KeyboardInterrupt: the run of 'helper' was interrupted; its view: nbagent.last_view()"
    ]
    assert isinstance(RunKeyboardInterrupt(view), KeyboardInterrupt)


async def test_last_view_is_the_view_show_and_start_made_last() -> None:
    import nbagent

    first = await nbagent.show(AssistantAgent("one", ReplayChatCompletionClient(["done"])), "go")
    assert nbagent.last_view() is first
    second = nbagent.start(AssistantAgent("two", ReplayChatCompletionClient(["done"])), "go")
    assert nbagent.last_view() is second
    await second.wait()
    assert nbagent.last_view() is second and (first.status, second.status) == ("ok", "ok")


async def test_the_static_copy_keeps_title_and_status_apart() -> None:
    view = AgentRunView("assistant")
    await view.run(AssistantAgent("assistant", ReplayChatCompletionClient(["done"])), "go")
    header = re.search(r'<div class="nba-header" style="[^"]*">(.*?)</div>', view.to_html(), re.S)
    assert header is not None
    assert re.search(r'</span>\n<span data-status="ok"|</span>\n<span class="nba-status-text"', header.group(1))


async def test_a_live_views_values_are_sent_once_a_frame() -> None:
    """A burst of items (ten parallel tool calls, their results) changes the footer, the status and the tool
    cards many times: a live view sends each widget's latest value at most once a frame (``FRAME_S``)."""
    import math
    import time

    from nbagent.notebook.view import FRAME_S

    tools = calls(*[("add", f'{{"a": {i}, "b": 1}}') for i in range(10)])
    agent = AssistantAgent("bot", ReplayChatCompletionClient([tools, "done"]), tools=[add], reflect_on_tool_use=True)
    view = AgentRunView("bot")
    view.open_now()  # live: its widgets' models open (a dummy comm outside a kernel)
    sent: dict[str, int] = {}
    for widget in html_widgets(view):
        key = next((name for name in classes(widget) if name.startswith("nba-")), "")
        if key in ("nba-footer-box", "nba-status"):
            send = widget.comm.send

            def counting(*args: object, key: str = key, send: object = send, **kwargs: object) -> None:
                sent[key] = sent.get(key, 0) + 1
                send(*args, **kwargs)  # type: ignore[operator]

            widget.comm.send = counting
    started = time.perf_counter()
    await view.run(agent, "add them")
    frames = math.ceil((time.perf_counter() - started) / FRAME_S) + 1
    assert view.status == "ok" and metrics(view)["tool_calls"] == "10"
    # Before, the footer was sent after each item (about 30 here); now once a frame at most, and the end.
    assert 1 <= sent["nba-footer-box"] <= frames + 1, (sent, frames)
    assert 1 <= sent["nba-status"] <= frames + 1, (sent, frames)
