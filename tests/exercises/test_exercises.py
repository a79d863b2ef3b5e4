"""The walkthrough's exercise checks (issue 44.2): each check, given the answer solved, left as the notebook
ships it, or wrong, says so with what is right and what is missing, in English and in Chinese; it never
raises for the learner's code."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import numpy
import pytest

import nbagent
from nbagent import (
    AssistantAgent,
    CreateResult,
    FunctionCall,
    ListMemory,
    MemoryContent,
    RequestUsage,
    TextMessage,
    exercises,
)
from nbagent.exercises import EXERCISES, Check, get_weather
from nbagent.stepper import Stepper


def not_implemented(*_: object) -> Any:
    raise NotImplementedError("your code here")


def tool_calls(*calls: FunctionCall) -> CreateResult:
    return CreateResult(
        finish_reason="function_calls", content=list(calls), usage=RequestUsage(prompt_tokens=5, completion_tokens=5)
    )


def metric_memory(content: str = "The user prefers metric units.") -> ListMemory:
    memory = ListMemory()
    asyncio.run(memory.add(MemoryContent(content=content, mime_type="text/plain")))
    return memory


def to_fahrenheit(celsius: float) -> float:
    """Celsius to Fahrenheit."""
    return celsius * 9 / 5 + 32


def untyped_plus_32(celsius):  # type: ignore[no-untyped-def]  # no docstring, no type, the wrong formula
    return celsius + 32


def divides_by_zero(celsius: float) -> float:
    """Celsius to Fahrenheit, wrongly."""
    return celsius / 0


def error_edit(fork: Stepper) -> None:
    fork.give_tool_result(fork.current.tool_calls[0].id, error="the weather service is down")


PARIS = FunctionCall(id="c1", name="get_weather", arguments='{"city": "Paris"}')

# Per exercise: a solved answer, and wrong answers with the sentence each gets among what is missing.
SOLVED: list[object] = [
    "What is my name?",
    metric_memory(),
    lambda chunks: chunks[0].full_message_id,
    lambda model: AssistantAgent("a", model, tools=[get_weather], system_message="You answer weather questions."),
    [tool_calls(PARIS), "It is 12 °C in Paris."],
    to_fahrenheit,
    error_edit,
]
WRONG: list[list[tuple[object, str]]] = [
    [
        (
            [
                TextMessage(content="Hi, I'm Ada.", source="user"),
                TextMessage(content="What is my name?", source="user"),
            ],
            '"Hi, I\'m Ada." is in the context 2 times: pass only the new message',
        ),
        ("What was my name?", "the context does not hold 'What is my name?' once: pass it as the task"),
        (42, "agent.run(task=second_turn) raised TypeError: AssistantAgent.run: task must be"),
    ],
    [
        (ListMemory(), "your memory gave no hit: add a MemoryContent to it"),
        (metric_memory("The user likes tea."), "no system message of the request mentions metric units"),
        ("metric", "AssistantAgent(memory=[memory]) raised TypeError: memory[0] must be a Memory"),
    ],
    [
        (lambda chunks: chunks[0].id, "not the answer's id: read a chunk's full_message_id"),
        (lambda chunks: chunks[99], "find_id(chunks) raised IndexError"),
        (lambda chunks: numpy.array(chunks), "not the answer's id"),  # an array's == is no bool: not compared
    ],
    [
        (lambda model: AssistantAgent("a", model), "the request's system message does not mention the weather"),
        (lambda model: AssistantAgent("a", model), "the model is offered none, not get_weather"),
        (lambda model: "agent", "make_agent(model) returned str, not an AssistantAgent"),
        (
            lambda model: AssistantAgent("a", nbagent.ReplayChatCompletionClient(["hi"])),
            "the model given to make_agent was never called",
        ),
    ],
    [
        (["It is 12 °C."], "no get_weather call: the first answer must be tool calls, not a text"),
        ([tool_calls(PARIS)], "the run failed: ReplayExhaustedError"),
        ([tool_calls(PARIS), tool_calls(PARIS)], "next_llm_call → tool_request → tool_execution → summarize; expected"),
        ("not a script", "ReplayChatCompletionClient(script) raised"),
        (
            [tool_calls(FunctionCall(id="c1", name="weather", arguments='{"city": "Paris"}')), "It is 12 °C."],
            "the model called weather, not get_weather: call the agent's tool by its name",
        ),
        (
            [tool_calls(FunctionCall(id="c1", name="get_weather", arguments='{"town": "Paris"}')), "It is 12 °C."],
            "get_weather got an error result: Error: arguments for tool 'get_weather' do not match its schema",
        ),
    ],
    [
        (untyped_plus_32, "it has no docstring: the model would read no description of it"),
        (untyped_plus_32, "the schema has no number parameter celsius"),
        (untyped_plus_32, "called with celsius=21 it returned '53', not 69.8"),
        (divides_by_zero, "the tool gave an error result: Error: ZeroDivisionError"),
    ],
    [
        (lambda fork: None, "the fork was not changed: call fork.give_tool_result(call_id, error=...)"),
        (
            lambda fork: fork.give_tool_result(fork.current.tool_calls[0].id, "sunny"),
            "the fork's tool call got a result, not an error",
        ),
        (lambda fork: fork.give_answer("hi"), "edit(fork) raised RuntimeError"),
    ],
]
UNSOLVED = [..., ..., not_implemented, not_implemented, ..., not_implemented, not_implemented]


@pytest.fixture
def chinese() -> Iterator[None]:
    nbagent.set_language("zh")
    try:
        yield
    finally:
        nbagent.set_language("en")


def check_of(number: int) -> Callable[[Any], Check]:
    return EXERCISES[number - 1][1]


def test_seven_exercises_one_per_step_and_two_for_the_tool_loop() -> None:
    titles = [title for title, _ in EXERCISES]
    assert [title.split(" · ")[1].split(",")[0] for title in titles] == [
        *(f"STEP {n}" for n in range(1, 6)),
        "the tool loop",
        "the tool loop",
    ]


@pytest.mark.parametrize("number", range(1, 8))
def test_a_solved_exercise_is_done_with_what_is_right(number: int) -> None:
    result = check_of(number)(SOLVED[number - 1])
    assert result.done, result
    assert result.right and not result.missing
    assert str(result).startswith(f"✓ Exercise {number} · ") and ": done\n" in str(result)


@pytest.mark.parametrize("number", range(1, 8))
def test_an_unsolved_exercise_is_not_done_yet_and_says_what_to_do(number: int) -> None:
    for answer in (UNSOLVED[number - 1], ...):
        result = check_of(number)(answer)
        assert result.status == "not done yet" and not result.done
        assert len(result.missing) == 1 and not result.right
        assert str(result).startswith(f"… Exercise {number} · ") and ": not done yet\n  ✗ " in str(result)


@pytest.mark.parametrize("number", range(1, 8))
def test_a_wrong_answer_says_what_is_missing_and_raises_nothing(number: int) -> None:
    for answer, sentence in WRONG[number - 1]:
        result = check_of(number)(answer)
        assert result.status == "not right yet", (answer, result)
        assert any(sentence in missing for missing in result.missing), (sentence, result)


def test_a_partly_right_answer_says_both() -> None:
    result = check_of(1)(WRONG[0][0][0])
    assert result.right == ("the new question is in the context once",)
    assert result.missing == ('"Hi, I\'m Ada." is in the context 2 times: pass only the new message',)


@pytest.mark.usefixtures("chinese")
def test_checks_speak_the_notebooks_language() -> None:
    assert str(check_of(6)(to_fahrenheit)).startswith("✓ 练习 6 · 工具循环,写一个工具: 完成")
    assert (
        str(check_of(1)(...)) == "… 练习 1 · STEP 1,上下文: 还没做\n  ✗ 把 second_turn 设成第二次调用的 task:只放新消息"
    )
    wrong_tool = [tool_calls(FunctionCall(id="c1", name="weather", arguments="{}")), "It is 12 °C."]
    assert "模型调用的是 weather,不是 get_weather" in str(check_of(5)(wrong_tool))
    wrong = check_of(4)(lambda model: AssistantAgent("a", model))
    assert "还不对" in str(wrong) and "模型拿到的工具是 无,没有 get_weather" in str(wrong)


def test_a_check_shows_as_its_sentences_in_ipython() -> None:
    from IPython.lib.pretty import pretty

    result = check_of(7)(error_edit)
    assert pretty(result) == str(result) == repr(result)
    assert "tool call w1 given an error ('the weather service is down')" in str(result)


def test_a_tool_that_never_returns_is_not_right_yet_within_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exercises, "DEADLINE", 0.5)

    async def to_fahrenheit(celsius: float) -> float:
        """Celsius to Fahrenheit, after a very long wait."""
        await asyncio.sleep(3600)
        return celsius

    result = check_of(6)(to_fahrenheit)
    assert result.status == "not right yet"
    assert result.missing == (
        "the agent's run of to_fahrenheit raised TimeoutError: it did not finish within 0.5 s",
    ), result


def test_an_async_edit_of_the_fork_is_awaited() -> None:
    async def edit(fork: Stepper) -> None:
        error_edit(fork)

    assert check_of(7)(edit).done


async def test_a_check_runs_inside_a_running_event_loop_as_a_notebook_cell_does() -> None:
    assert check_of(5)(SOLVED[4]).done
