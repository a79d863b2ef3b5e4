"""The stepper widget's Fork here button and its fork panel, without a browser."""

from __future__ import annotations

import html

import pytest

import nbagent
from nbagent import AssistantAgent, ReplayChatCompletionClient
from nbagent.notebook.stepper_widget import NotebookStepper, StepperWidget, stepper_html

from ..stepper.scenarios import add, calls

TASK = "What is 2 + 3?"


async def click(widget: StepperWidget, button: object) -> None:
    button.click()  # type: ignore[attr-defined]
    assert widget.task is not None
    await widget.task


def walk() -> NotebookStepper:
    agent = AssistantAgent(
        "assistant",
        ReplayChatCompletionClient([calls(("c1", "add", '{"a": 2, "b": 3}')), "It is 5."]),
        tools=[add],
        reflect_on_tool_use=True,
    )
    stepper = nbagent.step(agent, TASK)
    assert isinstance(stepper, NotebookStepper)
    return stepper


async def test_fork_here_shows_the_fork_whose_tool_result_is_edited_then_compared() -> None:
    stepper = walk()
    widget = stepper.widget()
    panel = widget.fork_panel
    assert panel.fork_button in widget.bar.children  # in the bar, next to Next / Run to end / Reset
    for _ in range(4):
        await click(widget, widget.next_button)  # paused before tool_execution
    assert panel.give_row is not None and panel.call_id is not None and panel.value is not None
    assert panel.give_row.children[:2] == (panel.call_id, panel.value) and list(panel.call_id.options) == ["c1"]
    await click(widget, panel.fork_button)
    [fork_widget] = panel.forks.children
    assert isinstance(fork_widget, StepperWidget)
    fork = fork_widget.stepper
    assert fork.parent is stepper and len(fork.history) == 4
    fork_panel = fork_widget.fork_panel
    fork_panel.value.value = "Error: <b>service down</b>"
    fork_panel.give_error.click()
    assert "c1 will get: error" in fork_panel.note.value and "<b>" not in fork_panel.note.value
    await click(fork_widget, fork_widget.run_button)
    assert fork.status == "finished"
    [result] = fork.history[4].tool_results
    assert (result.content, result.is_error) == ("Error: <b>service down</b>", True)
    assert panel.compare_button is None and fork_panel.compare_button in fork_panel.children  # a fork's alone
    fork_panel.compare_button.click()
    [compare_widget] = fork_panel.comparison.children
    assert 'data-diverged="true"' in compare_widget.body.value
    assert stepper.status == "paused" and len(stepper.history) == 4  # the parent is where it was
    await click(widget, widget.run_button)
    assert stepper.history[4].tool_results[0].content == "5"


async def test_give_an_answer_from_the_panel_and_bad_input_shows_the_error() -> None:
    stepper = walk()
    widget = stepper.widget()
    panel = widget.fork_panel
    await click(widget, widget.next_button)
    await click(widget, widget.next_button)  # paused before call_llm
    assert panel.give_row is not None and panel.give_row.children == (panel.answer, panel.give_answer)
    assert panel.call_id is None  # the tool call's widgets: made at the first pause before the tools run
    panel.answer.value = "No tools needed."
    panel.give_answer.click()
    await click(widget, widget.run_button)
    assert stepper.response is not None and stepper.response.chat_message.to_text() == "No tools needed."
    assert panel.fork_button.disabled  # a finished walk cannot be forked
    panel.give_answer.click()  # too late: the error is shown, nothing raises
    assert widget.error is not None and "finished" in widget.error


@pytest.mark.parametrize("button", ["give_result", "give_timeout"])
async def test_the_tool_buttons_give_results(button: str) -> None:
    stepper = walk()
    widget = stepper.widget()
    for _ in range(4):
        await click(widget, widget.next_button)
    panel = widget.fork_panel
    panel.value.value = "7"
    getattr(panel, button).click()
    await click(widget, widget.run_button)
    [result] = stepper.history[4].tool_results
    assert result.content == ("7" if button == "give_result" else nbagent.interventions.TIMEOUT_RESULT)


async def test_a_walk_of_a_replay_says_what_a_replay_cannot_reproduce() -> None:
    recorded = walk()
    await recorded.run_to_end()
    run_id = recorded.run_id
    assert run_id is not None and recorded.replay is None
    assert "nba-replay" not in recorded.widget().head.value  # a live walk: no replay note
    replay = recorded.agent.trace.replay(run_id)
    stepper = nbagent.step(replay)
    assert isinstance(stepper, NotebookStepper) and stepper.replay is replay
    widget = stepper.widget()
    assert widget.head in widget.children
    note = widget.head.value
    assert f"replay of run {run_id}" in note and "tool side effects" in note and replay.limits[:40] in note
    assert replay.limits[:40] in stepper_html(stepper)  # the saved notebook's copy says it too
    await stepper.run_until(move="tool_execution")
    fork = await stepper.fork()
    assert fork.replay is replay  # a fork of a replay keeps saying it
    assert isinstance(fork, NotebookStepper) and "a fork of the replay of run" in stepper_html(fork)
    direct = nbagent.Stepper(replay)
    assert direct.replay is replay


async def test_the_static_copy_shows_the_forks_made_with_fork_here() -> None:
    stepper = walk()
    widget = stepper.widget()
    for _ in range(4):
        await click(widget, widget.next_button)  # paused before tool_execution
    assert "Fork of run" not in stepper_html(stepper)
    await click(widget, widget.fork_panel.fork_button)
    [fork_widget] = widget.fork_panel.forks.children
    fork = fork_widget.stepper
    assert stepper.shown_forks == [fork]
    fork.give_tool_result("c1", error="Error: <b>service down</b>")
    await click(fork_widget, fork_widget.run_button)
    copy = stepper_html(stepper)  # the saved notebook's copy of the parent: the fork below it, to its end
    assert "at move 4: tool call c1 given an error" in copy and "service down" in copy
    assert "<b>service down</b>" not in copy
    # One copy to show in the output (the parent's), the fork's nested in it as its own titled panel.
    assert copy.count('class="nba-stepper nba-static-copy"') == 1 and copy.count("nba-stepper nba-fork-walk") == 1
    assert "Fork of run" in stepper_html(fork)  # the fork's own copy says it is one too


async def test_a_fork_is_a_titled_nested_panel_and_the_parents_forked_move_sends_changes_to_it() -> None:
    """Issue 43.3: the fork was drawn under the parent's Give result / Give error / Timeout row with the same
    buttons and status, nothing saying "fork" until its Compare with parent; a change typed above the fork's
    buttons and given with the first Give error changed the parent. Now the fork is its own titled panel
    (nested, its controls inside), the parent's give buttons for the forked move are disabled and say why,
    and the static copy shows the same."""
    stepper = walk()
    widget = stepper.widget()
    panel = widget.fork_panel
    for _ in range(4):
        await click(widget, widget.next_button)  # paused before tool_execution
    assert 'class="nba-fork-title"' not in widget.head.value and "nba-fork-walk" not in widget._dom_classes  # noqa: SLF001
    await click(widget, panel.fork_button)
    [fork_widget] = panel.forks.children
    run = str(stepper.run_id)
    assert "nba-fork-walk" in fork_widget._dom_classes  # noqa: SLF001 (ipywidgets' CSS classes, no reader)
    assert f"Fork of run {run[:8]} at move 4: no change yet" in fork_widget.head.value
    assert f'title="{run}"' in fork_widget.head.value
    # The parent's buttons for the forked move: disabled, and the note says where the change goes.
    assert all(b.disabled for b in (panel.give_result, panel.give_error, panel.give_timeout, panel.give_answer))
    assert "this move was forked" in panel.note.value
    fork_panel = fork_widget.fork_panel
    assert not fork_panel.give_error.disabled
    fork_panel.value.value = "service <b>down</b>"
    fork_panel.give_error.click()
    title = html.unescape(fork_widget.head.value)
    assert "at move 4: tool call c1 given an error ('service <b>down</b>')" in title, title
    assert "<b>" not in fork_widget.head.value  # what was typed is escaped
    copy = stepper_html(stepper)
    assert copy.count('class="nba-stepper nba-static-copy"') == 1 and 'class="nba-stepper nba-fork-walk"' in copy
    assert f"Fork of run {run[:8]} at move 4: tool call c1 given an error" in copy
    # Forking again at a later move: this move has no fork, its buttons work again.
    await click(widget, widget.next_button)
    assert not panel.give_answer.disabled and "this move was forked" not in panel.note.value
