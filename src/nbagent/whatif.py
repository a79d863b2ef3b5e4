""" "What if" questions about a walk, each answered by a fork: the tool fails, the model calls a second tool,
another iteration limit, reflection the other way.

:func:`what_ifs` says which can be asked of a walk now, and after which move the fork is made (the first
move the change would make different, found in the walk's history: before its first tool batch, before
the model call that asked for tools, after the first tool batch, before the reflection or summary).
:func:`ask` makes that fork (:meth:`~nbagent.stepper.Stepper.fork`), changes it and walks it to its end;
the walk asked about is untouched. ``nbagent.compare(walk, fork)`` then says what changed, in words
(:meth:`~nbagent.trace.compare.Comparison.sentences`). The stepper widget's What if buttons call them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from . import _check as check
from .language import words
from .messages import FunctionCall
from .models.base import ChatCompletionClient
from .models.replay import ReplayChatCompletionClient
from .trace.replay import RecordedChatCompletionClient

if TYPE_CHECKING:
    from .stepper import Stepper, StepResult

__all__ = ["WHAT_IFS", "WhatIf", "WhatIfKey", "ask", "what_ifs"]

WhatIfKey = Literal["tool_fails", "second_tool", "iteration_limit", "reflection"]
WHAT_IFS: tuple[WhatIfKey, ...] = ("tool_fails", "second_tool", "iteration_limit", "reflection")
FAILURE = "Error: the tool failed (a what-if fork)"
"""The error result a what-if fork's failing tool call gets."""


@dataclass(frozen=True)
class WhatIf:
    """A question about a walk: ``at`` is the move the fork answering it is made after (``None``: it
    cannot be asked now, ``why_not`` says why)."""

    key: WhatIfKey
    question: str
    at: int | None
    why_not: str = ""


def _first(history: list[StepResult], *names: str) -> StepResult | None:
    return next((result for result in history if result.name in names), None)


def what_ifs(stepper: Stepper) -> list[WhatIf]:
    """The four questions about ``stepper``'s walk, each with the move its fork is made after, or why it
    cannot be asked yet."""
    history, settings = stepper.history, stepper.agent.loop_settings
    upcoming = stepper.upcoming.name if stepper.upcoming is not None and not stepper.done else None
    no_tool = words("the model has not asked for a tool yet: walk on to STEP 5's tool request")
    batch = _first(history, "tool_execution")
    fails = batch.index - 1 if batch is not None else len(history) if upcoming == "tool_execution" else None
    asking = next((r for r in history if r.name in ("call_llm", "next_llm_call") and r.asked_tools), None)
    second = asking.index - 1 if asking is not None else None
    no_second = no_tool
    if asking is not None and _second_call(stepper, asking.asked_tools) is None:
        second = None
        no_second = words(
            "the model asked only for a handoff and no other tool takes its arguments: a second call would be "
            "a second handoff"
        )
    limit = 1 if settings.max_tool_iterations > 1 else 2
    after: int | None = len(history) or None
    if batch is not None:
        after = batch.index + (1 if len(history) > batch.index and history[batch.index].name == "handoff_check" else 0)
    ending = _first(history, "reflect", "summarize")
    reflect = ending.index - 1 if ending is not None else len(history) or None
    first_move = words("make a first move")
    no_limit = no_end = first_move
    if stepper.done and history:  # a finished walk: a fork after its last move would make the same run again
        batches = sum(result.name == "tool_execution" for result in history)
        if batch is None:
            after = None
            no_limit = words("the model asked for no tool in this walk: the iteration limit never came into play")
        elif batches == 1 and history[-1].name == "handoff_check":
            after = None
            no_limit = words(
                "this walk handed off after its first tool batch: the iteration limit never came into play"
            )
        if ending is None:
            reflect = None
            no_end = words("this walk ended before its tool loop was used up: reflect_on_tool_use never came into play")
    found = [
        WhatIf("tool_fails", words("What if the tool fails?"), fails, "" if fails is not None else no_tool),
        WhatIf(
            "second_tool",
            words("What if the model calls a second tool?"),
            second,
            "" if second is not None else no_second,
        ),
        WhatIf(
            "iteration_limit",
            words("What if the iteration limit is {limit}?").format(limit=limit),
            after,
            "" if after is not None else no_limit,
        ),
        WhatIf(
            "reflection",
            words("What if reflection is off?") if settings.reflect_on_tool_use else words("What if reflection is on?"),
            reflect,
            "" if reflect is not None else no_end,
        ),
    ]
    source = stepper.fork_source
    if source is None:
        return found
    parent = words("this fork makes its first {moves} moves as its parent did: ask its parent walk").format(
        moves=source.moves
    )
    return [
        what if what.at is None or what.at >= source.moves else WhatIf(what.key, what.question, None, parent)
        for what in found
    ]


def _second_call(stepper: Stepper, calls: list[FunctionCall]) -> FunctionCall | None:
    """One more call for an answer of ``calls``: another tool the model is offered that takes the last call's
    arguments, else the last call of a tool again (``None``: the answer holds only handoffs, and a second
    handoff is no second tool)."""
    handoffs = set(stepper.agent.handoffs)
    tools = [call for call in calls if call.name not in handoffs]
    last = (tools or calls)[-1]
    try:
        given = set(json.loads(last.arguments or "{}"))
    except ValueError:
        given = set()
    called = {call.name for call in calls}
    for schema in stepper.agent.tools:
        name = schema["name"]
        required = set(schema.get("parameters", {}).get("required", []))
        if name not in called and name not in handoffs and required <= given:
            return FunctionCall(id=f"{last.id}-whatif", name=name, arguments=last.arguments)
    if not tools:
        return None
    return FunctionCall(id=f"{last.id}-whatif", name=last.name, arguments=last.arguments)


def _skip_answer(client: ChatCompletionClient) -> None:
    """A scripted or recorded model whose answer a what-if replaced moves past it: the fork's next model call
    gets the answer the walk's next call got (a real model is stateless: nothing to skip)."""
    if isinstance(client, (ReplayChatCompletionClient, RecordedChatCompletionClient)):
        client.position = min(client.position + 1, len(_script(client)))


def _script(client: ReplayChatCompletionClient | RecordedChatCompletionClient) -> list[object]:
    if isinstance(client, RecordedChatCompletionClient):
        return list(client.answers)
    return list(client.chat_completions)


async def ask(stepper: Stepper, key: str) -> Stepper:
    """Answer the question ``key`` (one of :data:`WHAT_IFS`) about ``stepper``'s walk: a fork made where the
    change first matters, changed, and walked to its end (returned; the walk asked about is untouched)."""
    where = "whatif.ask"
    check.choice(where, "key", key, WHAT_IFS)
    what = next(item for item in what_ifs(stepper) if item.key == key)
    if what.at is None:
        raise RuntimeError(f"{where}: {what.question} cannot be asked of this walk now: {what.why_not}")
    settings = stepper.agent.loop_settings
    if key == "iteration_limit":
        fork = await stepper.fork(what.at, max_tool_iterations=1 if settings.max_tool_iterations > 1 else 2)
    elif key == "reflection":
        fork = await stepper.fork(what.at, reflect_on_tool_use=not settings.reflect_on_tool_use)
    else:
        fork = await stepper.fork(what.at)
    if key == "tool_fails":
        calls = fork.current.tool_calls if fork.current is not None else []
        assert calls  # the fork is paused before the tool batch it was made for
        handoffs = set(stepper.agent.handoffs)
        failing = next((c for c in calls if c.name not in handoffs), calls[0])  # a tool, not a handoff
        fork.give_tool_result(failing.id, error=FAILURE)
    elif key == "second_tool":
        asked = next(r for r in stepper.history if r.index == what.at + 1)
        calls = asked.asked_tools
        extra = _second_call(stepper, calls)
        assert extra is not None  # what_ifs refused the question otherwise
        fork.give_answer([*calls, extra])
        fork.changes[-1] = words("the model also calls {name}").format(name=extra.name)
        _skip_answer(fork.agent.model_client)
    fork.what_if = what.question
    await fork.run_to_end()
    return fork
