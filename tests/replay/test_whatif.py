"""What-if questions (issue 44.3): each is a fork made where the change first matters, changed and walked to its
end in one call (one click in the widget); the walk asked about is untouched; the comparison says what changed
in words; ``Stepper.fork(at=, max_tool_iterations=, reflect_on_tool_use=)`` underneath."""

from __future__ import annotations

import pytest

import nbagent
from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient, RequestUsage
from nbagent.notebook.compare_view import compare
from nbagent.notebook.stepper_widget import NotebookStepper, stepper_html
from nbagent.stepper import Stepper, StepperFinished
from nbagent.whatif import FAILURE, ask, what_ifs

JACKET = "It is 12 °C and cloudy in Paris: take a jacket."


def get_weather(city: str) -> str:
    """Current weather of a city."""
    return {"Paris": "12 °C, cloudy"}.get(city, "unknown city")


def get_humidity(city: str) -> str:
    """Current humidity of a city."""
    return "80 %"


def tool_calls(*calls: FunctionCall) -> CreateResult:
    return CreateResult(
        finish_reason="function_calls", content=list(calls), usage=RequestUsage(prompt_tokens=5, completion_tokens=5)
    )


PARIS = FunctionCall(id="c1", name="get_weather", arguments='{"city": "Paris"}')


def jacket_agent(**options: object) -> AssistantAgent:
    model = ReplayChatCompletionClient([tool_calls(PARIS), JACKET, "A third answer."])
    options = {"tools": [get_weather], "reflect_on_tool_use": True, **options}
    return AssistantAgent("assistant", model, **options)  # type: ignore[arg-type]


async def finished_walk(**options: object) -> Stepper:
    walk = Stepper(jacket_agent(**options), "Do I need a jacket today?")
    await walk.run_to_end()
    return walk


def sentences(walk: Stepper, fork: Stepper) -> list[str]:
    return compare(walk, fork, labels=("walk", "fork")).sentences()


async def test_what_can_be_asked_follows_the_walk() -> None:
    walk = Stepper(jacket_agent(), "Do I need a jacket today?")
    assert [(w.key, w.at) for w in what_ifs(walk)] == [
        ("tool_fails", None),
        ("second_tool", None),
        ("iteration_limit", None),
        ("reflection", None),
    ]
    assert what_ifs(walk)[0].why_not == "the model has not asked for a tool yet: walk on to STEP 5's tool request"
    await walk.run_until(move="tool_request")  # paused before the tools run
    asked = {w.key: w for w in what_ifs(walk)}
    assert asked["tool_fails"].at == 4 and asked["second_tool"].at == 2
    assert asked["iteration_limit"].question == "What if the iteration limit is 2?"  # the agent's is 1
    assert asked["reflection"].question == "What if reflection is off?"
    await walk.run_to_end()
    assert [w.at for w in what_ifs(walk)] == [4, 2, 5, 5]  # a finished walk can still be asked


async def test_the_tool_fails() -> None:
    walk = await finished_walk()
    before = [r.name for r in walk.history]
    fork = await ask(walk, "tool_fails")
    assert [r.name for r in walk.history] == before and walk.status == "finished"  # untouched
    assert fork.status == "finished" and fork.what_if == "What if the tool fails?"
    result = next(r for r in fork.history if r.name == "tool_execution").tool_results[0]
    assert result.is_error and result.content == FAILURE
    assert fork.response is not None and fork.response.chat_message.content == JACKET  # the same scripted reflection
    said = sentences(walk, fork)
    assert said[0] == f"At move 5, get_weather gives walk the result '12 °C, cloudy' and fork an error '{FAILURE}'."
    assert said[-1] == f"Both end with the same answer: '{JACKET}'"


async def test_the_model_calls_a_second_tool_another_one_when_it_can() -> None:
    walk = await finished_walk(tools=[get_weather, get_humidity])
    fork = await ask(walk, "second_tool")
    batch = next(r for r in fork.history if r.name == "tool_execution")
    assert [call.name for call in batch.tool_calls] == ["get_weather", "get_humidity"]
    assert fork.changes == ["the model also calls get_humidity"]
    assert fork.response is not None and fork.response.chat_message.content == JACKET  # the script's next answer
    said = sentences(walk, fork)
    assert said[0].startswith("At move 3 (STEP 4 · Call the LLM) a change was made: answer before move 3")
    assert "Model calls: walk 2, fork 2; tool calls: walk 1, fork 2." in said

    alone = await finished_walk()  # one tool: it is called twice
    fork = await ask(alone, "second_tool")
    batch = next(r for r in fork.history if r.name == "tool_execution")
    assert [(call.id, call.name) for call in batch.tool_calls] == [("c1", "get_weather"), ("c1-whatif", "get_weather")]


async def test_the_iteration_limit_and_reflection() -> None:
    walk = await finished_walk()
    fork = await ask(walk, "iteration_limit")
    assert fork.agent.max_tool_iterations == 2 and walk.agent.max_tool_iterations == 1
    assert [r.name for r in fork.history][-2:] == ["next_llm_call", "text_exit"]
    assert fork.changes == ["max_tool_iterations=2"]
    assert sentences(walk, fork)[0] == (
        "At move 6, walk goes to STEP 5 · Reflect on the tool results and fork to STEP 5 · Call the LLM again with "
        "the results."
    )
    fork = await ask(walk, "reflection")
    assert [r.name for r in fork.history][-1] == "summarize" and fork.changes == ["reflect_on_tool_use=False"]
    said = sentences(walk, fork)
    assert "Model calls: walk 2, fork 1; tool calls: walk 1, fork 1." in said
    assert said[-1] == f"walk answers '{JACKET}'; fork answers '12 °C, cloudy'"

    looping = await finished_walk(max_tool_iterations=3)
    limited = await ask(looping, "iteration_limit")
    assert limited.what_if == "What if the iteration limit is 1?" and limited.agent.max_tool_iterations == 1


async def test_a_finished_walk_is_not_asked_what_could_not_have_changed_it() -> None:
    """A question whose fork would make the same run again (the setting never came into play) says why not."""
    texted = Stepper(AssistantAgent("assistant", ReplayChatCompletionClient(["Hello."]), tools=[get_weather]), "Hi")
    await texted.run_to_end()
    asked = {w.key: w for w in what_ifs(texted)}
    assert asked["iteration_limit"].at is None and asked["reflection"].at is None
    assert asked["iteration_limit"].why_not == (
        "the model asked for no tool in this walk: the iteration limit never came into play"
    )
    with pytest.raises(RuntimeError, match="iteration limit never came into play"):
        await ask(texted, "iteration_limit")

    looped = await finished_walk(max_tool_iterations=3, reflect_on_tool_use=False)  # tools, then a text exit
    asked = {w.key: w for w in what_ifs(looped)}
    assert asked["reflection"].at is None and asked["iteration_limit"].at == 5
    assert asked["reflection"].why_not == (
        "this walk ended before its tool loop was used up: reflect_on_tool_use never came into play"
    )
    limited = await ask(looped, "iteration_limit")
    assert sentences(looped, limited) != ["walk and fork make the same moves with the same results."]

    handoff = FunctionCall(id="h1", name="transfer_to_bob", arguments="{}")
    model = ReplayChatCompletionClient([tool_calls(handoff), "unused"])
    handed = Stepper(AssistantAgent("assistant", model, tools=[get_weather], handoffs=["bob"]), "Weather?")
    await handed.run_to_end()
    asked = {w.key: w for w in what_ifs(handed)}
    assert asked["iteration_limit"].at is None and asked["reflection"].at is None
    assert "handed off after its first tool batch" in asked["iteration_limit"].why_not
    nbagent.set_language("zh")
    try:
        assert what_ifs(handed)[3].why_not.startswith("这次运行在工具循环用完之前就结束了")
    finally:
        nbagent.set_language("en")

    paused = Stepper(jacket_agent(max_tool_iterations=3), "Do I need a jacket today?")
    await paused.run_until(move="tool_request")  # not over: every setting may still matter
    assert [w.at for w in what_ifs(paused)] == [4, 2, 4, 4]


async def test_a_handoff_is_not_the_tool_that_fails_nor_called_twice() -> None:
    handoff = FunctionCall(id="h1", name="transfer_to_bob", arguments="{}")
    model = ReplayChatCompletionClient([tool_calls(handoff, PARIS), "unused"])
    walk = Stepper(AssistantAgent("assistant", model, tools=[get_weather], handoffs=["bob"]), "Weather?")
    await walk.run_to_end()
    fork = await ask(walk, "tool_fails")
    results = {r.call_id: r for r in next(m for m in fork.history if m.name == "tool_execution").tool_results}
    assert results["c1"].is_error and results["c1"].content == FAILURE  # get_weather fails, not the handoff
    assert not results["h1"].is_error

    only = ReplayChatCompletionClient([tool_calls(handoff), "unused"])
    handed = Stepper(AssistantAgent("assistant", only, tools=[get_weather], handoffs=["bob"]), "Weather?")
    await handed.run_to_end()
    second = what_ifs(handed)[1]
    assert second.at is None and second.why_not.startswith("the model asked only for a handoff")
    with pytest.raises(RuntimeError, match="a second call would be a second handoff"):
        await ask(handed, "second_tool")


async def test_fork_at_an_earlier_move_makes_the_same_run_again() -> None:
    walk = await finished_walk()
    fork = await walk.fork(at=3)  # after call_llm: the client is where the walk's was then
    assert len(fork.history) == 3 and fork.upcoming is not None and fork.upcoming.name == "tool_request"
    await fork.run_to_end()
    assert [r.name for r in fork.history] == [r.name for r in walk.history]
    assert sentences(walk, fork) == ["walk and fork make the same moves with the same results."]


async def test_fork_refuses_what_it_cannot_make_naming_the_parameter() -> None:
    walk = await finished_walk()
    with pytest.raises(StepperFinished, match="fork it at= an earlier move"):
        await walk.fork()
    for at in (0, 7):
        with pytest.raises(ValueError, match=r"Stepper.fork: at must be an int from 1 to 6"):
            await walk.fork(at=at)
    with pytest.raises(TypeError, match="at must be an int"):
        await walk.fork(at="3")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_tool_iterations"):
        await walk.fork(at=3, max_tool_iterations=0)
    with pytest.raises(TypeError, match="reflect_on_tool_use"):
        await walk.fork(at=3, reflect_on_tool_use="no")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"whatif.ask: key must be one of"):
        await ask(walk, "the sky falls")
    fresh = Stepper(jacket_agent(), "hi")
    with pytest.raises(RuntimeError, match="cannot be asked of this walk now: the model has not asked for a tool"):
        await ask(fresh, "tool_fails")
    fork = await walk.fork(at=4)
    assert [w.at for w in what_ifs(fork)][:2] == [4, None]  # before its fork point: ask the parent walk
    assert "ask its parent walk" in what_ifs(fork)[1].why_not


async def test_the_widgets_what_if_buttons_fork_in_one_click() -> None:
    stepper = nbagent.step(jacket_agent(), "Do I need a jacket today?")
    assert isinstance(stepper, NotebookStepper)
    panel = stepper.widget().fork_panel
    buttons = panel.what_if_buttons
    assert all(button.disabled for button in buttons.values())
    assert buttons["tool_fails"].tooltip.startswith("the model has not asked for a tool yet")
    await stepper.run_until(move="tool_request")
    assert not buttons["tool_fails"].disabled and buttons["tool_fails"].description == "What if the tool fails?"
    buttons["tool_fails"].click()
    await stepper.widget().task
    assert stepper.widget().error is None
    (fork,) = stepper.shown_forks
    assert fork.status == "finished" and fork.what_if == "What if the tool fails?"
    assert '<span class="nba-what-if-question">What if the tool fails? </span>Fork of run' in fork.widget().head.value
    comparison = fork.widget().fork_panel.comparison.children[0]
    assert "At move 5, fork also runs get_weather" in comparison.children[2].value  # the sentences, in the view
    copy = stepper_html(stepper)
    assert "What if the tool fails?" in copy and "parent has not answered yet." in copy
    assert stepper.status == "paused" and stepper.upcoming.name == "tool_execution"  # the walk waits where it was
    await stepper.run_to_end()  # the walk goes on: the copy's sentences are read again (they are kept per state)
    copy = stepper_html(stepper)
    assert "parent has not answered yet." not in copy and f"Both end with the same answer: &#x27;{JACKET}" in copy


async def test_the_sentences_speak_the_notebooks_language() -> None:
    walk = await finished_walk()
    fork = await ask(walk, "reflection")
    nbagent.set_language("zh")
    try:
        said = sentences(walk, fork)
        html = compare(walk, fork, labels=("walk", "fork")).html()  # the view's table too
    finally:
        nbagent.set_language("en")
    assert said[0] == (
        "第 6 步,walk 走向 STEP 5 · 再调一次 LLM 生成自然语言总结 (reflect),"
        "fork 走向 STEP 5 · 把工具结果格式化成 ToolCallSummaryMessage。"
    )
    for header in (
        "两次运行在对齐后的第 6 步分开",
        "<th>walk:做了什么</th>",
        "<th>fork:这一步</th>",
        "模型 + 工具秒数",
    ):
        assert header in html, header
    assert "what it did" not in html and "the runs diverge" not in html


async def test_a_trace_replays_walk_is_asked_too_its_recorded_model_moved_past_the_replaced_answer() -> None:
    agent = jacket_agent()
    await agent.run(task="Do I need a jacket today?")
    walk = Stepper(agent.trace.replay(str(agent.trace.runs_df()["run_id"].iloc[-1])))
    await walk.run_to_end()
    fork = await ask(walk, "second_tool")
    assert fork.status == "finished", fork.history[-1].error
    assert fork.response is not None and fork.response.chat_message.content == JACKET  # the recorded reflection
    assert walk.agent.model_client.position == 2  # type: ignore[attr-defined]  # the walk's own: untouched
