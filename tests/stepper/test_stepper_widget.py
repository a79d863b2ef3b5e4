"""The stepper widget without a browser: buttons, diagram states, panels, escaping, mime bundle."""

from __future__ import annotations

import asyncio
import concurrent.futures
import re
import subprocess
import sys
from html.parser import HTMLParser
from urllib.parse import unquote

import pytest

import nbagent
from nbagent import AssistantAgent, ReplayChatCompletionClient
from nbagent.notebook.stepper_widget import NotebookStepper, StepperWidget, pipeline_html, stepper_html

from .scenarios import SCENARIOS, Scenario, calls, text

pytestmark = pytest.mark.filterwarnings("ignore:Multiple handoffs detected")
PAYLOAD = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'


class Tags(HTMLParser):
    """Collects the element names and any on* handler attributes of an HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self.handlers: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        source = dict(attrs).get("src") or ""
        if tag == "img" and source.startswith("data:image/svg+xml;charset=utf-8,"):
            inner = Tags()  # a static copy's picture of its SVG: what it holds
            inner.feed(unquote(source.split(",", 1)[1]))
            self.names |= inner.names
            self.handlers += inner.handlers
            tag = "picture-of-svg"
        self.names.add(tag)
        self.handlers += [name for name, _ in attrs if name.startswith("on")]


def node_states(html: str) -> dict[str, str]:
    return dict(re.findall(r'<g class="nba-node" data-move="(\w+)" data-step="\d" data-state="(\w+)"', html))


def head(html: str) -> tuple[str, str, str]:
    found = re.search(r'class="nba-stepper-head" data-step="(\d)" data-move="(\w*)" data-index="(\d+)"', html)
    assert found is not None
    return found.group(1), found.group(2), found.group(3)


def scenario(name: str) -> Scenario:
    return next(s for s in SCENARIOS if s.name == name)


async def click(widget: StepperWidget, button_name: str) -> None:
    getattr(widget, button_name).click()
    assert widget.task is not None
    await widget.task


@pytest.mark.subprocess
def test_import_nbagent_does_not_import_ipywidgets() -> None:
    code = (
        "import sys, nbagent; assert 'ipywidgets' not in sys.modules; nbagent.step; assert 'ipywidgets' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


async def test_step_returns_a_notebook_stepper_whose_bundle_has_widget_html_and_text() -> None:
    stepper = nbagent.step(scenario("plain_text").agent(), "hi")
    assert isinstance(stepper, NotebookStepper)
    bundle = stepper._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html", "application/vnd.jupyter.widget-view+json"}
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == stepper.widget().model_id
    assert bundle["text/plain"] == "<Stepper agent='assistant' status='ready', 0 moves>"
    assert head(bundle["text/html"]) == ("0", "", "0")
    assert stepper.widget() is stepper.widget()


async def test_next_button_walks_the_diagram_and_panels() -> None:
    sc = scenario("two_rounds_then_text")
    stepper = nbagent.step(sc.agent(), "What is (2 + 3) * 4?")
    widget = stepper.widget()
    states = node_states(widget.panel.value)
    assert states["add_messages"] == "upcoming" and "current" not in states.values()
    assert states["handoff_check"] == "unused" and states["reflect"] == "unused"
    seen = []
    rows = []
    while not widget.next_button.disabled:
        await click(widget, "next_button")
        states = node_states(widget.panel.value)
        current = [name for name, state in states.items() if state == "current"]
        upcoming = [name for name, state in states.items() if state == "upcoming"]
        step, move, index = head(widget.panel.value)
        assert current == [move] and index == str(len(stepper.history))
        assert upcoming == ([stepper.upcoming.name] if stepper.upcoming else [])
        seen.append(move)
        rows.append(int(re.search(r'nba-stepper-context" data-rows="(\d+)"', widget.panel.value).group(1)))
    assert seen == sc.moves
    assert rows == [1, 1, 1, 2, 3, 3, 4, 5, 5, 6]
    assert widget.run_button.disabled and not widget.reset_button.disabled
    assert 'data-status="finished"' in widget.status.value
    assert "The run is over (finished)" in widget.panel.value


async def test_llm_move_panel_shows_request_and_raw_result_and_tool_move_does_not() -> None:
    stepper = nbagent.step(scenario("handoff_and_tool").agent(), "task")
    await stepper.run_until(move="call_llm")
    panel = stepper.widget().panel.value
    assert 'data-messages="2" data-tools="2" data-tool-choice="auto"' in panel
    assert "transfer_to_billing" in panel and "Raw CreateResult" in panel
    assert "&quot;finish_reason&quot;: &quot;function_calls&quot;" in panel
    await stepper.next()
    panel = stepper.widget().panel.value
    assert "nba-stepper-request" not in panel
    assert re.findall(r'data-change="(\w*)"', panel) == ["", "added"]


async def test_run_to_end_and_reset_buttons() -> None:
    sc = scenario("keeps_calling_limit_3")
    stepper = nbagent.step(sc.agent(), "task")
    widget = stepper.widget()
    await click(widget, "run_button")
    assert [r.name for r in stepper.history] == sc.moves
    assert node_states(widget.panel.value)["summarize"] == "current"
    await click(widget, "reset_button")
    assert stepper.status == "ready" and stepper.agent.model_context.messages == []
    assert head(widget.panel.value) == ("0", "", "0")
    assert not widget.next_button.disabled
    await click(widget, "next_button")
    assert head(widget.panel.value) == ("1", "add_messages", "1")


async def test_clicks_while_a_move_runs_are_ignored() -> None:
    agent = AssistantAgent("assistant", ReplayChatCompletionClient(["slow"], latency=0.05))
    stepper = nbagent.step(agent, "task")
    widget = stepper.widget()
    await stepper.run_until(move="message_id")
    widget.next_button.click()
    first = widget.task
    await asyncio.sleep(0)
    assert widget.next_button.disabled and 'data-busy="true"' in widget.status.value
    widget.next_button.click()
    widget.run_button.click()
    widget.reset_button.click()
    assert widget.task is first
    await first
    assert [r.name for r in stepper.history] == ["add_messages", "message_id", "call_llm"]
    assert widget.task is None and not widget.next_button.disabled


async def test_an_error_from_a_button_is_shown_not_lost() -> None:
    agent = AssistantAgent("assistant", ReplayChatCompletionClient(["a"]))
    holder = nbagent.step(agent, "first")
    await holder.next()
    widget = nbagent.step(agent, "second").widget()
    await click(widget, "next_button")
    assert "AgentBusyError" in widget.status.value and widget.error is not None


async def test_model_and_tool_text_is_escaped_everywhere() -> None:
    def echo(value: str) -> str:
        """Echo."""
        return value

    script = [calls(("c1", "echo", '{"value": "' + PAYLOAD.replace('"', '\\"') + '"}'), thought=PAYLOAD), text(PAYLOAD)]
    agent = AssistantAgent(
        "assistant", ReplayChatCompletionClient(script), tools=[echo], max_tool_iterations=2, model_client_stream=True
    )
    stepper = nbagent.step(agent, PAYLOAD)
    pages = [stepper_html(stepper)]
    while not stepper.done:
        await stepper.next()
        pages.append(stepper_html(stepper))
    assert stepper.response is not None and stepper.response.chat_message.content == PAYLOAD
    for page in pages:
        tags = Tags()
        tags.feed(page)
        assert not {"img", "script"} & tags.names and tags.handlers == []
    assert sum("&lt;img src=x onerror=" in page for page in pages) == len(pages)


def edge_states(html: str) -> dict[tuple[str, str], str]:
    found = re.findall(r'<g class="nba-edge-group" data-from="(\w+)" data-to="(\w+)" data-state="(\w+)"', html)
    return {(source, target): state for source, target, state in found}


def test_pipeline_marks_memory_scenarios_unused_exits() -> None:
    # The unused moves are those the agent's loop_settings make impossible (records.MOVES): an agent
    # without memory never queries it (the hand-drawn diagram left "memory" idle).
    stepper = NotebookStepper(scenario("one_tool_reflect_on").agent(), "task")
    states = node_states(pipeline_html(stepper))
    assert states == {
        "add_messages": "upcoming", "memory": "unused", "message_id": "idle", "call_llm": "idle",
        "text_exit": "idle", "tool_request": "idle", "tool_execution": "idle", "handoff_check": "unused",
        "next_llm_call": "unused", "summarize": "unused", "reflect": "idle",
    }  # fmt: skip
    edges = edge_states(pipeline_html(stepper))
    assert [key for key, state in edges.items() if state == "idle"] == [
        ("add_messages", "message_id"), ("message_id", "call_llm"), ("call_llm", "text_exit"),
        ("call_llm", "tool_request"), ("text_exit", "end"), ("tool_request", "tool_execution"),
        ("tool_execution", "reflect"), ("reflect", "end"),
    ]  # fmt: skip
    memory = NotebookStepper(scenario("memory_hit").agent(), "task")
    assert node_states(pipeline_html(memory))["memory"] == "idle"
    assert edge_states(pipeline_html(memory))[("add_messages", "message_id")] == "unused"


def test_diagram_has_every_edge_of_moves_and_marks_the_walk() -> None:
    from nbagent.records import MOVES

    stepper = NotebookStepper(scenario("handoff_and_tool").agent(), "task")
    edges = edge_states(pipeline_html(stepper))
    assert list(edges) == [(name, edge.target) for name, info in MOVES.items() for edge in info.edges]
    assert edges[("tool_execution", "handoff_check")] == "idle"
    assert edges[("tool_execution", "next_llm_call")] == "unused"  # with handoffs the check comes first
    assert edges[("handoff_check", "end")] == "idle"


async def test_walked_edges_are_taken() -> None:
    sc = scenario("keeps_calling_limit_3")
    stepper = nbagent.step(sc.agent(), "task")
    await stepper.run_to_end()
    edges = edge_states(pipeline_html(stepper))
    walked = {*zip(sc.moves, sc.moves[1:]), (sc.moves[-1], "end")}
    assert {key for key, state in edges.items() if state == "taken"} == walked


async def test_a_click_from_another_thread_runs_on_the_widgets_loop() -> None:
    stepper = nbagent.step(scenario("plain_text").agent(), "task")
    widget = stepper.widget()

    def click_in_thread() -> object:
        return widget.click(stepper.next)  # what the Next button does

    future = await asyncio.to_thread(click_in_thread)
    assert isinstance(future, concurrent.futures.Future)
    await asyncio.wrap_future(future)
    assert [r.name for r in stepper.history] == ["add_messages"]
    assert head(widget.panel.value) == ("1", "add_messages", "1")


def test_a_click_without_any_event_loop_says_so() -> None:
    stepper = nbagent.step(scenario("plain_text").agent(), "task")
    widget = stepper.widget()
    widget.next_button.click()
    assert widget.task is None and stepper.history == []
    assert "no running event loop" in widget.status.value


async def test_displayed_as_its_static_copy_then_the_widget_the_copy_following_each_move() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shown: list[tuple[dict[str, object], dict[str, object]]] = []
    published = shell.display_pub.publish

    def publish(data: dict[str, object], metadata: dict[str, object] | None = None, **kwargs: object) -> None:
        shown.append((data, kwargs))

    shell.display_pub.publish = publish  # type: ignore[method-assign]
    try:
        stepper = nbagent.step(scenario("plain_text").agent(), "hi")
        stepper._ipython_display_()
        (copy, copy_options), (live, _) = shown
        # The copy first (with a display id), then the widget whose own output holds no copy.
        assert set(copy) == {"text/html", "text/plain"} and copy_options.get("transient")
        assert 'class="nba-stepper nba-static-copy"' in str(copy["text/html"])
        assert set(live) == {"application/vnd.jupyter.widget-view+json", "text/plain"} and live["text/plain"] == ""
        assert "nba-stepper-live" in stepper.widget()._dom_classes  # noqa: SLF001 ipywidgets' CSS classes
        await stepper.next()
        data, options = shown[-1]
        assert options.get("update") is True and set(data) == {"text/html", "text/plain"}
        assert head(str(data["text/html"])) == ("1", "add_messages", "1")
        assert "(a saved copy: run the cell to step it)" in str(data["text/html"])
    finally:
        shell.display_pub.publish = published  # type: ignore[method-assign]
        InteractiveShell.clear_instance()


async def test_a_click_made_against_a_state_already_moved_past_is_ignored() -> None:
    """The second click of a double click: the browser flipped the button it showed pressed back
    (``value`` False, what the kernel already has), so no second move; a new click is one."""
    agent = AssistantAgent("assistant", ReplayChatCompletionClient(["a"]))
    stepper = nbagent.step(agent, "task")
    widget = stepper.widget()
    button = widget.next_button
    button.set_state({"value": True})  # the first click, as the browser sends it
    assert widget.task is not None and button.value is False  # taken, and shown off again
    await widget.task
    assert len(stepper.history) == 1 and widget.task is None and not button.disabled
    button.set_state({"value": False})  # the second click, made before the browser saw the first taken
    assert widget.task is None and len(stepper.history) == 1
    button.set_state({"value": True})  # a new click, against the state the browser now shows
    assert widget.task is not None
    await widget.task
    assert len(stepper.history) == 2


def open_models() -> dict[str, object]:
    """The widget models alive in this process (ipywidgets' registry, by model id; a closed widget leaves it)."""
    from ipywidgets.widgets import widget

    return dict(widget._instances)  # noqa: SLF001 (ipywidgets' registry of open models; no public reader)


async def test_a_stepper_widget_opens_far_fewer_widget_models() -> None:
    """Issue 43.2: a live stepper kept 74 widget models (each widget's own layout and style among them), 47 at
    the start of this issue's second part. Now its widgets share one layout and one style of each kind, the
    head (stylesheet, a fork's title, a replay's note) and the panel (diagram and move) are one HTML each, every
    button is a ClickButton (one style), and what is hidden until needed is made when first needed: the give
    row (at the first pause before a model call or the tools), predict mode's panel (when it is first on),
    Compare with parent (a fork's alone), the box of forks (at the first fork). Closed, every model it made goes,
    those made and not shown now too."""
    before = set(open_models())
    stepper = nbagent.step(scenario("one_tool_reflect_off").agent(), "2 + 3?")
    widget = stepper.widget()
    made = {key: type(model).__name__ for key, model in open_models().items() if key not in before}
    # The stepper's VBox, the shared layout, HTML style and toggle style; the head, the bar, Next, Run to end,
    # Pause, Reset, Fork here, Predict, the status; the panel; the fork panel, its What if row, its four What if
    # buttons and its note.
    assert sorted(made.values()) == sorted(
        ["StepperWidget", "Layout", "HTMLStyle", "ToggleButtonStyle", "HTML", "HBox", *["ClickButton"] * 5]
        + ["ToggleButton", "HTML", "HTML", "ForkPanel", "HBox", *["ClickButton"] * 4, "HTML"]
    ), made
    assert len(made) == 21  # was 47
    most = {}
    for predict in (False, True):  # predict mode's panel: its box, question and choices
        widget.predict_panel.toggle.value = predict
        await click(widget, "reset_button")
        while not stepper.done:
            await click(widget, "next_button")  # every pause: before the model calls, before the tools
            most[predict] = max(most.get(predict, 0), sum(key not in before for key in open_models()))
    fork_panel = widget.fork_panel
    assert fork_panel.give_row is not None and fork_panel.call_id is not None and fork_panel.give_answer is not None
    print(f"widget models of a stepper: {len(made)} at the start; walking a tool call at most {most[False]}, in "
          f"predict mode {most[True]}")  # fmt: skip
    assert most[False] <= 30 and most[True] <= 37, most  # the give row: 9; predict mode: 3 and its choices
    assert fork_panel.detached()  # the answer's widgets are kept, unshown, while the walk is over
    stepper.close_widgets()
    assert set(open_models()) <= before  # every model it made is closed, the ones not shown now too
