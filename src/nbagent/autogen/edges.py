"""AutoGen's tools and model contexts given to nbagent's ``AssistantAgent``, converted exactly or refused.

* A tool of AutoGen's (``autogen_core.tools.FunctionTool``, any ``BaseTool`` or object speaking its
  ``Tool`` protocol) in ``tools=`` becomes an :class:`AutoGenTool`: the same name, description and
  schema, run by the tool itself (``run_json``, its ``return_value_as_string``), so it behaves as it
  does under AutoGen's agent.
* AutoGen's model contexts in ``model_context=`` become nbagent's twin
  (:func:`context_from_autogen`): the kind and settings read from the context's component config,
  and the messages it holds (its saved state, its initial messages included). A context nbagent has
  no twin for, or one whose state cannot be read at once, is refused with an error saying it is
  AutoGen's and what to pass instead.

Nothing of AutoGen is imported before an AutoGen object is handed over.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Coroutine, Mapping
from typing import Any

from .. import _check as check
from ..cancellation import CancellationToken
from ..components import ComponentModel, dump_nested, load_component
from ..context import ChatCompletionContext
from ..tools import BaseTool
from .convert import Converter, autogen_token, llm_message

_CONTEXTS = (
    "UnboundedChatCompletionContext(), BufferedChatCompletionContext(buffer_size=...), "
    "HeadAndTailChatCompletionContext(head_size=..., tail_size=...) or "
    "TokenLimitedChatCompletionContext(model_client, token_limit=...) from nbagent"
)


def is_autogen_tool(value: object) -> bool:
    """Whether ``value`` is AutoGen's tool (its ``BaseTool``, or a class of an AutoGen module with its
    ``Tool`` protocol's ``schema`` and ``run_json``); imports no AutoGen."""
    tools = sys.modules.get("autogen_core.tools")
    if tools is not None and isinstance(value, tools.BaseTool):
        return True
    module = type(value).__module__
    return module.startswith("autogen") and hasattr(value, "run_json") and hasattr(value, "schema")


class AutoGenTool(BaseTool[Any, Any]):
    """AutoGen's tool as nbagent's: its name, description and schema; run by the tool itself."""

    def __init__(self, tool: Any) -> None:
        self.tool = tool
        self._name = str(tool.name)
        self._description = str(tool.description)
        self.schema = tool.schema  # as AutoGen built it (strict, titles and all)

    def args_type(self) -> Any:
        return self.tool.args_type()

    def return_type(self) -> Any:
        return self.tool.return_type()

    def state_type(self) -> Any:
        return self.tool.state_type()

    def return_value_as_string(self, value: Any) -> str:
        return str(self.tool.return_value_as_string(value))

    async def run(self, args: Any, cancellation_token: CancellationToken) -> Any:
        """The tool run on validated arguments: its ``run_json`` on their dump."""
        dumped = args.model_dump() if hasattr(args, "model_dump") else dict(args)
        return await self.run_json(dumped, cancellation_token)

    async def run_json(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken | None = None, call_id: str | None = None
    ) -> Any:
        """The tool's own ``run_json`` with AutoGen's ``CancellationToken``, fired by nbagent's."""
        return await self.tool.run_json(args, autogen_token(cancellation_token), call_id=call_id)

    @property
    def streams(self) -> bool:
        """True for AutoGen's stream tools (``BaseStreamTool``: ``AgentTool``, ``TeamTool``...)."""
        stream_tools = sys.modules.get("autogen_core.tools")
        return stream_tools is not None and isinstance(self.tool, stream_tools.BaseStreamTool)

    async def run_json_stream(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken | None = None, call_id: str | None = None
    ) -> AsyncIterator[Any]:
        """The tool's own ``run_json_stream``: AutoGen's events and messages as nbagent's (an inner
        agent's or team's, streamed through ``AgentTool``/``TeamTool`` as AutoGen's agent streams them),
        its return value last as it is."""
        if not self.streams:
            yield await self.run_json(args, cancellation_token, call_id)
            return
        from autogen_agentchat.messages import BaseAgentEvent, BaseChatMessage

        converter = Converter()
        items = self.tool.run_json_stream(args, autogen_token(cancellation_token), call_id=call_id)
        try:
            async for item in items:
                yield converter.item(item) if isinstance(item, (BaseAgentEvent, BaseChatMessage)) else item
        finally:
            await items.aclose()

    async def save_state_json(self) -> Mapping[str, Any]:
        return dict(await self.tool.save_state_json())

    async def load_state_json(self, state: Mapping[str, Any]) -> None:
        await self.tool.load_state_json(state)

    def dump_component(self, *, include_secrets: bool | None = None) -> ComponentModel:
        """The tool's own component config (AutoGen's, as nbagent's ``ComponentModel``)."""
        return dump_nested(self.tool)

    def __repr__(self) -> str:
        return f"AutoGenTool({self.tool!r})"


def _finished(coroutine: Coroutine[Any, Any, Any]) -> tuple[bool, Any]:
    """Run ``coroutine`` to its end if it never waits (AutoGen's contexts' ``save_state`` does not):
    ``(True, value)``; ``(False, None)`` (closed) if it would wait."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return True, done.value
    coroutine.close()
    return False, None


def context_from_autogen(context: Any, where: str = "AssistantAgent") -> ChatCompletionContext:
    """AutoGen's model context as nbagent's twin holding the same messages; a ``TypeError`` saying it
    is AutoGen's and what to pass instead when the conversion would not be exact."""
    kind = type(context).__name__

    def refuse(reason: str) -> TypeError:
        return check.wrong_type(
            where,
            "model_context",
            "one of nbagent's model contexts",
            context,
            f"This is AutoGen's {kind}, which nbagent converts only when it can do so exactly ({reason}): "
            f"pass {_CONTEXTS}",
        )

    if not type(context).__module__.startswith("autogen_core.model_context"):
        # A subclass dumps under its AutoGen base's provider: converting it would drop what it adds.
        raise refuse("a subclass of AutoGen's contexts behaves as its own code says")
    try:
        config = context.dump_component()
        converted = load_component(config, ChatCompletionContext)
    except Exception as error:  # a context of its own, or settings nbagent's twin refuses
        raise refuse(f"{type(error).__name__}: {error}") from None
    done, state = _finished(context.save_state())
    if not done or not isinstance(state, Mapping) or not isinstance(state.get("messages"), list):
        raise refuse("its state cannot be read at once")
    try:
        messages = [llm_message(_autogen_llm(item)) for item in state["messages"]]
    except Exception as error:
        raise refuse(f"a message it holds: {error}") from None
    loaded, _ = _finished(converted.load_state({"messages": [m.model_dump(mode="json") for m in messages]}))
    if not loaded:
        raise refuse("nbagent's context could not take its messages at once")
    assert isinstance(converted, ChatCompletionContext)
    return converted


def _autogen_llm(item: Any) -> Any:
    """A message of an AutoGen context's saved state (an object, or its dump) as AutoGen's LLM message."""
    if not isinstance(item, Mapping):
        return item
    from autogen_core import models as agm

    kinds: dict[str, Any] = {
        "SystemMessage": agm.SystemMessage,
        "UserMessage": agm.UserMessage,
        "AssistantMessage": agm.AssistantMessage,
        "FunctionExecutionResultMessage": agm.FunctionExecutionResultMessage,
    }
    model = kinds.get(str(item.get("type")))
    if model is None:
        raise TypeError(f"not an LLM message: {item.get('type')!r}")
    return model.model_validate(dict(item))
