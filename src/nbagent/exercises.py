"""The walkthrough's exercises: each check runs the learner's answer on the replay model and says what is
right and what is missing, in the notebook's language (:func:`nbagent.set_language`).

Each ``check_*`` function takes what the learner completed (a value, a function, a tool, a fork's edit)
and returns a :class:`Check`; it never raises for the learner's code: an answer left as the notebook
ships it (``...``, or a function that raises ``NotImplementedError``) is "not done yet", an answer that
raises or does something else is "not right yet" with what to change. No key, no network: every model
here is a :class:`~nbagent.models.replay.ReplayChatCompletionClient` with a script of its own.

===========================  =========  ============================================================
check                        STEP       what the learner completes
===========================  =========  ============================================================
:func:`check_context`        1          the messages of a second call (only the new one)
:func:`check_memory`         2          a memory holding a fact the model must be sent
:func:`check_message_id`     3          a function that finds the message id streamed chunks build
:func:`check_request`        4          an agent whose request has a system message and a tool
:func:`check_branches`       5          a replay script that takes the tool branch, then the text exit
:func:`check_tool`           tool loop  a tool the loop calls (its schema from its signature)
:func:`check_fork`           tool loop  a fork's edit: the tool fails, what does the loop do?
===========================  =========  ============================================================
"""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from .agent import AssistantAgent
from .language import words
from .messages import (
    CreateResult,
    FunctionCall,
    LLMMessage,
    MemoryQueryEvent,
    ModelClientStreamingChunkEvent,
    RequestUsage,
    SystemMessage,
    TextMessage,
    UserMessage,
)
from .models.replay import ReplayChatCompletionClient
from .stepper import Stepper
from .sync import run_coroutine
from .tools import FunctionTool

__all__ = [
    "EXERCISES",
    "Check",
    "check_branches",
    "check_context",
    "check_fork",
    "check_memory",
    "check_message_id",
    "check_request",
    "check_tool",
]

T = TypeVar("T")
Status = Literal["done", "not done yet", "not right yet"]
DEADLINE = 30.0
"""Seconds a check waits for a run of the learner's code (a tool or a memory that never returns): then it is
"not right yet", and the cell is free again."""
_MARKS = {"done": "✓", "not done yet": "…", "not right yet": "✗"}


@dataclass(frozen=True)
class Check:
    """What a check found: ``status`` (``"done"``, ``"not done yet"``, ``"not right yet"``), what is
    right and what is missing or wrong (each a sentence in the notebook's language)."""

    exercise: str
    status: Status
    right: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()

    @property
    def done(self) -> bool:
        return self.status == "done"

    def __str__(self) -> str:
        head = f"{_MARKS[self.status]} {self.exercise}: {words(self.status)}"
        lines = [head, *(f"  ✓ {text}" for text in self.right), *(f"  ✗ {text}" for text in self.missing)]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))  # IPython shows the sentences, not a dataclass


@dataclass
class _Found:
    """What a check collects: sentences of what is right and what is missing."""

    right: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def expect(self, ok: bool, right: str, missing: str) -> bool:
        (self.right if ok else self.missing).append(right if ok else missing)
        return ok

    def check(self, exercise: str) -> Check:
        status: Status = "not right yet" if self.missing else "done"
        return Check(exercise, status, tuple(self.right), tuple(self.missing))


def _title(number: int) -> str:
    return words(EXERCISES[number - 1][0])


def _not_done(number: int, what: str) -> Check:
    return Check(_title(number), "not done yet", missing=(what,))


def _raised(number: int, what: str, error: BaseException) -> Check:
    text = words("{what} raised {error}").format(what=what, error=f"{type(error).__name__}: {error}")
    return Check(_title(number), "not right yet", missing=(text,))


def _run(factory: Callable[[], Awaitable[T]]) -> T:
    """:func:`~nbagent.sync.run_coroutine` within :data:`DEADLINE` (a ``TimeoutError`` saying so)."""

    async def bounded() -> T:
        try:
            return await asyncio.wait_for(factory(), DEADLINE)
        except TimeoutError:
            text = words("it did not finish within {seconds:g} s").format(seconds=DEADLINE)
            raise TimeoutError(text) from None

    return run_coroutine(bounded)


def _unfinished(answer: object) -> bool:
    """An answer as the notebook ships it: ``...`` (or ``None``)."""
    return answer is ... or answer is None


def _calls(*calls: FunctionCall) -> CreateResult:
    return CreateResult(
        finish_reason="function_calls", content=list(calls), usage=RequestUsage(prompt_tokens=50, completion_tokens=10)
    )


def get_weather(city: str) -> str:
    """Current weather of a city."""
    return {"Paris": "12 °C, cloudy", "Tokyo": "18 °C, sunny"}.get(city, "unknown city")


def _texts(messages: Sequence[LLMMessage], kind: type[Any]) -> list[str]:
    return [m.content for m in messages if isinstance(m, kind) and isinstance(m.content, str)]


# ---------------------------------------------------------------------------------------------- STEP 1

FIRST, SECOND = "Hi, I'm Ada.", "What is my name?"


def check_context(second_turn: object) -> Check:
    """STEP 1: ``second_turn`` is the ``task`` of the second call after ``run(task="Hi, I'm Ada.")``:
    only the new message ``"What is my name?"`` (a text, a ``TextMessage`` or a list of them)."""
    if _unfinished(second_turn):
        return _not_done(1, words("set second_turn to the task of the second call: only the new message"))
    agent = AssistantAgent("assistant", ReplayChatCompletionClient(["Nice to meet you, Ada.", "Your name is Ada."]))
    try:
        _run(lambda: agent.run(task=FIRST))
        _run(lambda: agent.run(task=second_turn))  # type: ignore[arg-type]
    except Exception as error:
        return _raised(1, "agent.run(task=second_turn)", error)
    said = _texts(agent.model_context.messages, UserMessage)
    found = _Found()
    found.expect(
        said.count(SECOND) == 1,
        words("the new question is in the context once"),
        words("the context does not hold {text!r} once: pass it as the task").format(text=SECOND),
    )
    found.expect(
        said.count(FIRST) == 1,
        words("the first turn is in the context once: the context remembers it"),
        words("{text!r} is in the context {count} times: pass only the new message").format(
            text=FIRST, count=said.count(FIRST)
        ),
    )
    return found.check(_title(1))


# ---------------------------------------------------------------------------------------------- STEP 2

FACT = "metric"


def check_memory(memory: object) -> Check:
    """STEP 2: ``memory`` is a memory store (a ``ListMemory``) whose hits tell the model the user prefers
    metric units: STEP 2 queries it and the model's request holds the fact."""
    if _unfinished(memory):
        return _not_done(2, words("set memory to a ListMemory holding the fact 'The user prefers metric units.'"))
    model = ReplayChatCompletionClient(["It is 21 °C."])
    try:
        agent = AssistantAgent("assistant", model, memory=[memory])  # type: ignore[list-item]
        result = _run(lambda: agent.run(task="How warm is it in Paris?"))
    except Exception as error:
        return _raised(2, "AssistantAgent(memory=[memory])", error)
    found = _Found()
    found.expect(
        any(isinstance(message, MemoryQueryEvent) for message in result.messages),
        words("STEP 2 queried your memory and it answered (a MemoryQueryEvent)"),
        words("your memory gave no hit: add a MemoryContent to it"),
    )
    sent = _texts(model.requests[0].messages if model.requests else [], SystemMessage)
    found.expect(
        any(FACT in text.lower() for text in sent),
        words("the model's request holds the fact about metric units"),
        words("no system message of the request mentions metric units: the fact is not in your memory"),
    )
    return found.check(_title(2))


# ---------------------------------------------------------------------------------------------- STEP 3


def check_message_id(find_id: object) -> Check:
    """STEP 3: ``find_id(chunks)`` returns the id of the message that streamed chunks build (each chunk
    says it: ``full_message_id``), drawn before the model was called."""
    if _unfinished(find_id) or not callable(find_id):
        return _not_done(3, words("define find_id(chunks) returning the id of the message the chunks build"))
    agent = AssistantAgent(
        "assistant", ReplayChatCompletionClient(["Streaming sends the answer word by word."]), model_client_stream=True
    )

    async def walk() -> tuple[list[ModelClientStreamingChunkEvent], TextMessage]:
        chunks, answer = [], None
        async for item in agent.run_stream(task="How does streaming work?"):
            if isinstance(item, ModelClientStreamingChunkEvent):
                chunks.append(item)
            elif isinstance(item, TextMessage) and item.source == "assistant":
                answer = item
        assert answer is not None
        return chunks, answer

    chunks, answer = _run(walk)
    try:
        found_id = find_id(list(chunks))
    except NotImplementedError:
        return _not_done(3, words("define find_id(chunks) returning the id of the message the chunks build"))
    except Exception as error:
        return _raised(3, "find_id(chunks)", error)
    found = _Found()
    found.expect(
        isinstance(found_id, str) and found_id == answer.id,  # anything else (an array...) is compared by no __eq__
        words("the id is the answer's: every chunk named it before the answer existed"),
        words("find_id returned {got!r}, not the answer's id: read a chunk's full_message_id").format(got=found_id),
    )
    return found.check(_title(3))


# ---------------------------------------------------------------------------------------------- STEP 4

TOOL = "get_weather"


def check_request(make_agent: object) -> Check:
    """STEP 4: ``make_agent(model)`` builds an ``AssistantAgent`` on ``model`` whose request starts with a
    system message about the weather and offers the tool ``get_weather``."""
    if _unfinished(make_agent) or not callable(make_agent):
        return _not_done(4, words("define make_agent(model) returning an AssistantAgent on that model"))
    model = ReplayChatCompletionClient(["I can look that up."])
    try:
        agent = make_agent(model)
    except NotImplementedError:
        return _not_done(4, words("define make_agent(model) returning an AssistantAgent on that model"))
    except Exception as error:
        return _raised(4, "make_agent(model)", error)
    if not isinstance(agent, AssistantAgent):
        text = words("make_agent(model) returned {got}, not an AssistantAgent").format(got=type(agent).__name__)
        return Check(_title(4), "not right yet", missing=(text,))
    try:
        _run(lambda: agent.run(task="Weather in Paris?"))
    except Exception as error:
        return _raised(4, "agent.run", error)
    found = _Found()
    if not found.expect(
        bool(model.requests),
        words("the agent calls the model it was given"),
        words("the model given to make_agent was never called: build the agent on it"),
    ):
        return found.check(_title(4))
    request = model.requests[-1]
    first = request.messages[0] if request.messages else None
    system = first.content if isinstance(first, SystemMessage) else ""
    found.expect(
        "weather" in system.lower(),
        words("the request starts with your system message about the weather"),
        words("the request's system message does not mention the weather: give system_message="),
    )
    names = [tool["name"] for tool in request.tools]
    found.expect(
        TOOL in names,
        words("the model is offered get_weather"),
        words("the model is offered {names}, not get_weather: give tools=[get_weather]").format(
            names=", ".join(names) or words("none")
        ),
    )
    return found.check(_title(4))


# ---------------------------------------------------------------------------------------------- STEP 5

BRANCHES = [
    "add_messages",
    "message_id",
    "call_llm",
    "tool_request",
    "tool_execution",
    "next_llm_call",
    "text_exit",
]


def check_branches(script: object) -> Check:
    """STEP 5: ``script`` is a replay model's script (answers in order) that makes an agent with
    ``get_weather`` and ``max_tool_iterations=2`` take the tool branch once, then the text exit."""
    if _unfinished(script):
        return _not_done(5, words("set script to the model's answers: a tool call of get_weather, then a text"))
    try:
        model = ReplayChatCompletionClient(script)  # type: ignore[arg-type]
    except Exception as error:
        return _raised(5, "ReplayChatCompletionClient(script)", error)
    agent = AssistantAgent("assistant", model, tools=[get_weather], max_tool_iterations=2)
    stepper = Stepper(agent, "Weather in Paris?")
    try:
        results = _run(stepper.run_to_end)
    except TimeoutError as error:
        return _raised(5, "the run of your script", error)
    moves = [result.name for result in results]
    found = _Found()
    failed = next((result.error for result in results if result.error is not None), None)
    if failed is not None:
        text = words("the run failed: {error}").format(error=f"{type(failed).__name__}: {failed}")
        return Check(_title(5), "not right yet", missing=(text,))
    calls = [call.name for result in results for call in result.tool_calls]
    ran = [given for result in results for given in result.tool_results if given.name == TOOL]
    if ran:  # called: did it run, or did its arguments not fit?
        found.expect(
            not ran[0].is_error,
            words("the first answer takes the tool branch: get_weather runs"),
            words('get_weather got an error result: {text}: its arguments are JSON such as {{"city": "Paris"}}').format(
                text=ran[0].content
            ),
        )
    elif calls:
        text = words("the model called {names}, not get_weather: call the agent's tool by its name")
        found.missing.append(text.format(names=", ".join(dict.fromkeys(calls))))
    else:
        found.missing.append(words("no get_weather call: the first answer must be tool calls, not a text"))
    found.expect(
        moves == BRANCHES,
        words("then the model answers with text: the text exit, with an iteration left"),
        words("the moves were {moves}; expected {expected}").format(
            moves=" → ".join(moves), expected=" → ".join(BRANCHES)
        ),
    )
    return found.check(_title(5))


# ---------------------------------------------------------------------------------------------- tool loop


def check_tool(to_fahrenheit: object) -> Check:
    """Tool loop: ``to_fahrenheit(celsius: float) -> float``, with a docstring, is a tool the loop calls
    when the model asks for it with ``{"celsius": 21}``: its result (69.8) is the answer."""
    if _unfinished(to_fahrenheit) or not callable(to_fahrenheit):
        return _not_done(6, words("define to_fahrenheit(celsius: float) -> float with a docstring"))
    try:
        tool = FunctionTool(to_fahrenheit)
    except Exception as error:
        return _raised(6, "FunctionTool(to_fahrenheit)", error)
    found = _Found()
    schema = tool.schema
    found.expect(
        bool(schema.get("description")),
        words("its docstring is the description the model reads"),
        words("it has no docstring: the model would read no description of it"),
    )
    parameter = schema.get("parameters", {}).get("properties", {}).get("celsius", {})
    found.expect(
        parameter.get("type") == "number",
        words("its parameter celsius is a number in the schema the model is sent"),
        words("the schema has no number parameter celsius: type it celsius: float"),
    )
    name = schema["name"]
    model = ReplayChatCompletionClient([_calls(FunctionCall(id="t1", name=name, arguments='{"celsius": 21}'))])
    agent = AssistantAgent("assistant", model, tools=[tool])
    try:
        result = _run(lambda: agent.run(task="21 °C in Fahrenheit?"))
    except Exception as error:
        return _raised(6, "the agent's run of to_fahrenheit", error)
    results = [r for message in result.messages if message.type == "ToolCallExecutionEvent" for r in message.content]
    if results and results[0].is_error:
        if "NotImplementedError" in results[0].content:
            return _not_done(6, words("to_fahrenheit still raises NotImplementedError: write its body"))
        found.missing.append(words("the tool gave an error result: {text}").format(text=results[0].content))
        return found.check(_title(6))
    text = results[0].content if results else ""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    found.expect(
        math.isclose(value, 69.8, abs_tol=0.05),
        words("called with celsius=21 it returns 69.8: the answer (a ToolCallSummaryMessage)"),
        words("called with celsius=21 it returned {got!r}, not 69.8 (F = C × 9/5 + 32)").format(got=text),
    )
    return found.check(_title(6))


def check_fork(edit: object) -> Check:
    """Tool loop, what if: ``edit(fork)`` changes a fork of a walk paused before its tools run, so that
    the fork's ``get_weather`` call gets an error result; the walk forked from stays as it was."""
    if _unfinished(edit) or not callable(edit):
        return _not_done(7, words("define edit(fork) giving the fork's tool call an error"))

    async def walk() -> tuple[Stepper, Stepper] | BaseException:
        model = ReplayChatCompletionClient(
            [
                _calls(FunctionCall(id="w1", name="get_weather", arguments='{"city": "Paris"}')),
                "It is 12 °C and cloudy in Paris: take a jacket.",
            ]
        )
        agent = AssistantAgent("assistant", model, tools=[get_weather], reflect_on_tool_use=True)
        walk = Stepper(agent, "Do I need a jacket today?")
        await walk.run_until(move="tool_request")
        fork = await walk.fork()
        try:
            edited = edit(fork)
            if inspect.isawaitable(edited):  # an ``async def edit``: awaited, as a notebook cell would
                await edited
        except Exception as error:
            return error
        await fork.run_to_end()
        await walk.run_to_end()
        return walk, fork

    try:
        outcome = _run(walk)
    except TimeoutError as error:
        return _raised(7, "edit(fork) and the fork's run", error)
    if isinstance(outcome, NotImplementedError):
        return _not_done(7, words("define edit(fork) giving the fork's tool call an error"))
    if isinstance(outcome, BaseException):
        return _raised(7, "edit(fork)", outcome)
    parent, fork = outcome
    given = [result for step in fork.history for result in step.tool_results]
    found = _Found()
    if not found.expect(
        bool(fork.changes),
        words("your edit changed the fork: {changes}").format(changes="; ".join(fork.changes)),
        words("the fork was not changed: call fork.give_tool_result(call_id, error=...)"),
    ):
        return found.check(_title(7))
    found.expect(
        bool(given) and given[0].is_error,
        words("the fork's tool call got an error result; the loop went on to reflect on it"),
        words("the fork's tool call got a result, not an error: give error= (the tool fails)"),
    )
    ran = [result for step in parent.history for result in step.tool_results]
    found.expect(
        bool(ran) and not ran[0].is_error,
        words("the walk forked from is untouched: its tool ran"),
        words("the walk forked from changed too: edit the fork, not the walk"),
    )
    return found.check(_title(7))


EXERCISES: list[tuple[str, Callable[[Any], Check]]] = [
    ("Exercise 1 · STEP 1, the context", check_context),
    ("Exercise 2 · STEP 2, memory", check_memory),
    ("Exercise 3 · STEP 3, the message id", check_message_id),
    ("Exercise 4 · STEP 4, the request", check_request),
    ("Exercise 5 · STEP 5, the branches", check_branches),
    ("Exercise 6 · the tool loop, a tool", check_tool),
    ("Exercise 7 · the tool loop, what if the tool fails", check_fork),
]
"""Each exercise's title and its check, in the walkthrough's order."""
