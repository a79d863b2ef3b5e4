"""The loop's one seam for changing a run at a move boundary: :class:`Interventions`.

A walk (:class:`~nbagent.stepper.Stepper`) hands its run an ``Interventions``; the loop
(``AssistantAgent._run_steps``, the one implementation) asks it at three points, and only there:

* before each model call (:meth:`Interventions.before_llm_call`): the request's system message,
  context messages, tools, ``tool_choice`` and model client, or the model's answer itself (given text,
  tool calls or an error, instead of calling the model);
* before each batch of tool calls (:meth:`Interventions.tool_results`): a call's result (given
  content, an error or a timeout, instead of calling the tool);
* at STEP 2 (:attr:`Interventions.memory`): the memory stores' results (a fork's replayed start).

What a user changes is yielded by the loop, where it took effect, as an
:class:`~nbagent.records.Intervention` record (the trace keeps it: what changed, before which move).
A fork (``Stepper.fork``) replays the moves it shares with its parent through the same seam: the
parent's recorded answers, tool results and memory hits are given, so no model or tool is called
again, and the parent's changes are made again at the moves where they were made.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import _check as check
from .cancellation import CancellationToken
from .messages import (
    AssistantMessage,
    CreateResult,
    FunctionCall,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    MemoryQueryEvent,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from .models.base import ChatCompletionClient, ModelRequest, ModelStream, ToolChoice
from .records import Intervention
from .tools import ToolSchema

TIMEOUT_RESULT = "Error: the tool call timed out"
"""The result a tool call gets when a walk gives it a timeout (``give_tool_result(call_id, timeout=True)``)."""

_UNSET: Any = object()


@dataclass
class GivenAnswer:
    """An answer the model is not asked for: a result (streamed as ``chunks`` when the call streams) or an error."""

    result: CreateResult | None = None
    error: BaseException | None = None
    chunks: tuple[str, ...] | None = None

    def create(self) -> CreateResult:
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result

    async def stream(self) -> AsyncIterator[str | CreateResult]:
        """The answer as a model client's stream: its text pieces, then the result."""
        if self.error is not None:
            raise self.error
        assert self.result is not None
        if self.chunks is not None:
            for piece in self.chunks:
                yield piece
        elif isinstance(self.result.content, str) and self.result.content:
            yield self.result.content
        yield self.result


class GivenAnswerClient(ChatCompletionClient):
    """Stands for the model at one call whose answer a walk gave: gives that answer (streamed as its
    pieces) or raises its error, under the model's name and provider, without calling the model."""

    def __init__(self, answer: GivenAnswer, model: ChatCompletionClient) -> None:
        super().__init__()
        self.answer = answer
        self._model = model.model_name
        self.provider = model.provider
        self.model_info = model.model_info

    @property
    def model_name(self) -> str:
        return self._model

    async def complete(
        self, request: ModelRequest, cancellation_token: CancellationToken | None = None
    ) -> CreateResult:
        return self.answer.create()

    async def complete_stream(
        self,
        request: ModelRequest,
        cancellation_token: CancellationToken | None = None,
        stream: ModelStream | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        async for item in self.answer.stream():
            yield item


@dataclass
class RequestEdit:
    """What one model call is changed by: each field left ``None`` (``system_message``: unset) keeps the loop's."""

    system_message: Any = _UNSET  # str or None (no system message); _UNSET: the agent's
    messages: list[LLMMessage] | None = None
    tools: list[ToolSchema] | None = None
    tool_choice: ToolChoice | None = None
    model_client: ChatCompletionClient | None = None

    def describe(self, before: int) -> str:
        parts = []
        if self.system_message is not _UNSET:
            parts.append(
                "no system message" if self.system_message is None else f"system message {self.system_message!r}"
            )
        if self.messages is not None:
            parts.append(f"context of {before} messages replaced by {len(self.messages)}")
        if self.tools is not None:
            parts.append("tools offered: " + (", ".join(t["name"] for t in self.tools) or "none"))
        if self.tool_choice is not None:
            parts.append(f"tool_choice {self.tool_choice!r}")
        if self.model_client is not None:
            parts.append(f"model client {self.model_client.model_name}")
        return "; ".join(parts)


@dataclass
class LLMCallPlan:
    """What the loop does differently at one model call (from :meth:`Interventions.before_llm_call`)."""

    records: list[Intervention] = field(default_factory=list)
    system_messages: list[SystemMessage] | None = None
    messages: list[LLMMessage] | None = None
    tools: list[ToolSchema] | None = None
    tool_choice: ToolChoice | None = None
    model_client: ChatCompletionClient | None = None
    answer: GivenAnswer | None = None


@dataclass
class GivenMemory:
    """STEP 2 as recorded: the events and the messages the stores added (a fork's replayed start)."""

    events: list[MemoryQueryEvent]
    messages: list[LLMMessage]


class Interventions:
    """What a walk changes in its run, read by the loop at its one seam (see the module's text).

    ``move`` is the index of the move about to be made (the stepper keeps it). Changes are scheduled
    for the next model call or tool batch (``edit_request``, ``give_answer``, ``give_tool_result``);
    request changes (system message, tools, model client) last for the rest of the run, context
    messages, ``tool_choice`` and answers for one call. ``parent`` is ``(run_id, moves shared)`` for
    a fork: its ``RunStarted`` records it.
    """

    def __init__(self) -> None:
        self.move = 0
        self.parent: tuple[str, int] | None = None
        self.memory: GivenMemory | None = None
        self._system: Any = _UNSET
        self._tools: list[ToolSchema] | None = None
        self._client: ChatCompletionClient | None = None
        self._edits: dict[int, RequestEdit] = {}  # by move index: the edits still to make
        self._answers: dict[int, GivenAnswer] = {}  # by move index
        self._results: dict[int, dict[str, FunctionExecutionResult]] = {}  # by move index, call id
        self._replayed_answers: deque[GivenAnswer] = deque()  # a fork's shared moves: the parent's answers
        self._replayed_results: deque[list[FunctionExecutionResult | None]] = deque()
        self._replay_until = 0  # moves below this index are the parent's, given as recorded
        self.applied: list[tuple[int, RequestEdit | GivenAnswer | dict[str, FunctionExecutionResult]]] = []
        """Every change made so far, with the move it was made before (a fork makes them again)."""

    @property
    def active(self) -> bool:
        """Whether the loop has anything to ask (false for a walk nobody changed: one attribute read)."""
        return bool(
            self._edits
            or self._answers
            or self._results
            or self._replayed_answers
            or self._replayed_results
            or self._system is not _UNSET
            or self._tools is not None
            or self._client is not None
        )

    # ------------------------------------------------------------------ scheduling (the stepper's)

    def schedule_edit(self, edit: RequestEdit) -> None:
        previous = self._edits.get(self.move)
        if previous is not None:  # two edits before the same move: the later fields win
            for name in ("messages", "tools", "tool_choice", "model_client"):
                if getattr(edit, name) is None:
                    setattr(edit, name, getattr(previous, name))
            if edit.system_message is _UNSET:
                edit.system_message = previous.system_message
        self._edits[self.move] = edit

    def schedule_answer(self, answer: GivenAnswer) -> None:
        self._answers[self.move] = answer

    def schedule_result(self, call_id: str, result: FunctionExecutionResult) -> None:
        self._results.setdefault(self.move, {})[call_id] = result

    def replay(
        self,
        parent: Interventions,
        answers: Sequence[GivenAnswer],
        results: Sequence[list[FunctionExecutionResult | None]],
        moves: int,
    ) -> None:
        """Give the first ``moves`` moves as the parent made them: its answers and tool results in
        order, and its changes at the moves where it made them."""
        self._replayed_answers.extend(answers)
        self._replayed_results.extend(results)
        self._replay_until = moves + 1
        for move, change in parent.applied:
            if isinstance(change, RequestEdit):
                self._edits[move] = RequestEdit(**vars(change))
            elif isinstance(change, dict):
                self._results[move] = dict(change)
            else:
                self._answers[move] = change

    # ------------------------------------------------------------------ the loop's seam

    def before_llm_call(self, run_id: str, context_size: int) -> LLMCallPlan:
        """What the model call about to be made is changed by (and the records of what changed)."""
        plan = LLMCallPlan()
        move = self.move
        edit = self._edits.pop(move, None)
        if edit is not None:
            plan.records.append(Intervention(run_id, move, "request", edit.describe(context_size)))
            self.applied.append((move, edit))
            if edit.system_message is not _UNSET:
                self._system = edit.system_message
            if edit.tools is not None:
                self._tools = edit.tools
            if edit.model_client is not None:
                self._client = edit.model_client
            plan.messages, plan.tool_choice = edit.messages, edit.tool_choice
        if self._system is not _UNSET:
            plan.system_messages = [] if self._system is None else [SystemMessage(content=self._system)]
        plan.tools, plan.model_client = self._tools, self._client
        given = self._answers.pop(move, None)
        if given is not None:
            plan.records.append(Intervention(run_id, move, "answer", _answer_text(given)))
            self.applied.append((move, given))
            plan.answer = given
        if move < self._replay_until and self._replayed_answers:
            plan.answer = self._replayed_answers.popleft()  # the parent's answer (a given one included)
        return plan

    def tool_results(
        self, run_id: str, calls: Sequence[FunctionCall]
    ) -> tuple[list[FunctionExecutionResult | None], list[Intervention]]:
        """The given result of each call of the batch about to run (``None``: the tool is called)."""
        move = self.move
        given = self._results.pop(move, None)
        records: list[Intervention] = []
        results: list[FunctionExecutionResult | None] = [None] * len(calls)
        if given is not None:
            self.applied.append((move, dict(given)))
            for call_id, result in given.items():
                what = "timeout" if result.content == TIMEOUT_RESULT else "error" if result.is_error else "content"
                change = f"{call_id} ({result.name}): {what} {result.content!r}"
                records.append(Intervention(run_id, move, "tool_result", change))
            results = [given.get(call.id) for call in calls]
        if move < self._replay_until and self._replayed_results:
            results = self._replayed_results.popleft()  # the parent's results (given ones included)
        return results, records


def _answer_text(answer: GivenAnswer) -> str:
    if answer.error is not None:
        return f"error {type(answer.error).__name__}: {answer.error}"
    assert answer.result is not None
    content = answer.result.content
    if isinstance(content, str):
        return f"text {content!r}"
    return "tool calls " + ", ".join(f"{call.name}({call.arguments})" for call in content)


# ---------------------------------------------------------------------- the checks of what a walk gives

WHERE_ANSWER = "Stepper.give_answer"


def given_answer(answer: object) -> GivenAnswer:
    """``answer`` of ``give_answer``: text, a list of tool calls, a ``CreateResult`` or an exception."""
    usage = RequestUsage(prompt_tokens=0, completion_tokens=0)
    if isinstance(answer, str):
        return GivenAnswer(CreateResult(finish_reason="stop", content=answer, usage=usage))
    if isinstance(answer, CreateResult):
        return GivenAnswer(answer)
    if isinstance(answer, BaseException):
        return GivenAnswer(error=answer)
    if isinstance(answer, (list, tuple)) and answer:
        for index, call in enumerate(answer):
            check.instance(WHERE_ANSWER, f"answer[{index}]", call, FunctionCall, "a FunctionCall(id, name, arguments)")
        return GivenAnswer(CreateResult(finish_reason="function_calls", content=list(answer), usage=usage))
    raise check.wrong_type(
        WHERE_ANSWER,
        "answer",
        "a text (str), a non-empty list of FunctionCall, a CreateResult or an exception",
        answer,
    )


def check_context(where: str, messages: object) -> list[LLMMessage]:
    """``messages`` for the context: LLM messages in which every tool call has its result right after
    it and every result follows its call (the context stays valid whatever the edit)."""
    items = check.sequence(where, "messages", messages, "a list of LLM messages (UserMessage, AssistantMessage...)")
    out: list[LLMMessage] = []
    pending: list[str] | None = None
    for index, message in enumerate(items):
        check.instance(
            where,
            f"messages[{index}]",
            message,
            (SystemMessage, UserMessage, AssistantMessage, FunctionExecutionResultMessage),
            "an LLM message (SystemMessage, UserMessage, AssistantMessage, FunctionExecutionResultMessage)",
        )
        if pending is not None:
            ids = [r.call_id for r in message.content] if isinstance(message, FunctionExecutionResultMessage) else None
            if ids is None or sorted(ids) != sorted(pending):
                raise check.wrong_value(
                    where,
                    f"messages[{index}]",
                    f"the results of the tool calls of messages[{index - 1}] (call ids {pending})",
                    message,
                    "Every tool call needs its result right after it: remove or add both",
                )
            pending = None
        elif isinstance(message, FunctionExecutionResultMessage):
            raise check.wrong_value(
                where,
                f"messages[{index}]",
                "a message that is not a tool result (no tool calls come right before it)",
                message,
                "A tool result follows the assistant message with its call: remove or add both",
            )
        if isinstance(message, AssistantMessage) and not isinstance(message.content, str):
            pending = [call.id for call in message.content]
        out.append(message)
    if pending is not None:
        raise check.wrong_value(
            where,
            "messages",
            "a context whose last tool calls have their results",
            f"tool calls {pending} without results at the end",
            "Add their FunctionExecutionResultMessage or remove the calls",
        )
    return out
