"""AutoGen at its one seam: the converters this package registers into the core's hooks.

The core (the agent, contexts, tools, model clients, the console) knows no AutoGen: where it meets an
object that is not its own it asks a :class:`~nbagent.hooks.Hook`. :func:`register` (run when
``nbagent.autogen`` is imported, which ``import nbagent`` does) answers them for AutoGen:

* ``messages.TWIN``: AutoGen's ``FunctionCall``, ``FunctionExecutionResult``, ``Image``,
  ``MemoryContent`` and LLM messages, field by field;
* ``agent_input.CHAT_IN`` and ``CALLER``: AutoGen's chat messages in, and for AutoGen's callers (its
  teams' containers) every item of a run out in AutoGen's types (:mod:`.protocol`);
  ``agent_input.MESSAGE_TYPE_IN``: AutoGen's chat message classes as nbagent's (``produced_message_types``);
* ``tools.FOREIGN_TOOL``: AutoGen's tools, run by themselves (:class:`.edges.AutoGenTool`);
* ``context.FOREIGN_CONTEXT``: AutoGen's own model contexts as their exact twins, a subclass of them
  by its protocol with AutoGen's messages (:class:`~nbagent.context.ProtocolContext`);
  ``context.FOREIGN_VIEW``: any of them in place by that protocol (given to nbagent's memory), and
  ``memory.RESULT_FOR``: nbagent's memory's result for AutoGen's agent in AutoGen's types;
  ``context.MESSAGE_BACK``: nbagent's context fed AutoGen's messages (AutoGen's agent holding it) gives
  AutoGen's back from ``get_messages``;
* ``models.bridge.FOREIGN_CLIENT``: AutoGen's model clients, sent AutoGen's messages and token;
* ``messages.SHARED_RESULT`` (registered once ``autogen_agentchat.base`` is imported): a run's
  ``TaskResult`` is AutoGen's too (:mod:`.results`), so AutoGen's ``Console`` over
  ``agent.run_stream(task=...)`` ends on it;
* ``models.base.RESULT_OUT``: nbagent's clients called by AutoGen's agent answer AutoGen's ``CreateResult``;
* ``models.base.CALL_EVENT``: nbagent's OpenAI clients' calls logged on AutoGen's event logger, their
  answers' quirks warned, as AutoGen's client does; ``tools.TOOL_RAN`` (registered once
  ``autogen_core.logging`` is imported): nbagent's tool calls logged there as AutoGen's tools log theirs
  (:mod:`.events`);
* ``console.FOREIGN_STREAM``: the items of AutoGen's streams, for ``nbagent.Console``;
* ``records.FOREIGN_RUN`` and ``FOREIGN_STEPPER`` (registered by the package, which makes the runs and
  steppers): AutoGen's agents and teams in nbagent's live view and stepper;
* ``agent.AGENT_MADE`` and AutoGen's imports: nbagent's ``AssistantAgent`` is a virtual subclass of
  AutoGen's ``ChatAgent`` and ``BaseChatAgent``, so AutoGen's teams and ``AgentTool`` take it, and
  nbagent's model clients, memories, model contexts, tools and workbenches of AutoGen's
  ``ChatCompletionClient``, ``Memory``, ``ChatCompletionContext``, ``BaseTool`` and ``Workbench``, so
  AutoGen's agent and loader take them;
* ``components.DUMPED`` and AutoGen's loader: nbagent's dumps in AutoGen's configs, and back
  (:mod:`.loaders`); ``components.FOREIGN_COMPONENT``: AutoGen's team configs loaded by nbagent;
* ``hooks.HINT``: what to say when AutoGen's object is given where nbagent's is expected.

Each converter first reads ``sys.modules``: an object of a module never imported cannot be AutoGen's,
so registering imports no AutoGen module, and neither does any hook's answer for nbagent's objects.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .. import agent as agent_module
from .. import agent_input as agent_in
from .. import components, context, hooks, memory, messages, tools
from .._imports import when_imported
from ..models import base as model_base
from ..models import bridge
from .events import call_event, tool_ran

if TYPE_CHECKING:
    from .. import console

AUTOGENS_OWN = frozenset({"autogen_agentchat", "autogen_core"})
"""AutoGen's packages whose modules a config may name (teams, conditions, agents) and make nbagent import,
as AutoGen's loader would; any other module (autogen_ext's reach other libraries) must be imported first."""
_LLM_NAMES = frozenset({"SystemMessage", "UserMessage", "AssistantMessage", "FunctionExecutionResultMessage"})


def _autogen(value: object, module: str = "autogen") -> bool:
    return type(value).__module__.startswith(module)


def _loaded(name: str) -> ModuleType | None:
    return sys.modules.get(name)


# ---------------------------------------------------------------------- data


def twin(value: object, name: str) -> Any:
    """AutoGen's twin of nbagent's type ``name`` as what nbagent's type validates; ``None`` otherwise."""
    if not _autogen(value, "autogen_core"):
        return None
    kind = type(value).__name__
    if name == "LLMMessage":
        if kind not in _LLM_NAMES:
            return None
        from .convert import llm_message

        return llm_message(value)
    if kind != name:
        return None
    item: Any = value
    if name == "FunctionCall":
        return {"id": item.id, "name": item.name, "arguments": item.arguments}
    if name == "FunctionExecutionResult":  # AutoGen's is_error=None is False
        return {"content": item.content, "name": item.name, "call_id": item.call_id, "is_error": bool(item.is_error)}
    if name == "Image":  # its base64 data and its data URI's type
        from .convert import image

        made = image(item)
        return {"data": made.data, "mime_type": made.mime_type}
    if name == "MemoryContent":  # its MemoryMimeType as its string
        mime = item.mime_type
        return {"content": item.content, "mime_type": getattr(mime, "value", mime), "metadata": item.metadata}
    return None


def shared_result(result: messages.TaskResult) -> messages.TaskResult | None:
    """Once AutoGen's ``TaskResult`` is imported: ``result`` as a subclass of nbagent's and AutoGen's;
    ``None`` when AutoGen's name is nbagent's class (an import shim re-exporting nbagent's names)."""
    base = _loaded("autogen_agentchat.base")
    theirs = getattr(base, "TaskResult", None)
    if not isinstance(theirs, type) or issubclass(theirs, messages.TaskResult):
        return None
    from .results import shared

    return shared(result)


def message_back(message: object) -> Callable[[Any], Any] | None:
    """For AutoGen's LLM message added to nbagent's context (AutoGen's agent holding it): the converter
    of nbagent's LLM messages to AutoGen's, which its ``get_messages`` answers in; ``None`` otherwise."""
    if not _autogen(message, "autogen_core") or type(message).__name__ not in _LLM_NAMES:
        return None
    from .convert import llm_message_out

    return llm_message_out


def chat_in(value: object) -> messages.BaseChatMessage | None:
    """AutoGen's chat message as nbagent's (every field and id kept); ``None`` otherwise."""
    found = _loaded("autogen_agentchat.messages")
    if found is None or not isinstance(value, found.BaseChatMessage):
        return None
    from .protocol import chat_in as convert

    return convert(value)


def message_type(value: type) -> type[messages.BaseChatMessage] | None:
    """nbagent's chat message class of the name of AutoGen's ``value`` (AutoGen's ``Swarm`` asks whether
    its ``HandoffMessage`` is among an agent's ``produced_message_types``); ``None`` otherwise."""
    found = _loaded("autogen_agentchat.messages")
    if found is None or not issubclass(value, found.BaseChatMessage):
        return None
    ours = getattr(messages, value.__name__, None)
    return ours if isinstance(ours, type) and issubclass(ours, messages.BaseChatMessage) else None


def caller(items: Sequence[Any], token: object) -> agent_in.ItemsOut | None:
    """When AutoGen calls ``on_messages(_stream)`` (its chat messages, or none and its token: a team's
    container), the converter of the run's items to AutoGen's types; ``None`` otherwise."""
    found = _loaded("autogen_agentchat.messages")
    if found is None:
        return None
    if items:
        if not any(isinstance(item, found.BaseChatMessage) for item in items):
            return None
    elif not _autogen(token, "autogen_core"):
        return None
    from .protocol import Outgoing

    return Outgoing()


def tool(value: object) -> tools.BaseTool | None:
    """AutoGen's tool as nbagent's, run by itself; ``None`` otherwise."""
    if isinstance(value, tools.BaseTool) or _loaded("autogen_core") is None:
        return None
    from .edges import AutoGenTool, is_autogen_tool

    return AutoGenTool(value) if is_autogen_tool(value) else None


def model_context(value: object, where: str) -> context.ChatCompletionContext | None:
    """AutoGen's own model context as its exact twin; a subclass of AutoGen's (or a context its twin
    would not hold exactly) by its protocol, given and read in AutoGen's messages; ``None`` otherwise
    (a ``MagicMock(spec=...)`` of AutoGen's context is taken by the core, by protocol)."""
    found = _loaded("autogen_core.model_context")
    if found is None or found.ChatCompletionContext not in type(value).__mro__:
        return None
    from .edges import context_from_autogen

    if _autogen(value, "autogen_core.model_context"):
        try:
            return context_from_autogen(value, where)
        except TypeError:  # settings or a state nbagent's twin cannot hold exactly: used as it is
            pass
    return context_view(value)


def context_view(value: object) -> context.ProtocolContext | None:
    """AutoGen's model context used in place by its protocol, given and read in AutoGen's messages
    (AutoGen's agent giving it to nbagent's memory); ``None`` for any other object."""
    found = _loaded("autogen_core.model_context")
    if found is None or found.ChatCompletionContext not in type(value).__mro__:
        return None
    from .convert import llm_message, llm_message_out

    return context.ProtocolContext(value, message_out=llm_message_out, message_in=llm_message)


def memory_result(model_context: object, result: memory.UpdateContextResult) -> object | None:
    """nbagent's memory given AutoGen's model context, or nbagent's fed AutoGen's messages (AutoGen's agent
    calling, holding either): its result as AutoGen's ``UpdateContextResult``; ``None`` otherwise."""
    fed = isinstance(model_context, context.ChatCompletionContext) and model_context.answers_back is not None
    if not fed and context_view(model_context) is None:
        return None
    from autogen_core import memory as ag_memory

    from .protocol import memory_out

    found = ag_memory.MemoryQueryResult(results=[memory_out(item) for item in result.memories.results])
    return ag_memory.UpdateContextResult(memories=found)


def model_client(value: object) -> bridge.BridgedClient | None:
    """AutoGen's model client, bridged: sent AutoGen's messages and token; ``None`` otherwise."""
    found = _loaded("autogen_core.models")
    if found is None or not isinstance(value, found.ChatCompletionClient):
        return None
    from .convert import PROVIDERS, autogen_token, llm_message_out

    provider = PROVIDERS.get(type(value).__name__, "unknown")
    return bridge.BridgedClient(value, message_out=llm_message_out, token_out=autogen_token, provider=provider)


def result_out(sent: Sequence[object]) -> Callable[[Any], Any] | None:
    """When AutoGen's messages are sent to nbagent's client (AutoGen's agent calling it): the
    converter of its answer to AutoGen's ``CreateResult``; ``None`` otherwise."""
    if not any(_autogen(message, "autogen_core") for message in sent):
        return None
    from .convert import create_result_out

    return create_result_out


def dumped(model: components.ComponentModel) -> components.ComponentModel | None:
    """Once AutoGen is imported: a dump as a model AutoGen's configs take too (:mod:`.loaders`)."""
    if _loaded("autogen_core") is None:
        return None
    from .loaders import shared

    return shared(model)


def foreign_component(model: components.ComponentModel) -> object:
    """Once AutoGen is imported: AutoGen's component of an ``autogen_*`` provider nbagent has no class
    for (a team, a termination condition), built by AutoGen's loader from a config whose parts nbagent
    has counterparts of are nbagent's (:mod:`.loaders`). A config naming ``autogen_agentchat`` or
    ``autogen_core`` imports AutoGen (installed), as AutoGen's loader would."""
    root = model.provider.split(".")[0]
    if not root.startswith("autogen") or _nbagents_component(model.provider):
        return None
    if _loaded("autogen_core") is None and (root not in AUTOGENS_OWN or importlib.util.find_spec(root) is None):
        return None
    importlib.import_module("autogen_core")  # first: its import hook imports .loaders
    from .loaders import load_autogens

    return load_autogens(model, AUTOGENS_OWN)


def _nbagents_component(provider: str) -> bool:
    """Whether ``provider`` names a class of nbagent's component protocol in a module already imported (a
    module of the user's whose name starts with ``autogen``): nbagent's loader builds it, not AutoGen's."""
    module_name, _, class_name = provider.rpartition(".")
    found = getattr(sys.modules.get(module_name), class_name, None)
    return isinstance(found, type) and components.is_component_class(found)


def _loadable(module: ModuleType) -> None:
    """At ``autogen_core``'s import: nbagent's providers made known to AutoGen's loader, which
    :mod:`.loaders` does once it is loaded (also when it is the module importing ``autogen_core``: its
    import is then under way, and it does so at its end)."""
    from . import loaders  # noqa: F401 (imported for what its loading does)


def stream(first: object) -> console.Reader | None:
    """For a stream whose first foreign item is AutoGen's: the reader of its items; ``None`` otherwise."""
    if not _autogen(first, "autogen_agentchat"):
        return None
    from .convert import Converter

    converter = Converter()
    base = sys.modules["autogen_agentchat.base"]

    def read(item: object) -> tuple[str, object] | None:
        if not _autogen(item, "autogen_agentchat"):
            return None
        if isinstance(item, base.TaskResult):
            return "result", item
        if isinstance(item, base.Response):
            return "response", messages.Response(converter.chat(item.chat_message))
        if type(item).__name__ == "UserInputRequestedEvent":
            return "input", item
        return "item", converter.item(item)  # type: ignore[arg-type]

    return read


def hint(value: object, role: str) -> str | None:
    """What to say when AutoGen's ``value`` is given where nbagent expected its ``role``."""
    if not _autogen(value):
        return None
    kind = type(value).__name__
    if role == "agent":
        return "AutoGen's own agents and teams run with nbagent.autogen.run(agent, task)"
    if role == "chat message" and kind in _LLM_NAMES:
        return (
            f"AutoGen's {kind} is a message for the model: an agent is sent chat messages, "
            "TextMessage(content=..., source='user')"
        )
    return None


# ---------------------------------------------------------------------- AutoGen's ChatAgent


def join(base: ModuleType) -> None:
    """AutoGen's teams take nbagent's agents (and their subclasses) as ``ChatAgent``, and a run's
    ``TaskResult`` is AutoGen's too (asked from now on: before, every run would ask in vain)."""
    base.ChatAgent.register(agent_module.AssistantAgent)
    messages.SHARED_RESULT.register(shared_result)


def join_agents(agents: ModuleType) -> None:
    """AutoGen's ``AgentTool`` loads its agent as a ``BaseChatAgent``, whose public API nbagent's has."""
    agents.BaseChatAgent.register(agent_module.AssistantAgent)


def join_clients(models: ModuleType) -> None:
    """AutoGen's loader checks a model client it built is its ``ChatCompletionClient`` (an
    ``AssistantAgent``'s, a ``SelectorGroupChat``'s, a ``SocietyOfMindAgent``'s): nbagent's clients
    are virtual ones, as they answer AutoGen's agent in AutoGen's types."""
    models.ChatCompletionClient.register(model_base.ChatCompletionClient)


def join_memories(module: ModuleType) -> None:
    """AutoGen's ``AssistantAgent`` loader checks each memory it builds is its ``Memory``: nbagent's are virtual."""
    module.Memory.register(memory.Memory)


def join_contexts(module: ModuleType) -> None:
    """AutoGen's loaders (its ``AssistantAgent``, ``SelectorGroupChat``, ``SocietyOfMindAgent``) check the model
    context they build is its ``ChatCompletionContext``: nbagent's are virtual ones."""
    module.ChatCompletionContext.register(context.ChatCompletionContext)


def join_tools(module: ModuleType) -> None:
    """AutoGen's ``AssistantAgent`` takes a tool that is its ``BaseTool`` (a function otherwise), and its loaders
    check the tools and workbenches they build: nbagent's tools and workbenches are virtual ones, as they
    speak AutoGen's protocol (``schema``, ``run_json``, ``return_value_as_string``; ``list_tools``, ``call_tool``)."""
    module.BaseTool.register(tools.BaseTool)
    module.Workbench.register(tools.Workbench)


def joined(made: agent_module.AssistantAgent) -> None:
    """At each agent made: registered already at AutoGen's imports, unless another finder loaded them
    (registering again changes nothing)."""
    base = _loaded("autogen_agentchat.base")
    if base is not None and not isinstance(made, base.ChatAgent):
        join(base)
    agents = _loaded("autogen_agentchat.agents")
    if agents is not None and not isinstance(made, agents.BaseChatAgent):
        join_agents(agents)


def _log_tool_calls(module: ModuleType) -> None:
    """Once AutoGen's event logging is imported, nbagent's tool calls are logged as AutoGen's tools log them."""
    tools.TOOL_RAN.register(tool_ran)


def _console(module: ModuleType) -> None:
    module.FOREIGN_STREAM.register(stream)


def register() -> None:
    """Answer the core's hooks for AutoGen (once: registering again changes nothing)."""
    messages.TWIN.register(twin)
    agent_in.CHAT_IN.register(chat_in)
    agent_in.CALLER.register(caller)
    agent_in.MESSAGE_TYPE_IN.register(message_type)
    tools.FOREIGN_TOOL.register(tool)
    when_imported("autogen_core.logging", _log_tool_calls)  # (no listener to call at each tool call before)
    context.FOREIGN_CONTEXT.register(model_context)
    context.FOREIGN_VIEW.register(context_view)
    context.MESSAGE_BACK.register(message_back)
    memory.RESULT_FOR.register(memory_result)
    bridge.FOREIGN_CLIENT.register(model_client)
    model_base.RESULT_OUT.register(result_out)
    model_base.CALL_EVENT.register(call_event)
    when_imported("nbagent.console", _console)  # not imported by import nbagent: on its first use
    hooks.HINT.register(hint)
    agent_module.AGENT_MADE.register(joined)
    components.DUMPED.register(dumped)
    components.FOREIGN_COMPONENT.register(foreign_component)
    when_imported("autogen_agentchat.base", join)
    when_imported("autogen_agentchat.agents", join_agents)
    when_imported("autogen_core.models", join_clients)
    when_imported("autogen_core.memory", join_memories)
    when_imported("autogen_core.model_context", join_contexts)
    when_imported("autogen_core.tools", join_tools)
    when_imported("autogen_core", _loadable)
