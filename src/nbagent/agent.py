"""``AssistantAgent``: the tool-use loop, STEP 1 to 5, as the design description lays it out.

``_run_steps`` is the one loop. It yields the run's events and, between them, the records of
:mod:`nbagent.records` (moves, LLM calls, tool executions). ``on_messages_stream`` / ``run_stream``
pass the events on; the step-by-step mode pauses at each move; the trace records everything.
"""

from __future__ import annotations

import asyncio
import sys
import time
import warnings
from array import array
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import aclosing
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache, partial
from operator import attrgetter
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Self, cast

from pydantic import BaseModel, Field, ValidationError

from . import _check as check
from ._ids import new_id, utc_now
from .agent_input import (
    ItemsOut,
    ProducedTypes,
    Task,
    as_handoffs,
    as_tools,
    caller_out,
    check_arguments,
    check_messages,
    check_token,
    client_hint,
    task_messages,
)
from .cancellation import CANCELLED, CancellationToken, CancelledWithResult, guarded
from .components import Component, ComponentModel, StructuredMessageFactory, dump_nested, load_nested
from .context import (
    ChatCompletionContext,
    UnboundedChatCompletionContext,
    add_to,
    as_model_context,
    clear,
    holds_parts,
    own_view,
    plain_view,
)
from .hooks import HINT, Hook
from .interrupts import explain_cancellation
from .interventions import GivenAnswerClient, Interventions
from .memory import Memory, as_memories, update_memory_context
from .messages import (
    AssistantMessage,
    BaseAgentEvent,
    BaseChatMessage,
    CreateResult,
    FunctionCall,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    HandoffMessage,
    LLMMessage,
    MemoryQueryEvent,
    ModelClientStreamingChunkEvent,
    Response,
    StructuredMessage,
    SystemMessage,
    TaskResult,
    TextMessage,
    ThoughtEvent,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
    ToolCallSummaryMessage,
    UserMessage,
    agent_message,
    assistant_message,
    streaming_chunk,
    system_prompt,
    task_result,
    tool_result,
    tool_results_message,
    user_message,
)
from .models.base import ChatCompletionClient, ModelError, ModelRequest, ModelStream
from .models.bridge import as_model_client
from .models.limit import REQUEST_LIMIT, RequestLimit
from .models.openai import OpenAIChatCompletionClient
from .models.replay import ReplayChatCompletionClient
from .printable import printable
from .records import CANCELLED_TOOL_RESULT as CANCELLED_TOOL_RESULT  # re-exported: its name here since issue 10
from .records import (
    NOT_EVENT_TYPES,
    NOT_EVENTS,
    LLMCall,
    LLMPurpose,
    LoopSettings,
    Move,
    Recorder,
    RunFinished,
    RunItem,
    RunIterator,
    RunStarted,
    RunStatus,
    ToolExecution,
)
from .redact import mask_data, process_secrets
from .sync import Pending, Stream, run_coroutine
from .tools import (
    BaseTool,
    Handoff,
    StaticWorkbench,
    ToolArgumentsError,
    ToolResult,
    ToolSchema,
    Workbench,
    as_workbenches,
    close_workbenches,
    error_text,
    invoke_tool,
    invoke_tool_stream,
    load_tool,
    parse_arguments,
    tool_not_found,
)
from .trace import Trace, context_frame

if TYPE_CHECKING:
    from .trace.replay import Replay

DEFAULT_SYSTEM_MESSAGE = (
    "You are a helpful AI assistant. Solve tasks using your tools. "
    "Reply with TERMINATE when the task has been completed."
)

_perf = time.perf_counter

AGENT_MADE: Hook[[AssistantAgent], None] = Hook("agent made")
"""Told of each agent made (its constructor's last step): :mod:`nbagent.autogen` makes sure AutoGen's
``ChatAgent`` ABC knows the agent's class, whatever loaded ``autogen_agentchat.base`` and when."""

TEAM_CALL_GATE: ContextVar[Callable[[Any, LLMCall], Awaitable[None] | None] | None] = ContextVar(
    "nbagent_team_call_gate", default=None
)
"""Set by a runner of an AutoGen team (``nbagent.autogen``'s step-by-step mode) in the team's context:
called with the agent and each ``LLMCall`` its run makes in the team, before the call is sent and
recorded; an awaitable it returns is awaited first (the walk pauses there: the gate shows the call to
its consumer itself), and the call's time starts when the wait ends, before the recorders get it."""
SummaryFormatter = Callable[[FunctionCall, FunctionExecutionResult], str]


class StructuredOutputError(ValidationError):
    """The model's final text does not parse as ``output_content_type``.

    A pydantic ``ValidationError`` (so a ``ValueError``), as AutoGen's agent raises: ``except
    ValidationError`` catches it, ``errors()`` lists the problems; its cause is pydantic's own error.
    """

    def __str__(self) -> str:
        return f"the model's answer is not a valid {self.title}: {super().__str__()}"


def _structured_output_error(error: ValidationError) -> ValidationError:
    """``error`` as a :class:`StructuredOutputError` (or itself, if pydantic cannot rebuild it)."""
    try:
        return StructuredOutputError.from_exception_data(
            error.title,
            error.errors(include_url=False),  # type: ignore[arg-type]
            hide_input=False,
        )
    except Exception:  # an error type pydantic cannot rebuild (a custom one): AutoGen's error as it is
        return error


class AgentBusyError(RuntimeError):
    """A second run was started on an agent that is already running one."""


class RepeatedTaskWarning(UserWarning):
    """A run starts with the same task as the failed run before it, which is already in the context."""


@dataclass(frozen=True)
class FailedRun:
    """An agent's last run, when it ended without an answer (an error or a cancellation).

    What it added to the context stays there: its ``task`` (STEP 1), memory hits, tool calls with
    their results (an error result for those that did not finish). :meth:`AssistantAgent.retry`
    (or ``run()`` with no task) goes on from there without adding the task again.
    """

    run_id: str
    status: RunStatus
    error: str | None
    task: list[BaseChatMessage]

    def __repr__(self) -> str:
        task = [check.short_repr(message.to_text()) for message in self.task]
        return f"FailedRun(status={self.status!r}, error={self.error!r}, task=[{', '.join(task)}])"


def _same_messages(new: Sequence[BaseChatMessage], old: Sequence[BaseChatMessage]) -> bool:
    """Whether two tasks would enter the context as the same messages."""
    return len(new) == len(old) and all(
        (type(a), a.source, a.to_text()) == (type(b), b.source, b.to_text()) for a, b in zip(new, old)
    )


class _RunSlot:
    """An agent's one run at a time: the run that holds it, if any (its ``AgentRun`` takes and releases
    it), and the last run if it failed (``failed``: what :meth:`AssistantAgent.retry` goes on from)."""

    __slots__ = ("agent_name", "run", "failed")

    def __init__(self, agent_name: str) -> None:
        self.agent_name = agent_name
        self.run: AgentRun | None = None
        self.failed: FailedRun | None = None

    def check(self) -> None:
        """Raise :class:`AgentBusyError` if a run holds the slot."""
        if self.run is not None:
            raise AgentBusyError(
                f"agent {self.agent_name!r} is running (run {self.run.run_id}); an agent runs one task "
                "at a time: await or cancel that run first, or use another agent"
            )

    def warn_if_repeated(self, messages: Sequence[BaseChatMessage]) -> None:
        """Warn when a run starts with the very task the failed run already put in the context."""
        failed = self.failed
        if failed is not None and messages and _same_messages(messages, failed.task):
            warnings.warn(
                f"agent {self.agent_name!r}: this task is the one of the last run, which failed "
                f"({printable(failed.error or failed.status)}) after STEP 1 had added it to the context: it is now in "
                "the context twice. To go on from the failed run, call agent.retry() (or run() with no "
                "task): the model is called on the context as it is.",
                RepeatedTaskWarning,
                stacklevel=2,
            )


DEFAULT_DESCRIPTION = "An agent that provides assistance with ability to use tools."


class AssistantAgentConfig(BaseModel):
    """AutoGen's ``AssistantAgent`` config (version 2; version 1's ``tools`` are read too)."""

    name: str
    model_client: ComponentModel
    tools: list[ComponentModel] | None = None
    workbench: list[ComponentModel] | None = None
    handoffs: list[Handoff | str] | None = None
    model_context: ComponentModel | None = None
    memory: list[ComponentModel] | None = None
    description: str = DEFAULT_DESCRIPTION
    system_message: str | None = None
    model_client_stream: bool = False
    reflect_on_tool_use: bool | None = None
    tool_call_summary_format: str = "{result}"
    max_tool_iterations: int = Field(default=1, ge=1)
    metadata: dict[str, str] | None = None
    structured_message_factory: ComponentModel | None = None


class AssistantAgent(Component):
    """An agent that answers with the model's text or runs tools in a loop, streaming every event.

    The model context keeps the conversation across calls: pass only new messages each call.
    One agent runs one task at a time; a second concurrent call raises :class:`AgentBusyError`.
    """

    component_type = "agent"
    component_version = 2  # AutoGen's: tools are dumped as a workbench
    component_config_schema = AssistantAgentConfig
    component_provider_override = "nbagent.AssistantAgent"
    component_aliases = ("autogen_agentchat.agents.AssistantAgent",)

    def __init__(
        self,
        name: str,
        model_client: ChatCompletionClient,
        *,
        tools: Sequence[BaseTool | Callable[..., Any]] | None = None,
        workbench: Workbench | Sequence[Workbench] | None = None,
        handoffs: Sequence[Handoff | str] | None = None,
        model_context: ChatCompletionContext | None = None,
        description: str = DEFAULT_DESCRIPTION,
        system_message: str | None = DEFAULT_SYSTEM_MESSAGE,
        model_client_stream: bool = False,
        reflect_on_tool_use: bool | None = None,
        max_tool_iterations: int = 1,
        tool_call_summary_format: str = "{result}",
        tool_call_summary_formatter: SummaryFormatter | None = None,
        output_content_type: type[BaseModel] | None = None,
        output_content_type_format: str | None = None,
        memory: Memory | Sequence[Memory] | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        if model_context is not None:  # nbagent's; AutoGen's as its exact twin; any other by its protocol
            model_context = as_model_context("AssistantAgent", model_context)
        bridged = check_arguments(
            name,
            model_client,
            tools,
            model_context,
            description,
            system_message,
            model_client_stream,
            reflect_on_tool_use,
            max_tool_iterations,
            tool_call_summary_format,
            tool_call_summary_formatter,
            output_content_type,
            output_content_type_format,
            metadata,
        )
        if tools and workbench is not None:
            raise ValueError("Tools cannot be used with a workbench.")
        self.name = name
        self.description = description
        self.metadata = dict(metadata or {})
        # nbagent's client as it is; AutoGen's (or a duck-typed one) through models.bridge
        self._model_client = bridged
        self._model_client_stream = model_client_stream
        self._system_messages = [system_prompt(str(system_message))] if system_message else []
        self._model_context = model_context if model_context is not None else UnboundedChatCompletionContext()
        self._memory = self._check_memory(memory)
        self._max_tool_iterations = max_tool_iterations
        self._reflect_on_tool_use = (
            output_content_type is not None if reflect_on_tool_use is None else reflect_on_tool_use
        )
        self._tool_call_summary_format = tool_call_summary_format
        self._tool_call_summary_formatter = tool_call_summary_formatter
        self._output_content_type = output_content_type
        self._output_content_type_format = output_content_type_format

        tool_list = as_tools(tools)
        tool_names = [tool.name for tool in tool_list]
        if len(set(tool_names)) != len(tool_names):
            raise ValueError(f"Tool names must be unique: {tool_names}")
        if workbench is None:
            self._workbench: list[Workbench] = [StaticWorkbench(tool_list)] if tool_list else []
        else:  # AutoGen's Workbench protocol, duck-typed: nbagent's as they are, others wrapped
            self._workbench = as_workbenches(workbench)

        handoff_list = as_handoffs(handoffs)
        handoff_names = [handoff.name for handoff in handoff_list]
        if len(set(handoff_names)) != len(handoff_names):
            raise ValueError(f"Handoff names must be unique: {handoff_names}")
        # a handoff's tool name may not be a tool's name; its target may (fix 5 of docs/contract.md)
        clash = set(handoff_names) & set(tool_names)
        if clash:
            raise ValueError(f"Handoff names must be unique from tool names: {sorted(clash)}")
        self._handoffs = {handoff.name: handoff for handoff in handoff_list}
        self._handoff_tools: list[ToolSchema] = [handoff.schema for handoff in handoff_list]

        if not bridged.model_info.get("function_calling", False):  # AutoGen's messages
            if tool_list or workbench is not None:
                raise ValueError("The model does not support function calling.")
            if handoff_list:
                raise ValueError("The model does not support function calling, which is needed for handoffs.")

        # nbagent fix 3: tool schemas are listed once for static workbenches, not on every call.
        self._static_tools: tuple[list[ToolSchema], dict[str, Workbench]] | None = None
        if all(isinstance(wb, StaticWorkbench) for wb in self._workbench):
            self._static_tools = self._index_tools(
                [(wb, wb.schemas) for wb in self._workbench]  # type: ignore[attr-defined]
            )
        # What the loop reads without a call of _list_tools: not when a subclass overrides it.
        own_listing = getattr(self._list_tools, "__func__", None) is AssistantAgent._list_tools
        self._listed_tools = self._static_tools if own_listing else None

        self._slot = _RunSlot(name)
        self._loop_settings: LoopSettings | None = None  # made on first use (loop_settings)
        self.trace = Trace(owner=self)
        self.recorders: list[Recorder] = [self.trace]
        AGENT_MADE(self)  # AutoGen's seam: its ChatAgent ABC knows the agent's class

    # ------------------------------------------------------------------ construction helpers

    @staticmethod
    def _check_memory(memory: Memory | Sequence[Memory] | None) -> list[Memory]:
        return as_memories(memory)  # AutoGen's Memory protocol, duck-typed; a clear error otherwise

    def _index_tools(
        self, listed: list[tuple[Workbench, list[ToolSchema]]]
    ) -> tuple[list[ToolSchema], dict[str, Workbench]]:
        schemas: list[ToolSchema] = []
        owners: dict[str, Workbench] = {}
        for wb, wb_schemas in listed:
            for schema in wb_schemas:
                if schema["name"] in owners or schema["name"] in self._handoffs:
                    raise ValueError(f"Tool names must be unique: {schema['name']!r} is offered twice")
                owners[schema["name"]] = wb
                schemas.append(schema)
        return schemas + self._handoff_tools, owners

    async def _list_tools(
        self, token: CancellationToken | None = None
    ) -> tuple[list[ToolSchema], dict[str, Workbench]]:
        """Every tool the model is offered (workbenches' plus handoffs'), and who runs each."""
        if self._static_tools is not None:
            return self._static_tools
        return self._index_tools([(wb, await guarded(wb.list_tools(), token)) for wb in self._workbench])

    def copy(
        self,
        *,
        model_client: ChatCompletionClient | None = None,
        workbench: Sequence[Workbench] | None = None,
        max_tool_iterations: int | None = None,
        reflect_on_tool_use: bool | None = None,
    ) -> AssistantAgent:
        """A fresh agent with this one's configuration that shares no run state.

        The copy has the same name, model client (or ``model_client``), tools and workbenches (or
        ``workbench``), memory stores, handoffs, system message and settings (the same objects; or
        ``max_tool_iterations``, ``reflect_on_tool_use``: a fork that asks "what if"), and a
        new model context of the same kind (:meth:`ChatCompletionContext.fresh`: its initial messages,
        none of this one's conversation). Its runs, failed run and trace are its own: it runs while this one runs. It is
        made by the constructor of this agent's class (a subclass with another signature overrides it).
        """
        if model_client is not None:
            as_model_client(model_client, "AssistantAgent.copy", hint=client_hint(model_client))
        return type(self)(
            self.name,
            self._model_client if model_client is None else model_client,
            workbench=list(self._workbench if workbench is None else workbench) or None,
            handoffs=list(self._handoffs.values()) or None,
            model_context=self._model_context.fresh(),
            description=self.description,
            system_message=self._system_messages[0].content if self._system_messages else None,
            model_client_stream=self._model_client_stream,
            reflect_on_tool_use=self._reflect_on_tool_use if reflect_on_tool_use is None else reflect_on_tool_use,
            max_tool_iterations=self._max_tool_iterations if max_tool_iterations is None else max_tool_iterations,
            tool_call_summary_format=self._tool_call_summary_format,
            tool_call_summary_formatter=self._tool_call_summary_formatter,
            output_content_type=self._output_content_type,
            output_content_type_format=self._output_content_type_format,
            memory=list(self._memory) or None,
            metadata=self.metadata or None,
        )

    @classmethod
    def from_replay(cls, replay: Replay) -> AssistantAgent:
        """An agent that makes the recorded run of ``replay`` (``trace.replay(run_id)``) again, offline.

        Its model client answers the recorded calls, its workbench gives the recorded tool results (no
        tool runs), its memory the recorded hits; its context starts as the recorded run's did, and its
        system message, tools, handoffs and loop settings are the recorded ones. Run it on
        ``replay.task``. What a replay cannot reproduce: :data:`nbagent.trace.replay.LIMITS`.
        """
        from .trace.replay import Replay  # loaded on first use: a first run does not need it

        check.instance("AssistantAgent.from_replay", "replay", replay, Replay, "a Replay (trace.replay(run_id))")
        lines = dict(replay.summary_lines or {})
        formatter: SummaryFormatter | None = None
        if lines:

            def formatter(call: FunctionCall, result: FunctionExecutionResult) -> str:
                return lines.get(call.id, result.content)

        workbench = replay.workbench()
        settings = replay.settings
        return cls(
            replay.agent,
            replay.model_client(),
            workbench=workbench if replay.tools or replay.tool_results else None,
            handoffs=list(replay.handoffs) or None,
            model_context=UnboundedChatCompletionContext(list(replay.start_context)),
            system_message=replay.system_message,
            model_client_stream=replay.model_client_stream,
            reflect_on_tool_use=settings.reflect_on_tool_use,
            max_tool_iterations=settings.max_tool_iterations,
            tool_call_summary_formatter=formatter,
            output_content_type=replay.output_content_type,
            output_content_type_format=replay.output_content_type_format,
            memory=replay.memories() or None,
        )

    # ------------------------------------------------------------------ public properties

    @property
    def model_context(self) -> ChatCompletionContext:
        """The agent's short-term memory: every message of the conversation so far."""
        return self._model_context

    def context_df(self) -> Any:
        """The model context as a pandas DataFrame: one row per message, with the run and STEP that added it."""
        return context_frame(self)

    @property
    def model_client(self) -> ChatCompletionClient:
        return self._model_client

    @property
    def secrets(self) -> tuple[str, ...]:
        """The secret values of the model client (``records.RunSource``): the agent's traces mask them."""
        return self._model_client.secrets

    @property
    def tools(self) -> list[ToolSchema]:
        """The tool schemas the model is offered, handoff tools included (static workbenches)."""
        return list(self._static_tools[0]) if self._static_tools else list(self._handoff_tools)

    async def list_tools(self) -> list[ToolSchema]:
        """Every tool the model is offered, handoff tools included, listed from the workbenches (an MCP
        server's too: for static workbenches it is :attr:`tools`)."""
        return list((await self._list_tools())[0])

    @property
    def workbench(self) -> list[Workbench]:
        """The workbenches the agent lists and calls tools from, in order (a copy: empty without tools)."""
        return list(self._workbench)

    @property
    def memory(self) -> list[Memory]:
        """The memory stores STEP 2 queries (a copy: empty when the agent has no memory)."""
        return list(self._memory)

    @property
    def handoffs(self) -> dict[str, Handoff]:
        return dict(self._handoffs)

    @property
    def max_tool_iterations(self) -> int:
        return self._max_tool_iterations

    @property
    def output_content_type(self) -> type[BaseModel] | None:
        """The pydantic class the final answer is parsed into (a ``StructuredMessage``), or ``None``."""
        return self._output_content_type

    @property
    def reflect_on_tool_use(self) -> bool:
        return self._reflect_on_tool_use

    @property
    def loop_settings(self) -> LoopSettings:
        """The settings that decide which moves and edges of ``records.MOVES`` this agent's runs can make."""
        settings = self._loop_settings
        if settings is None:
            settings = self._loop_settings = _shared_settings(
                bool(self._memory), bool(self._handoffs), self._max_tool_iterations, self._reflect_on_tool_use
            )
        return settings

    @property
    def produced_message_types(self) -> tuple[type[BaseChatMessage], ...]:
        """The chat message types this agent can answer with; ``in`` also finds AutoGen's type of the same
        name (``HandoffMessage in agent.produced_message_types``, as AutoGen's ``Swarm`` asks of its first
        participant: the agent answers AutoGen's teams with AutoGen's types). As AutoGen 0.7.5's agent:
        a text, a tool call summary and a handoff whatever its tools and handoffs (so ``Swarm`` takes it
        as its first participant), and a structured message with ``output_content_type``."""
        types: list[type[BaseChatMessage]] = [TextMessage, ToolCallSummaryMessage, HandoffMessage]
        if self._output_content_type is not None:
            types.append(StructuredMessage)
        return ProducedTypes(types)

    @property
    def is_running(self) -> bool:
        return self._slot.run is not None

    @property
    def failed_run(self) -> FailedRun | None:
        """The last run if it ended without an answer (error or cancellation): :meth:`retry` goes on from it.

        ``None`` once a run has answered, and after :meth:`on_reset` or :meth:`load_state`.
        """
        return self._slot.failed

    @failed_run.setter
    def failed_run(self, failed: FailedRun | None) -> None:
        """Forget the failed run (``None``), or put a mark back (the stepper's ``reset()`` does)."""
        self._check_idle()
        self._slot.failed = check.optional("AssistantAgent", "failed_run", failed, FailedRun, "a FailedRun")

    # ------------------------------------------------------------------ entry points

    def iter(
        self,
        messages: Sequence[BaseChatMessage],
        cancellation_token: CancellationToken | None = None,
        *,
        chunk_events: bool = True,
        interventions: Interventions | None = None,
    ) -> AgentRun:
        """One run as an async iterator over every item: moves, records, events, ``Response``.

        With ``chunk_events=False`` streamed text comes as plain ``str`` items (the current LLM
        call's ``message_id`` is the message they build) instead of ``ModelClientStreamingChunkEvent``
        objects: for a consumer that only reads the text, as :meth:`run` and the live view do.
        Recorders get the same data either way. ``interventions`` is what a walk changes at move
        boundaries (the stepper's: see :mod:`nbagent.interventions`).
        """
        where = "AssistantAgent.iter"
        checked = check_messages(where, messages)
        token = check_token(where, cancellation_token)
        check.boolean(where, "chunk_events", chunk_events)
        check.optional(where, "interventions", interventions, Interventions, "an Interventions or None")
        return AgentRun(
            self, checked, token, chunk_events, self._slot, self._run_steps, self._repair_context, interventions
        )

    def _new_run(
        self, messages: list[BaseChatMessage], token: CancellationToken | None, chunk_events: bool
    ) -> AgentRun:
        """A run of arguments an entry point has checked (each checks its own once), for an entry point that
        takes only its events, messages and Response (the records are recorded, not handed to it: no
        item it would skip passes the run's iteration); through :meth:`iter` when a subclass overrides
        it, as every entry point runs through ``iter``."""
        if type(self).iter is not AssistantAgent.iter:
            return self.iter(messages, token, chunk_events=chunk_events)
        return AgentRun(
            self, messages, token, chunk_events, self._slot, self._run_steps, self._repair_context, events_only=True
        )

    def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken | None = None
    ) -> Pending[Response]:
        """Run on new messages and return the final :class:`Response` (awaited)."""
        return Pending(self._on_messages(messages, cancellation_token), "agent.on_messages(...)", "agent.run_sync(...)")

    async def _on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken | None
    ) -> Response:
        where = "AssistantAgent.on_messages"
        outgoing = caller_out(messages, cancellation_token)  # decided once: the Response is converted once
        checked, token = check_messages(where, messages), check_token(where, cancellation_token)
        if type(self).on_messages_stream is AssistantAgent.on_messages_stream:
            stream = self._on_messages_stream(checked, token, (None, outgoing is not None))
        else:  # a subclass's stream, as AutoGen's on_messages reads it
            stream = self.on_messages_stream(checked, token)
        response: Any = None
        async with aclosing(stream):
            async for item in stream:
                if isinstance(item, Response) or (hasattr(item, "chat_message") and hasattr(item, "inner_messages")):
                    response = item
        assert response is not None, "on_messages_stream ended without a Response"
        if outgoing is not None and isinstance(response, Response):
            return outgoing.item(response)  # type: ignore[no-any-return]  # the caller's Response type
        return response  # type: ignore[no-any-return]

    def on_messages_stream(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken | None = None
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Response, None]:
        """Run on new messages, yielding each event as it happens and the ``Response`` last.

        Called with AutoGen's chat messages (or with none and AutoGen's ``CancellationToken``), as
        AutoGen's teams call a participant, it yields AutoGen's events, messages and ``Response``
        (:data:`nbagent.agent_input.CALLER`, which :mod:`nbagent.autogen` answers); the run itself and
        its records are nbagent's.
        """
        return Stream(self._on_messages_stream(messages, cancellation_token), "agent.on_messages_stream(...)")

    async def _on_messages_stream(
        self,
        messages: Sequence[BaseChatMessage],
        cancellation_token: CancellationToken | None,
        caller: tuple[ItemsOut | None, bool] | None = None,
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Response, None]:
        """The run's events, each converted to the caller's types when another library called;
        ``caller``: (that converter, whether a team's step-by-step gate applies) when
        :meth:`on_messages` decided it already."""
        where = "AssistantAgent.on_messages_stream"
        if caller is None:
            outgoing = caller_out(messages, cancellation_token)
            gated = outgoing is not None
        else:
            outgoing, gated = caller
        run = self._new_run(check_messages(where, messages), check_token(where, cancellation_token), True)
        run.gated = gated
        try:
            async for item in run:
                if type(item) is ModelClientStreamingChunkEvent or not isinstance(item, NOT_EVENTS):
                    yield item if outgoing is None else outgoing.item(item)
        finally:
            if run.status == "running" or type(run) is not AgentRun:  # (an ended AgentRun's aclose does nothing)
                await run.aclose()

    async def _team_gate(self, run: AgentRun, call: LLMCall) -> None:
        """In an AutoGen team run step by step (:data:`TEAM_CALL_GATE`): wait before the call is sent
        and recorded; its time starts once the wait is over, so the recorders get it right."""
        gate = TEAM_CALL_GATE.get()
        waiting = None if gate is None else gate(self, call)
        if waiting is not None:
            await guarded(waiting, run.token)
            call.started_at, call.start_perf = utc_now(), _perf()

    async def on_pause(self, cancellation_token: CancellationToken | None = None) -> None:  # noqa: B027
        """AutoGen's hook, called when a team pauses; nothing to do (a run is stopped by its token)."""

    async def on_resume(self, cancellation_token: CancellationToken | None = None) -> None:  # noqa: B027
        """AutoGen's hook, called when a team resumes; nothing to do."""

    def run(
        self,
        *,
        task: Task = None,
        cancellation_token: CancellationToken | None = None,
        output_task_messages: bool = True,
    ) -> Pending[TaskResult]:
        """Run a task to the end (awaited): the task messages (unless ``output_task_messages=False``),
        the events and the final message.

        A run that fails (a model error, a cancellation) leaves its task in the context, as STEP 1
        put it there: :meth:`retry` (or ``run()`` with no task) goes on from it; running the same
        task again would put it in twice (a warning says so). Without ``await`` (a script), use
        :meth:`run_sync`; a forgotten ``await`` says so.
        """
        return Pending(
            self._run(task, cancellation_token, output_task_messages), "agent.run(task=...)", "agent.run_sync(task)"
        )

    async def _run(
        self, task: Task, cancellation_token: CancellationToken | None, output_task_messages: bool
    ) -> TaskResult:
        where = "AssistantAgent.run"
        messages = task_messages(task, where)
        token = None if cancellation_token is None else check_token(where, cancellation_token)
        if type(output_task_messages) is not bool:
            check.boolean(where, "output_task_messages", output_task_messages)
        result = await self._run_task(messages if output_task_messages else [], messages, token)
        outgoing = None if token is None else caller_out((), token)  # AutoGen's token: AutoGen's AgentTool
        return result if outgoing is None else outgoing.item(result)  # AutoGen's TaskResult to AutoGen's caller

    def retry(self, *, cancellation_token: CancellationToken | None = None) -> Pending[TaskResult]:
        """Run the last failed run again from where it stopped: the model is called on the context as it is.

        The failed run's task is already in the context (STEP 1 added it) and is not added again;
        what it completed (tool results) is kept, and tools that ran are not run again. The result
        starts with that task's messages, as the failed run's would have. Raises ``RuntimeError``
        when the agent's last run did not fail (see :attr:`failed_run`).
        """
        return Pending(self._retry(cancellation_token), "agent.retry()", "agent.run_sync()")

    async def _retry(self, cancellation_token: CancellationToken | None) -> TaskResult:
        token = check_token("AssistantAgent.retry", cancellation_token)
        failed = self._slot.failed
        if failed is None:
            raise RuntimeError(
                f"agent {self.name!r} has no failed run to retry: its last run ended with an answer, or it has "
                "not run since it was made, reset or loaded; give it a task with run(task=...)"
            )
        return await self._run_task(list(failed.task), [], token)

    async def _run_task(
        self, shown: list[BaseChatMessage], messages: list[BaseChatMessage], token: CancellationToken | None
    ) -> TaskResult:
        collected: list[BaseAgentEvent | BaseChatMessage] = list(shown)
        take = partial(_collect, collected)
        # Streamed chunks are not part of the result: no chunk event is built for nobody to see.
        run = self._new_run(messages, token, False)
        try:
            if type(run) is AgentRun:  # nbagent's own: run to its end, its events taken as they come
                await run.drive(take)
            else:  # a subclass's iter(): every item of its run
                async for item in run:
                    take(item)
        finally:
            if run.status == "running" or type(run) is not AgentRun:  # (an ended AgentRun's aclose does nothing)
                await run.aclose()
        return task_result(collected)

    def run_sync(
        self,
        task: Task = None,
        *,
        cancellation_token: CancellationToken | None = None,
        output_task_messages: bool = True,
    ) -> TaskResult:
        """:meth:`run` without ``await``: works in a script and in a notebook cell (nest-asyncio2)."""
        where = "AssistantAgent.run_sync"
        messages = task_messages(task, where)
        token = check_token(where, cancellation_token)
        check.boolean(where, "output_task_messages", output_task_messages)
        shown = messages if output_task_messages else []
        return run_coroutine(lambda: self._run_task(shown, messages, token), self._interrupted_text)

    def _interrupted_text(self) -> str:
        """What an interrupt of this agent's last run, driven without await, says."""
        return interrupted_text(self.name, "Ctrl-C or a kernel interrupt", self._slot.failed is not None)

    def run_stream(
        self,
        *,
        task: Task = None,
        cancellation_token: CancellationToken | None = None,
        output_task_messages: bool = True,
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | TaskResult, None]:
        """The task messages (unless ``output_task_messages=False``), then every event as it
        happens, then the :class:`TaskResult` (``async for``; a plain ``for`` says so).

        With AutoGen's ``CancellationToken`` (AutoGen's ``AgentTool``, ``TeamTool`` and ``Console``
        callers), :meth:`run` and ``run_stream`` answer in AutoGen's types, as ``on_messages`` does.
        """
        stream = self._run_stream(task, cancellation_token, output_task_messages)
        outgoing = None if cancellation_token is None else caller_out((), cancellation_token)
        if outgoing is not None:
            stream = _items_out(stream, outgoing)
        return Stream(stream, "agent.run_stream(task=...)")

    async def _run_stream(
        self, task: Task, cancellation_token: CancellationToken | None, output_task_messages: bool
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | TaskResult, None]:
        where = "AssistantAgent.run_stream"
        messages = task_messages(task, where)
        token = None if cancellation_token is None else check_token(where, cancellation_token)
        if type(output_task_messages) is not bool:
            check.boolean(where, "output_task_messages", output_task_messages)
        shown = messages if output_task_messages else []
        collected: list[BaseAgentEvent | BaseChatMessage] = list(shown)
        for message in shown:
            yield message
        run = self._new_run(messages, token, True)
        try:  # as ``async with run``, without its two extra awaits
            async for item in run:
                if type(item) is ModelClientStreamingChunkEvent:  # most items of a streamed run
                    yield item
                elif type(item) in NOT_EVENT_TYPES:  # records (exact types first: a set lookup)
                    continue
                elif isinstance(item, Response):
                    collected.append(item.chat_message)
                    yield item.chat_message
                elif not isinstance(item, NOT_EVENTS):
                    collected.append(item)
                    yield item
        finally:
            if run.status == "running" or type(run) is not AgentRun:  # (an ended AgentRun's aclose does nothing)
                await run.aclose()
        yield task_result(collected)

    async def on_reset(self, cancellation_token: CancellationToken | None = None) -> None:
        """Forget the conversation: clear the model context."""
        self._check_idle()
        await clear(self._model_context)
        self._slot.failed = None

    async def save_state(self) -> dict[str, Any]:
        """JSON-serialisable state: the model context's messages, secrets masked as in the trace (a key
        the server echoed in an answer or in tool arguments is ``[REDACTED]``)."""
        return {
            "type": "AssistantAgentState",
            "version": "1.0.0",
            "llm_context": mask_data(await self._model_context.save_state(), process_secrets(self.secrets)),
        }

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`save_state` returned; a malformed state raises and changes nothing."""
        self._check_idle()
        if not isinstance(state, Mapping) or not isinstance(state.get("llm_context"), Mapping):
            raise ValueError("an AssistantAgent state is a mapping with an 'llm_context' mapping")
        try:
            await self._model_context.load_state(dict(state["llm_context"]))
        except ValidationError as error:
            raise ValueError(f"invalid agent state: {error}") from None
        self._slot.failed = None

    async def close(self) -> None:
        """Close the model client and the workbenches (an MCP server is stopped; AutoGen's are left to their owner)."""
        try:
            await close_workbenches(self._workbench)
        finally:
            await self._model_client.close()

    async def _repair_context(self) -> None:
        """Give an error result to tool calls left without one (a run ended between call and result)."""
        messages = self._model_context.messages
        if messages and isinstance(messages[-1], AssistantMessage) and not isinstance(messages[-1].content, str):
            await self._model_context.add_message(
                FunctionExecutionResultMessage(
                    content=[
                        FunctionExecutionResult(
                            content=CANCELLED_TOOL_RESULT, name=call.name, call_id=call.id, is_error=True
                        )
                        for call in messages[-1].content
                    ]
                )
            )

    def _check_idle(self) -> None:
        if self._slot.run is not None:
            self._slot.check()  # raises

    # ------------------------------------------------------------------ the loop

    async def _run_steps(self, run: AgentRun) -> AsyncGenerator[RunItem, None]:
        """STEP 1 to 5 for one call: the single implementation of the loop."""
        token = run.token
        run_id = run.run_id
        inner: list[BaseAgentEvent | BaseChatMessage] = []

        # STEP 1: new messages into model_context.
        yield Move(run_id, "add_messages")
        await self._add_messages_to_context(self._model_context, run.messages)

        # STEP 2: query memory; hits go into the context, one event per store with hits.
        if self._memory:
            yield Move(run_id, "memory")
            given = None if run.plan is None else run.plan.memory  # the seam: a fork's replayed STEP 2
            if given is None:
                events = await self._update_model_context_with_memory(
                    self._memory, self._model_context, self.name, token
                )
            else:
                for message in given.messages:
                    await self._model_context.add_message(message)
                events = [MemoryQueryEvent(content=list(e.content), source=self.name) for e in given.events]
            for event in events:
                inner.append(event)
                yield event

        # STEP 3: a message id, so that streamed chunks can name the message they build.
        yield Move(run_id, "message_id")
        message_id = new_id()

        # STEP 4: call the LLM.
        yield Move(run_id, "call_llm", 0)
        if not self._model_client_stream:  # its two halves, no nested generator (see _model_call)
            for item in await self._call_llm(run, message_id, 0, "initial"):
                yield item
            await self._llm_answer(run)
        else:
            llm_items = self._model_call(run, message_id, 0, "initial")
            try:  # as ``async with aclosing(...)``, without its context manager's calls
                async for item in llm_items:
                    yield item
            except BaseException:  # closed or failed while suspended: closed too (an ended one needs no aclose)
                await llm_items.aclose()
                raise

        # STEP 5: text exit, or the tool loop. A text answer exits here (no nested generator) when STEP 5
        # is nbagent's own (neither a subclass's nor a patch), through the text exit the tool loop ends with.
        result = run.llm_result()
        if type(result.content) is str and getattr(self._process_model_result, "__func__", None) is _OWN_STEP5:
            yield Move(run_id, "text_exit", 0)
            if result.thought:
                yield self._thought(result.thought, inner)
            run.response = await self._text_exit(run, result, inner, message_id)
            yield run.response
            return
        steps = self._process_model_result(run, result, inner, message_id)
        try:
            async for item in steps:
                if type(item) is Response:  # the run's answer (the run keeps it)
                    run.response = item
                yield item
        except BaseException:  # closed or failed while suspended: closed too (an ended one needs no aclose)
            await steps.aclose()
            raise

    async def _add_messages_to_context(
        self, model_context: ChatCompletionContext, messages: Sequence[BaseChatMessage]
    ) -> None:
        """STEP 1. A handoff's context (the calls that came with it) goes in before its message."""
        for message in messages:
            if type(message) is TextMessage:  # the usual task: its to_model_message() made here
                await add_to(model_context, user_message(message.content, message.source))
                continue
            if isinstance(message, HandoffMessage):
                for llm_message in message.context:
                    await model_context.add_message(llm_message)
            await model_context.add_message(message.to_model_message())

    async def _update_model_context_with_memory(
        self,
        memory: Sequence[Memory],
        model_context: ChatCompletionContext,
        agent_name: str,
        cancellation_token: CancellationToken | None,
    ) -> list[MemoryQueryEvent]:
        """STEP 2. Each store adds its new hits to the context; each store with hits gives an event."""
        events: list[MemoryQueryEvent] = []
        for store in memory:
            update = await guarded(update_memory_context(store, model_context, cancellation_token), cancellation_token)
            if update.memories.results:
                events.append(MemoryQueryEvent(content=update.memories.results, source=agent_name))
        return events

    async def _call_llm(self, run: AgentRun, message_id: str, iteration: int, purpose: LLMPurpose) -> list[RunItem]:
        """STEP 4 up to the send: the request (system message, context and tools; a reflection: none),
        as the run's ``plan`` (a walk's interventions: the loop's seam) changed it, the context
        replaced here if asked, and its record, which becomes ``run.llm_call`` (the client it goes to:
        ``run.llm_client``). Returns what to yield before the call is sent: a walk's records, then the
        call's (an AutoGen team walked step by step has held it: :data:`TEAM_CALL_GATE`)."""
        token = run.token
        plan = run.plan
        edit = None
        if plan is not None and plan.active:
            edit = plan.before_llm_call(run.run_id, len(self._model_context.messages))
            if edit.messages is not None:
                await self._model_context.clear()
                for message in edit.messages:
                    await self._model_context.add_message(message)
        client = self._model_client if edit is None or edit.model_client is None else edit.model_client
        system = self._system_messages if edit is None or edit.system_messages is None else edit.system_messages
        view = plain_view(self._model_context)  # without a coroutine where it can be
        if view is None:
            view = await own_view(self._model_context)
        llm_messages = _compatible(client, [*system, *view], self._model_context)
        if edit is not None and edit.answer is not None:  # given: the model is not called
            client = GivenAnswerClient(edit.answer, client)
        tool_choice = "auto"
        if purpose == "reflection":
            tools: list[ToolSchema] = []
            tool_choice = "none"
        else:
            tools = (self._listed_tools or await self._list_tools(token))[0]
            if edit is not None:
                tools = tools if edit.tools is None else edit.tools
                tool_choice = tool_choice if edit.tool_choice is None else edit.tool_choice
        _stop_if_cancelled(token)  # cancelled meanwhile (in the context, a recorder, the consumer): no new call
        # The request of the record; a snapshot (the agent's tool list is copied), so a recorder may keep it.
        request = ModelRequest(llm_messages, list(tools), tool_choice, self._output_content_type, _sent_args(client))
        call = LLMCall(
            run.run_id,
            iteration,
            purpose,
            client.model_name,
            request,
            message_id,
            self._model_client_stream,
            client.provider,
        )
        # What an OpenAI client puts in the body besides messages and tools (its class's MRO, not an ABC
        # isinstance(), and no call at all for other clients: this runs before every model call).
        sends = OpenAIChatCompletionClient in type(client).__mro__
        call.sent = _sent_parameters(client, request, self._model_client_stream) if sends else None  # type: ignore[arg-type]
        run.llm_call, run.llm_client = call, client
        if self._model_client_stream:  # the call keeps its stream: the trace reads chunks from it
            call.chunks, call.chunk_perf = [], array("d")
            if run.chunk_events:
                call.chunk_ids = []
        if run.gated:  # called by an AutoGen team walked step by step: held until sent
            await self._team_gate(run, call)
        return [call] if edit is None else [*edit.records, call]  # a walk's changes, recorded where they take effect

    async def _llm_answer(self, run: AgentRun) -> None:
        """STEP 4's send, unstreamed: the model's answer completes ``run.llm_call`` (an error too)."""
        call, client, token = run.llm_call, run.llm_client, run.token
        assert call is not None and client is not None
        limit = REQUEST_LIMIT.get()  # a limit shared by many runs (nbagent.spark's job-wide one): a slot first
        release = None if limit is None else await _request_slot(limit, call, token)
        try:
            result = await token.guard(_create(client, call.request, token))  # (the run's own token)
        except BaseException as error:
            _call_failed(call, error, release)
            raise
        _call_done(call, result, release)

    async def _model_call(
        self, run: AgentRun, message_id: str, iteration: int, purpose: LLMPurpose
    ) -> AsyncGenerator[RunItem, None]:
        """STEP 4 whole: yield the call's records (:meth:`_call_llm`), then its answer's streamed chunks.

        Once this generator is done, ``run.llm_result()`` is what the model answered (each of the
        loop's three model calls reads it there). An unstreamed call of the tool loop runs its two
        halves (:meth:`_call_llm`, :meth:`_llm_answer`) without it: a nested async generator costs about
        7,400 instructions more than a coroutine.
        """
        for item in await self._call_llm(run, message_id, iteration, purpose):
            yield item
        if not self._model_client_stream:
            await self._llm_answer(run)
            return
        call, client, token = run.llm_call, run.llm_client, run.token
        assert call is not None and client is not None
        chunk_events = run.chunk_events
        # the lists _call_llm gave the call, filled as the stream comes
        pieces, times, ids = (
            cast(list[str], call.chunks),
            cast("array[float]", call.chunk_perf),
            cast(list[str], call.chunk_ids),
        )
        limit = REQUEST_LIMIT.get()
        release = None if limit is None else await _request_slot(limit, call, token)
        try:
            result: CreateResult | None = None
            source = self.name
            request = call.request
            stream = client.create_stream(
                request.messages,
                tools=list(request.tools),  # the record's own list stays as sent
                tool_choice=request.tool_choice,
                json_output=request.json_output,
                cancellation_token=token,
            )
            # Filled when the token fires, checked after each chunk (a list's truth is cheaper than a call).
            stopped: list[None] = []
            stop = partial(stopped.append, None)
            token.add_callback(stop)
            try:
                async with aclosing(stream):  # type: ignore[type-var]
                    async for chunk in stream:
                        if type(chunk) is str:
                            pieces.append(chunk)
                            times.append(_perf())
                            if chunk_events:
                                event = streaming_chunk(chunk, source, message_id)
                                ids.append(event.id)
                                yield event
                            else:
                                yield chunk
                            if stopped:
                                raise asyncio.CancelledError(CANCELLED)
                        elif isinstance(chunk, CreateResult):
                            result = chunk
                        else:  # as AutoGen's agent does
                            raise RuntimeError(f"Invalid chunk type: {type(chunk)}")
            finally:
                token.remove_callback(stop)
            answer = _streamed_result(client, call, stream, result, bool(stopped))
        except BaseException as error:
            _call_failed(call, error, release)
            raise
        _call_done(call, answer, release)

    async def _process_model_result(
        self,
        run: AgentRun,
        model_result: CreateResult,
        inner: list[BaseAgentEvent | BaseChatMessage],
        message_id: str,
    ) -> AsyncGenerator[RunItem, None]:
        """STEP 5. Text ends the run; tool calls run and loop up to ``max_tool_iterations``."""
        run_id = run.run_id
        calls: list[FunctionCall] = []
        results: list[FunctionExecutionResult] = []
        for iteration in range(self._max_tool_iterations):
            text = isinstance(model_result.content, str)
            yield Move(run_id, "text_exit" if text else "tool_request", iteration)
            if model_result.thought:
                yield self._thought(model_result.thought, inner)
            if text:
                yield await self._text_exit(run, model_result, inner, message_id)
                return

            calls = model_result.content  # type: ignore[assignment]  # not a str: the calls
            await add_to(self._model_context, assistant_message(calls, self.name, model_result.thought))
            request = agent_message(ToolCallRequestEvent, calls, self.name, model_result.usage)
            inner.append(request)
            yield request

            yield Move(run_id, "tool_execution", iteration)
            results = []
            # nbagent's own (neither a subclass's nor a patch) runs as its two halves: no nested generator
            # unless a batch runs (see _execute_tool_calls); another's generator is driven as it is.
            own_execution = getattr(self._execute_tool_calls, "__func__", None) is _OWN_EXECUTION
            records, executions, given = self._tool_records(run, calls, iteration) if own_execution else _NO_RECORDS
            for item in records:
                yield item
            execution_items = (
                await self._run_tool_calls(run, executions, given, results)
                if own_execution
                else self._execute_tool_calls(run, calls, iteration, results)
            )
            if execution_items is not None:
                events = _tool_events(execution_items, inner)
                try:
                    async for item in events:
                        yield item
                finally:
                    await events.aclose()
            execution = agent_message(ToolCallExecutionEvent, results, self.name)
            inner.append(execution)
            yield execution

            if self._handoffs:
                yield Move(run_id, "handoff_check", iteration)
                handoff = self._check_and_handle_handoff(model_result, calls, results)
                if handoff is not None:
                    _stop_if_cancelled(run.token)
                    yield Response(chat_message=handoff, inner_messages=inner)
                    return

            if iteration == self._max_tool_iterations - 1:
                break
            yield Move(run_id, "next_llm_call", iteration + 1)
            message_id = new_id()
            if not self._model_client_stream:  # its two halves, no nested generator (see _model_call)
                for item in await self._call_llm(run, message_id, iteration + 1, "tool_loop"):
                    yield item
                await self._llm_answer(run)
            else:
                llm_items = self._model_call(run, message_id, iteration + 1, "tool_loop")
                try:
                    async for item in llm_items:
                        yield item
                finally:
                    await llm_items.aclose()
            model_result = run.llm_result()

        if self._reflect_on_tool_use:
            yield Move(run_id, "reflect", self._max_tool_iterations - 1)
            reflection = self._reflect_on_tool_use_flow(run, inner)
            try:
                async for item in reflection:
                    yield item
            finally:
                await reflection.aclose()
        else:
            yield Move(run_id, "summarize", self._max_tool_iterations - 1)
            _stop_if_cancelled(run.token)
            yield self._summarize_tool_use(calls, results, inner)

    def _thought(self, thought: str, inner: list[BaseAgentEvent | BaseChatMessage]) -> ThoughtEvent:
        """The event of a thought that came with the model's answer, added to the run's inner messages."""
        event = ThoughtEvent(content=thought, source=self.name)
        inner.append(event)
        return event

    async def _text_exit(
        self, run: AgentRun, result: CreateResult, inner: list[BaseAgentEvent | BaseChatMessage], message_id: str
    ) -> Response:
        """STEP 5's text exit, after its move and its thought's event: the answer enters the context and
        its Response ends the run (none once the run was cancelled since the model answered). The one
        text exit of a first answer (:meth:`_run_steps`), of one after tool calls (the tool loop) and of
        the reflection (:meth:`_reflect_on_tool_use_flow`)."""
        assert isinstance(result.content, str)
        _stop_if_cancelled(run.token)  # cancelled since the model answered: the answer does not enter the context
        # added at once to a context that appends without a coroutine (:func:`~nbagent.context.add_to`)
        await add_to(self._model_context, assistant_message(result.content, self.name, result.thought))
        return Response(chat_message=self._answer(result, message_id), inner_messages=inner)

    def _answer(self, result: CreateResult, message_id: str) -> TextMessage | StructuredMessage[BaseModel]:
        assert isinstance(result.content, str)
        if self._output_content_type is None:
            return agent_message(TextMessage, result.content, self.name, result.usage, message_id)
        try:
            content = self._output_content_type.model_validate_json(result.content)
        except ValidationError as error:
            raised = _structured_output_error(error)
            if raised is error:
                raise
            raise raised from error
        return StructuredMessage[self._output_content_type](  # type: ignore[name-defined]
            id=message_id,
            content=content,
            source=self.name,
            models_usage=result.usage,
            format_string=self._output_content_type_format,
        )

    async def _execute_tool_calls(
        self,
        run: AgentRun,
        calls: list[FunctionCall],
        iteration: int,
        results: list[FunctionExecutionResult],
    ) -> AsyncGenerator[Any, None]:
        """Run every call concurrently; fill ``results`` in call order and add them to the context.

        Yields the tool execution records first, then any events the tools stream. If the run is
        cancelled meanwhile, the calls still running are cancelled and awaited, and each call gets a
        result (an error for the unfinished ones), so the context stays valid for the next run.
        (Its two halves, :meth:`_tool_records` and :meth:`_run_tool_calls`, are what STEP 5 runs
        where this method is nbagent's own: a nested async generator costs more than a coroutine.)
        """
        records, executions, given = self._tool_records(run, calls, iteration)
        for record in records:
            yield record
        batch = await self._run_tool_calls(run, executions, given, results)
        if batch is not None:
            async with aclosing(batch):
                async for event in batch:
                    yield event

    def _tool_records(
        self, run: AgentRun, calls: list[FunctionCall], iteration: int
    ) -> tuple[Iterable[Any], list[ToolExecution], list[FunctionExecutionResult | None]]:
        """The first half of :meth:`_execute_tool_calls`: what to yield before the calls run (a walk's
        records, then each call's :class:`ToolExecution`), the executions (filled once those are
        yielded), and the results a walk gave (the loop's seam: those calls are not run)."""
        plan = run.plan
        if plan is not None and plan.active:
            given, walked = plan.tool_results(run.run_id, calls)
            executions: list[ToolExecution] = []
            return _walked_then_executions(walked, executions, run.run_id, iteration, calls), executions, given
        executions = [ToolExecution(run.run_id, iteration, call, len(calls)) for call in calls]
        return executions, executions, [None] * len(calls)

    async def _run_tool_calls(
        self,
        run: AgentRun,
        executions: list[ToolExecution],
        given: list[FunctionExecutionResult | None],
        results: list[FunctionExecutionResult],
    ) -> AsyncGenerator[Any, None] | None:
        """The second half of :meth:`_execute_tool_calls`: a single call of a tool that does not stream
        is run here (``None`` returned); any other batch is run by the generator returned
        (:meth:`_tool_batch`), which yields the events the tools stream."""
        token = run.token
        try:
            # A dynamic workbench lists them again (cancellable).
            _, owners = self._listed_tools or await self._list_tools(token)
            streaming = False  # a loop, not any() of a generator: this runs for every batch of calls
            for execution in executions:
                name = execution.call.name
                owner = owners.get(name)
                if owner is not None and owner.streams(name):
                    streaming = True
                    break
            if len(executions) != 1 or streaming:
                return self._tool_batch(executions, owners, token, given, results, streaming)
            value = await guarded(self._timed_tool_call(executions[0], owners, token, None, given[0]), token)
        except BaseException:
            await self._tool_calls_stopped(executions)
            raise
        results.append(value)
        await add_to(self._model_context, tool_results_message(results))
        return None

    async def _tool_batch(
        self,
        executions: list[ToolExecution],
        owners: Mapping[str, Workbench],
        token: CancellationToken,
        given: list[FunctionExecutionResult | None],
        results: list[FunctionExecutionResult],
        streaming: bool,
    ) -> AsyncGenerator[Any, None]:
        """Run a batch of calls concurrently (each in a task), yielding the events the tools stream."""
        try:
            queue: asyncio.Queue[Any] | None = asyncio.Queue() if streaming else None
            tasks = [
                asyncio.ensure_future(self._timed_tool_call(execution, owners, token, queue, result))
                for execution, result in zip(executions, given)
            ]
            for task in tasks:
                token.link_future(task)
            try:
                gathered = asyncio.gather(*tasks)
                if queue is not None:
                    gathered.add_done_callback(lambda _: queue.put_nowait(None))
                    while (event := await queue.get()) is not None:
                        yield event
                values = await gathered
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
        except BaseException:
            await self._tool_calls_stopped(executions)
            raise
        results.extend(values)
        await add_to(self._model_context, tool_results_message(results))

    async def _tool_calls_stopped(self, executions: list[ToolExecution]) -> None:
        """A batch ended early (cancelled, or failed): a call that finished keeps its result (its record
        has it: _timed_tool_call completed it), also when the token fired as it returned; the others get
        the cancelled error result, and the results go into the context."""
        for execution in executions:
            if execution.result is None:
                call = execution.call
                execution.finish(
                    FunctionExecutionResult(
                        content=CANCELLED_TOOL_RESULT, name=call.name, call_id=call.id, is_error=True
                    )
                )
        partial = [execution.result for execution in executions if execution.result is not None]
        await self._model_context.add_message(FunctionExecutionResultMessage(content=partial))

    async def _timed_tool_call(
        self,
        execution: ToolExecution,
        owners: Mapping[str, Workbench],
        token: CancellationToken | None,
        events: asyncio.Queue[Any] | None,
        given: FunctionExecutionResult | None = None,
    ) -> FunctionExecutionResult:
        """Run one call (or take its ``given`` result) and complete its record when *it* ends (not
        when its batch does)."""
        result = given if given is not None else await self._execute_tool_call(execution.call, owners, token, events)
        execution.finish(result)
        return result

    async def _execute_tool_call(
        self,
        call: FunctionCall,
        owners: Mapping[str, Workbench],
        token: CancellationToken | None,
        events: asyncio.Queue[Any] | None,
    ) -> FunctionExecutionResult:
        """Run one call: a handoff answers with its message; an unknown tool, bad JSON or a workbench
        that raises gives an error result (tool errors never raise out of the run)."""
        handoff = self._handoffs.get(call.name)
        if handoff is not None:
            return FunctionExecutionResult(content=handoff.message, name=call.name, call_id=call.id)
        owner = owners.get(call.name)
        try:
            if owner is None:
                outcome = tool_not_found(call.name)
            elif events is None:
                arguments = parse_arguments(call.name, call.arguments)
                if type(owner) is StaticWorkbench:  # its call_tool has AutoGen's signature and gives a ToolResult
                    outcome = await owner.call_tool(call.name, arguments, token, call.id)
                else:
                    outcome = await invoke_tool(owner, call.name, arguments, token, call.id)
            else:
                outcome = tool_not_found(call.name)  # replaced by the stream's last item
                arguments = parse_arguments(call.name, call.arguments)
                async for item in invoke_tool_stream(owner, call.name, arguments, token, call.id):
                    if isinstance(item, ToolResult):
                        outcome = item
                    else:
                        events.put_nowait(item)
        except ToolArgumentsError as error:
            outcome = ToolResult(call.name, f"Error: {error}", is_error=True)
        except Exception as error:  # a custom workbench that raises: the run goes on with an error result
            outcome = ToolResult(call.name, error_text(error), is_error=True)
        return tool_result(outcome.content, call.name, call.id, outcome.is_error)

    def _check_and_handle_handoff(
        self,
        model_result: CreateResult,
        calls: list[FunctionCall],
        results: list[FunctionExecutionResult],
    ) -> HandoffMessage | None:
        """The first handoff call of the response, as a ``HandoffMessage``; ``None`` if there is none.

        nbagent fix 5: calls are matched by handoff *name* (the tool the model called).
        """
        handoff_calls = [call for call in calls if call.name in self._handoffs]
        if not handoff_calls:
            return None
        if len(handoff_calls) > 1:
            warnings.warn(
                "Multiple handoffs detected. Only the first is executed: "
                f"{[call.name for call in handoff_calls]}. "
                "Disable parallel tool calls in the model client to avoid this warning.",
                UserWarning,
                stacklevel=2,
            )
        chosen = handoff_calls[0]
        handoff = self._handoffs[chosen.name]
        other_calls = [call for call in calls if call.name not in self._handoffs]
        other_results = [result for result in results if result.name not in self._handoffs]
        context: list[LLMMessage] = []
        if other_calls:
            context = [
                AssistantMessage(content=other_calls, source=self.name, thought=model_result.thought),
                FunctionExecutionResultMessage(content=other_results),
            ]
        elif model_result.thought:
            context = [AssistantMessage(content=model_result.thought, source=self.name)]
        content = next(result.content for result in results if result.call_id == chosen.id)
        return HandoffMessage(content=content, target=handoff.target, context=context, source=self.name)

    async def _reflect_on_tool_use_flow(
        self, run: AgentRun, inner: list[BaseAgentEvent | BaseChatMessage]
    ) -> AsyncGenerator[RunItem, None]:
        """After the tool loop: ask the model (no tools) to turn the results into the answer."""
        message_id = new_id()
        llm_items = self._model_call(run, message_id, self._max_tool_iterations - 1, "reflection")
        try:
            async for item in llm_items:
                yield item
        except BaseException:  # closed or failed while suspended: closed too (an ended one needs no aclose)
            await llm_items.aclose()
            raise
        result = run.llm_result()
        if not isinstance(result.content, str):
            raise ModelError(
                f"{self._model_client.model_name} answered the reflection call with tool calls although "
                "tool_choice was 'none'"
            )
        if result.thought:
            yield self._thought(result.thought, inner)
        yield await self._text_exit(run, result, inner, message_id)

    def _summarize_tool_use(
        self,
        calls: list[FunctionCall],
        results: list[FunctionExecutionResult],
        inner: list[BaseAgentEvent | BaseChatMessage],
    ) -> Response:
        """After the tool loop, without reflection: the last batch's results become the answer."""
        by_id = {call.id: call for call in calls}
        lines = []
        for result in results:
            call = by_id[result.call_id]
            if self._tool_call_summary_formatter is not None:
                lines.append(self._tool_call_summary_formatter(call, result))
            else:
                lines.append(
                    self._tool_call_summary_format.format(
                        tool_name=call.name, arguments=call.arguments, result=result.content, is_error=result.is_error
                    )
                )
        summary = ToolCallSummaryMessage(content="\n".join(lines), source=self.name, tool_calls=calls, results=results)
        return Response(chat_message=summary, inner_messages=inner)

    def __repr__(self) -> str:
        return f"AssistantAgent(name={self.name!r}, model={self._model_client.model_name!r})"

    # ------------------------------------------------------------------ component config

    def _to_config(self) -> AssistantAgentConfig:
        if self._tool_call_summary_formatter is not None:
            warnings.warn(
                f"agent {self.name!r}: tool_call_summary_formatter (a function) is not written to the config; "
                "tool_call_summary_format is",
                UserWarning,
                stacklevel=3,
            )
        factory = None
        if self._output_content_type is not None:
            factory = StructuredMessageFactory(
                input_model=self._output_content_type, format_string=self._output_content_type_format
            )
        system = self._system_messages[0].content if self._system_messages else None
        return AssistantAgentConfig(
            name=self.name,
            model_client=dump_nested(self._model_client),
            workbench=[dump_nested(wb) for wb in self._workbench] or None,
            handoffs=list(self._handoffs.values()) or None,
            model_context=dump_nested(self._model_context),
            memory=[dump_nested(store) for store in self._memory] or None,
            description=self.description,
            system_message=system,
            model_client_stream=self._model_client_stream,
            reflect_on_tool_use=self._reflect_on_tool_use,
            tool_call_summary_format=self._tool_call_summary_format,
            max_tool_iterations=self._max_tool_iterations,
            metadata=self.metadata,
            structured_message_factory=None if factory is None else dump_nested(factory),
        )

    @classmethod
    def _from_config(cls, config: AssistantAgentConfig) -> Self:
        factory = None
        if config.structured_message_factory is not None:
            factory = load_nested(config.structured_message_factory, StructuredMessageFactory)
        # AutoGen dumps an agent without tools with an empty workbench: no tools, no workbench here.
        workbenches = [load_nested(wb, Workbench) for wb in config.workbench or ()]
        workbenches = [wb for wb in workbenches if not (isinstance(wb, StaticWorkbench) and not wb.tools)]
        return cls(
            config.name,
            load_nested(config.model_client, ChatCompletionClient),
            tools=[load_tool(tool) for tool in config.tools or ()] or None,
            workbench=workbenches or None,
            handoffs=config.handoffs,
            model_context=None
            if config.model_context is None
            else load_nested(config.model_context, ChatCompletionContext),
            memory=[load_nested(store, Memory) for store in config.memory or ()] or None,
            description=config.description,
            system_message=config.system_message,
            model_client_stream=config.model_client_stream,
            reflect_on_tool_use=config.reflect_on_tool_use,
            max_tool_iterations=config.max_tool_iterations,
            tool_call_summary_format=config.tool_call_summary_format,
            output_content_type=None if factory is None else factory.ContentModel,
            output_content_type_format=None if factory is None else factory.format_string,
            metadata=config.metadata,
        )


_NO_ARGS: Mapping[str, Any] = MappingProxyType({})
_RECORD = attrgetter("record")


def _record_each(records: list[Callable[[RunItem], None]], item: RunItem) -> None:
    """Record ``item`` with each of a run's recorders (their ``record``, in order)."""
    for record in records:
        record(item)


def _record_none(item: RunItem) -> None:
    """What a run records with before it starts: nothing."""


@lru_cache(maxsize=64)
def _shared_settings(memory: bool, handoffs: bool, max_tool_iterations: int, reflect: bool) -> LoopSettings:
    """One (frozen) :class:`LoopSettings` for all the agents with the same settings: not one per new agent."""
    return LoopSettings(memory, handoffs, max_tool_iterations, reflect)


_BASE_CREATE = ChatCompletionClient.create


def _sent_args(client: ChatCompletionClient) -> Mapping[str, Any]:
    """For the record of a call: the parameters ``client`` sends with every request besides the messages
    (an OpenAI client's ``create_args``: temperature, max_tokens...), or none."""
    args = getattr(client, "create_args", None)  # duck-typed: AutoGen's clients have no such attribute
    if args is None:  # most clients (and no ABC isinstance check for them)
        return _NO_ARGS
    return args if isinstance(args, Mapping) and args else _NO_ARGS


def _sent_parameters(
    openai: OpenAIChatCompletionClient, request: ModelRequest, stream: bool
) -> Mapping[str, Any] | None:
    """For the record of a call: what its request puts in the body besides messages and tools (nbagent's
    OpenAI client says), as :func:`_create` sends it (the loop's calls have no extra arguments of their
    own); ``None`` when the request cannot be built (the call itself then raises why)."""
    try:
        return openai.request_parameters(
            ModelRequest((), request.tools, request.tool_choice, request.json_output, _NO_ARGS), stream=stream
        )
    except (TypeError, ValueError):
        return None


_READ_ONLY_COMPLETES = frozenset({OpenAIChatCompletionClient.complete, ReplayChatCompletionClient.complete})
"""``complete`` methods that read their request and change nothing of it (nbagent's own, not overridden)."""


def _create(client: ChatCompletionClient, request: ModelRequest, token: CancellationToken) -> Awaitable[CreateResult]:
    """``client.create(...)`` for the call whose record has ``request``; when ``create`` is nbagent's own
    (not overridden), what it does without the extra call: :meth:`~ChatCompletionClient.complete` on
    the request it would build, with lists of its own (a client that edits them leaves the record as
    it is) and no extra arguments (a call of the loop has none). A ``complete`` known to change nothing
    gets the record's request itself (a trace keeps a long context's messages as a view of its log, so
    a client keeping its requests keeps no copy of the context per call) when it has no extra
    arguments (one request built per call)."""
    if getattr(client.create, "__func__", None) is _BASE_CREATE:
        if request.extra_create_args is _NO_ARGS and type(client).complete in _READ_ONLY_COMPLETES:
            return client.complete(request, token)
        messages, tools = list(request.messages), list(request.tools)
        return client.complete(ModelRequest(messages, tools, request.tool_choice, request.json_output, _NO_ARGS), token)
    return client.create(  # overridden (a subclass, an AutoGen client): called as AutoGen's agent does
        request.messages,
        tools=request.tools,
        tool_choice=request.tool_choice,
        json_output=request.json_output,
        cancellation_token=token,
    )


async def _request_slot(limit: RequestLimit, call: LLMCall, token: CancellationToken) -> Callable[[], None]:
    """A slot of ``limit`` for ``call`` (the function that gives it back); the call fails if none comes."""
    try:
        return await guarded(limit.acquire(), token)
    except BaseException as error:
        _call_failed(call, error, None)
        raise


def _call_done(call: LLMCall, result: CreateResult, release: Callable[[], None] | None) -> None:
    """A model call that answered ``result`` ends, its request slot given back first."""
    if release is not None:
        release()
    call.finish(result)


def _call_failed(call: LLMCall, error: BaseException, release: Callable[[], None] | None) -> None:
    """A model call that raised ``error`` ends (the answer kept if the token fired as it came), its slot given back."""
    if isinstance(error, CancelledWithResult):  # the model answered as the token fired: its answer is kept
        call.finish(error.result)
    else:
        call.finish(None, f"{type(error).__name__}: {error}" if str(error) else type(error).__name__)
    if release is not None:
        release()


_WITHOUT_IMAGES = frozenset({SystemMessage, AssistantMessage, FunctionExecutionResultMessage})


def _compatible(
    client: ChatCompletionClient, messages: list[LLMMessage], context: ChatCompletionContext
) -> list[LLMMessage]:
    """The messages (the system messages and ``context``'s view) as ``client`` can take them: for a model
    without vision, a user message of parts becomes one text, its parts joined by newlines and its images
    ``<image>`` (AutoGen's ``remove_images``, which joins a text-only list too)."""
    if client.model_info.get("vision", False) or holds_parts(context) is False:  # each message read once
        return messages
    # This runs before every model call, over the whole context: exact types first, as isinstance()
    # against a pydantic class costs a Python call (its metaclass checks instances).
    for m in messages:
        if type(m.content) is str or type(m) in _WITHOUT_IMAGES:  # a text, or a message with no images
            continue
        if isinstance(m, UserMessage) and not isinstance(m.content, str):
            break
    else:
        return messages
    return [
        UserMessage(
            content="\n".join(part if isinstance(part, str) else "<image>" for part in message.content),
            source=message.source,
        )
        if isinstance(message, UserMessage) and not isinstance(message.content, str)  # text-only lists too
        else message
        for message in messages
    ]


def _walked_then_executions(
    walked: Iterable[Any], executions: list[ToolExecution], run_id: str, iteration: int, calls: list[FunctionCall]
) -> Iterator[Any]:
    """A walk's records, then the calls' :class:`ToolExecution` records, each made (into ``executions``)
    once the walk's are yielded: its time starts then."""
    yield from walked
    executions.extend(ToolExecution(run_id, iteration, call, len(calls)) for call in calls)
    yield from executions


_OWN_STEP5 = AssistantAgent._process_model_result  # noqa: SLF001 (the class's own, in its module)
"""nbagent's own ``_process_model_result``: a text answer exits in ``_run_steps`` while it is the agent's."""

_OWN_EXECUTION = AssistantAgent._execute_tool_calls  # noqa: SLF001 (the class's own, in its module)
"""nbagent's own ``_execute_tool_calls``: STEP 5 runs its two halves while it is the agent's (not a
subclass's, nor a patch of the class's or of the agent's)."""

_NO_RECORDS: tuple[tuple[()], list[ToolExecution], list[FunctionExecutionResult | None]] = ((), [], [])
"""What STEP 5 yields and runs itself when ``_execute_tool_calls`` is a subclass's or a patch's: nothing."""


async def _tool_events(
    items: AsyncGenerator[Any, None], inner: list[BaseAgentEvent | BaseChatMessage]
) -> AsyncGenerator[Any, None]:
    """The items of a batch of tool calls (or of an ``_execute_tool_calls`` of a subclass's), each event a
    tool streamed added to the run's ``inner`` messages; ``items`` is closed however this ends."""
    try:
        async for item in items:
            if type(item) is not ToolExecution and isinstance(item, (BaseAgentEvent, BaseChatMessage)):
                inner.append(item)  # an event a tool streamed
            yield item
    finally:
        await items.aclose()


def _collect(collected: list[BaseAgentEvent | BaseChatMessage], item: object) -> None:
    """Add a run's ``item`` to the messages of its ``TaskResult`` if it is an event or a message (a
    ``Response``: its message; read as its base if a subclass's, as AutoGen's run does)."""
    kind = type(item)
    if kind is Response:
        collected.append(item.chat_message)  # type: ignore[attr-defined]
    elif kind is str or kind in NOT_EVENT_TYPES:  # a streamed chunk's text, records
        return
    elif isinstance(item, (BaseAgentEvent, BaseChatMessage)):
        collected.append(item)
    elif isinstance(item, Response):
        collected.append(item.chat_message)


def _stop_if_cancelled(token: CancellationToken) -> None:
    """Once its token is cancelled, a run starts no model call and gives no answer: it ends cancelled."""
    if token.is_cancelled():
        raise asyncio.CancelledError(CANCELLED)


async def _items_out(items: AsyncGenerator[Any, None], outgoing: ItemsOut) -> AsyncGenerator[Any, None]:
    """``items``, each in a caller's types (:data:`~nbagent.agent_input.CALLER`)."""
    async with aclosing(items):
        async for item in items:
            yield outgoing.item(item)


def _streamed_result(
    client: ChatCompletionClient, call: LLMCall, stream: object, result: CreateResult | None, stopped: bool
) -> CreateResult:
    """The answer of a model call whose ``stream`` has ended (``stopped``: its run's token fired)."""
    if not call.chunks and isinstance(stream, ModelStream):  # tool calls only: the client's time
        call.first_chunk_perf = stream.first_chunk_perf
    if stopped:  # fired after the last text chunk: the answer is kept, the run ends here
        raise _cancelled_with(result)
    if result is None:
        raise ModelError(  # AutoGen's words too
            f"the stream of {client.model_name} ended without a final result (No final model result in streaming mode)"
        )
    return result


def _cancelled_with(result: CreateResult | None) -> asyncio.CancelledError:
    """How a stream whose token fired ends: cancelled, keeping the model's answer if it came."""
    if result is None:
        return asyncio.CancelledError(CANCELLED)
    return CancelledWithResult(result)


def replayed(where: str, agent: object, task: object) -> tuple[Any, Any]:
    """An entry point's ``(agent, task)``: a :class:`Replay` becomes its agent and its recorded task."""
    replays = sys.modules.get("nbagent.trace.replay")  # not imported: ``agent`` cannot be a Replay
    if replays is None or not isinstance(agent, replays.Replay):
        return agent, task
    if task is not None:
        raise check.wrong_value(
            where, "task", "None with a replay (it runs its recorded task)", task, "Pass the replay alone"
        )
    return AssistantAgent.from_replay(agent), list(agent.task)


def check_entry(where: str, agent: object, task: object, token: object, *, runs: bool = False) -> None:
    """The arguments of an entry point that runs ``task`` on ``agent`` (``nbagent.run``, ``show``, ``step``...)."""
    check_agent(where, agent, task, runs=runs)
    if not isinstance(agent, AgentRun):
        task_messages(task, where)  # type: ignore[arg-type]
    check_token(where, token)


def check_agent(where: str, agent: object, task: object = None, *, runs: bool = False) -> None:
    """The ``agent`` (or run) an entry point such as ``nbagent.show`` drives; swapped arguments are named."""
    if isinstance(agent, AssistantAgent) or (runs and isinstance(agent, AgentRun)):
        return
    expected = "an AssistantAgent" + (" or an AgentRun" if runs else "")
    hint = ""
    if isinstance(task, AssistantAgent):
        hint = f"The agent comes first: {where}(agent, task) (the arguments look swapped)"
    else:
        hint = HINT(agent, "agent") or ""  # AutoGen's own agents and teams: nbagent.autogen.run(agent, task)
    raise check.wrong_type(where, "agent", expected, agent, hint)


def interrupted_text(agent: str, why: str, kept_task: bool) -> str:
    """What an interrupted run of ``agent`` says: ``why``, and what is left."""
    left = "its context is valid (every tool call has a result)"
    if kept_task:
        left += " and keeps the task: agent.retry() goes on from it"
    return f"the run of agent {agent!r} was interrupted ({why}); {left}"


class AgentRun(RunIterator):
    """One run of an agent, item by item: ``Move`` boundaries, records, events and the ``Response``.

    It marks the agent busy from its first step to its end, feeds every item to the agent's
    recorders, and leaves the context valid however the run ends (``aclose()`` included).
    The agent (:meth:`AssistantAgent.iter`) hands it what it drives: the agent's run ``slot``, its
    loop (``steps``, i.e. ``_run_steps``, which sets ``llm_call``, ``llm_client`` and ``response`` as
    it goes) and the context repair (``repair``).
    """

    __slots__ = (
        "agent", "messages", "cancellation_token", "chunk_events", "token", "run_id", "status", "response",
        "llm_call", "llm_client", "plan", "gated", "events_only", "_slot", "_loop", "_repair", "_record_all",
        "__weakref__",
    )  # fmt: skip
    token: CancellationToken  # the run's own, linked to the caller's ``cancellation_token``

    def __init__(
        self,
        agent: AssistantAgent,
        messages: list[BaseChatMessage],
        cancellation_token: CancellationToken | None,
        chunk_events: bool,
        slot: _RunSlot,
        steps: Callable[[AgentRun], AsyncGenerator[RunItem, None]],
        repair: Callable[[], Awaitable[None]],
        plan: Interventions | None = None,
        *,
        events_only: bool = False,
    ) -> None:
        self.agent = agent
        self.messages = messages
        self.cancellation_token = cancellation_token
        self.chunk_events = chunk_events
        self.token = CancellationToken()
        self.run_id = new_id()
        self.status: str = "new"
        self.response: Response | None = None  # the answer, once the loop has yielded it
        self.llm_call: LLMCall | None = None  # the run's current (last started) model call
        self.llm_client: ChatCompletionClient | None = None  # the client it is sent to
        self.plan = plan  # what a walk changes at move boundaries: the loop's one seam (interventions.py)
        self.gated = False  # run for an AutoGen team: its model calls ask TEAM_CALL_GATE first
        # Its consumer (run, run_stream, on_messages...) takes no records and no streamed text (str):
        # they are recorded, and not yielded.
        self.events_only = events_only
        self._slot = slot
        self._loop = steps
        self._repair = repair
        self._record_all: Callable[[RunItem], None] = _record_none  # records an item with each recorder
        self._advancing = False
        self._ended: asyncio.Event | None = None
        self._items: AsyncGenerator[RunItem, None] | None = None

    def llm_result(self) -> CreateResult:
        """What the model answered to the run's last call (``llm_call``), once that call has ended."""
        call = self.llm_call
        if call is None or call.result is None:
            raise RuntimeError("the run has no ended model call")
        return call.result

    def _start(self) -> tuple[RunStarted, AsyncGenerator[RunItem, None]]:
        """Start the run (its slot taken, its loop made): its first record, and its loop's items."""
        slot = self._slot
        if slot.run is not None:
            slot.check()  # raises: another run holds the slot
        if self.cancellation_token is not None:
            if self.cancellation_token.is_cancelled():
                raise asyncio.CancelledError(f"{CANCELLED} before the run started")
            self.cancellation_token.add_callback(self.token.cancel)
        if slot.failed is not None:
            slot.warn_if_repeated(self.messages)
        slot.run = self  # checked above: the slot is free
        records = list(map(_RECORD, self.agent.recorders))  # each recorder's ``record``
        self._record_all = records[0] if len(records) == 1 else partial(_record_each, records)  # (one: no loop)
        steps = self._loop(self)
        self.status = "running"
        parent = None if self.plan is None else self.plan.parent
        settings = self.agent.loop_settings
        if parent is None:
            return RunStarted(self.run_id, self.agent.name, self.messages, loop_settings=settings), steps
        started = RunStarted(
            self.run_id,
            self.agent.name,
            self.messages,
            forked_from=parent[0],
            fork_move=parent[1],
            loop_settings=settings,
        )
        return started, steps

    async def _iterate(self) -> AsyncGenerator[RunItem, None]:
        """Start the run, pass every item on (recorded, but streamed chunks; for an ``events_only``
        consumer only the events, messages and Response), end it however it ends.

        ``_advancing`` is true while the loop runs (the generator awaits ``_run_steps``) and false
        while the consumer holds an item: it tells :meth:`aclose` how to end the run.
        """
        if self.status != "new":
            return
        started, steps = self._start()
        record = self._record_all
        events_only = self.events_only
        try:
            record(started)
            if not events_only:
                yield started
            self._advancing = True
            async for item in steps:
                kind = type(item)
                if kind is str:  # streamed text (recorders read streamed chunks from the LLMCall's stream)
                    if events_only:
                        continue
                elif kind is not ModelClientStreamingChunkEvent:
                    record(item)
                    if events_only and kind in NOT_EVENT_TYPES:
                        continue
                self._advancing = False
                yield item
                self._advancing = True
        except GeneratorExit:  # closed by aclose() while the consumer held an item
            try:
                await steps.aclose()
            finally:
                await self._repair()
                self._finish("cancelled")
            raise
        except BaseException as error:
            await self._failed(error)
            raise
        self._advancing = False
        finished = self._finish("ok")
        if not events_only:
            yield finished

    async def drive(self, take: Callable[[RunItem], object]) -> None:
        """Run to the end without iterating (nothing is held between items): ``take`` is called with each
        event, message and the ``Response`` as they come; every item is recorded, as :meth:`__aiter__`'s.
        A run that is not new does nothing. How :meth:`AssistantAgent.run` takes its events: no
        iteration of the run (an async generator) is made and passed through."""
        if self.status != "new":
            return
        started, steps = self._start()
        record = self._record_all
        try:
            record(started)
            self._advancing = True  # the whole run: aclose() from another task cancels it where it awaits
            async for item in steps:
                kind = type(item)
                if kind is ModelClientStreamingChunkEvent:  # (recorders read chunks from the LLMCall's stream)
                    take(item)
                elif kind is not str:  # (streamed text is not an event)
                    record(item)
                    if kind not in NOT_EVENT_TYPES:  # an event, a message or the Response
                        take(item)
        except BaseException as error:
            await self._failed(error)
            raise
        self._advancing = False
        self._finish("ok")

    async def _failed(self, error: BaseException) -> None:
        """End the run that ``error`` (a cancellation, or a failure) stopped: the context repaired, the
        run cancelled (said why, if from outside) or failed."""
        self._advancing = False
        await self._repair()
        if not isinstance(error, asyncio.CancelledError | GeneratorExit):  # (GeneratorExit: a driven run closed)
            self._finish("error", error)
            return
        self._finish("cancelled")
        # From outside: neither the caller's token nor aclose().
        if isinstance(error, asyncio.CancelledError) and not self.token.is_cancelled():
            why = "the task awaiting it was cancelled: a kernel interrupt, Ctrl-C, task.cancel() or a timeout"
            explain_cancellation(error, interrupted_text(self.agent.name, why, self._slot.failed is not None))

    def _finish(self, status: str, error: BaseException | None = None) -> RunFinished:
        self.status = status
        text = None if error is None else f"{type(error).__name__}: {error}"
        failed = None
        if status != "ok" and self.response is None:  # no answer: the task stays in the context, to retry
            previous = self._slot.failed
            task = self.messages or (previous.task if previous is not None else [])  # a retry keeps its task
            failed = FailedRun(self.run_id, status, text, task)  # type: ignore[arg-type]
        slot = self._slot
        if slot.run is self:  # released (another run may hold it after an aclose from outside)
            slot.run = None
            slot.failed = failed
        if self.cancellation_token is not None:
            remove = getattr(self.cancellation_token, "remove_callback", None)  # AutoGen's token has none
            if remove is not None:
                remove(self.token.cancel)
        if self._ended is not None:
            self._ended.set()
        finished = RunFinished(self.run_id, self.agent.name, status, text)  # type: ignore[arg-type]
        self._record_all(finished)
        return finished

    async def aclose(self) -> None:
        """End the run where it is; the context is repaired so that every tool call has a result.

        Called while a task awaits the run's next item (a Stop button), it cancels the run at that
        await, which raises ``CancelledError`` in that task, and returns once the run has ended.
        (Called from inside the run, by a tool, the same cancellation ends the tool and the run.)
        """
        if self.status == "running":
            await self._stop()

    def __repr__(self) -> str:
        return f"AgentRun(agent={self.agent.name!r}, run_id={self.run_id!r}, status={self.status!r})"
