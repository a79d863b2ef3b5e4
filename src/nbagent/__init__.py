"""nbagent: explore, teach and analyse an LLM agent's tool-use loop in a notebook."""

from typing import TYPE_CHECKING

from . import autogen as _autogen
from . import components as _components
from . import models as _models
from . import sync as _sync
from ._imports import lazy_names, when_imported
from .agent import AgentBusyError, AgentRun, AssistantAgent, FailedRun, RepeatedTaskWarning, StructuredOutputError
from .cancellation import CancellationToken, CancelledWithResult
from .components import (
    Alias,
    CommandNotAllowedError,
    Component,
    ComponentBase,
    ComponentLoader,
    ComponentModel,
    ImportFromModule,
    SourceCodeNotAllowedError,
    StructuredMessageFactory,
    is_component_class,
    load_component,
)
from .context import (
    BufferedChatCompletionContext,
    ChatCompletionContext,
    HeadAndTailChatCompletionContext,
    TokenLimitedChatCompletionContext,
    UnboundedChatCompletionContext,
)
from .entry import run  # the sync entry point: nbagent.run(agent, task)
from .interventions import Interventions
from .language import get_language, set_language
from .memory import ListMemory, Memory, MemoryQueryResult, UpdateContextResult
from .messages import (
    AgentEvent,
    AssistantMessage,
    BaseAgentEvent,
    BaseChatMessage,
    ChatMessage,
    CodeBlock,
    CodeExecutionEvent,
    CodeGenerationEvent,
    CodeResult,
    CreateResult,
    FunctionCall,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    HandoffMessage,
    Image,
    MemoryContent,
    MemoryMimeType,
    MemoryQueryEvent,
    MessageFactory,
    ModelClientStreamingChunkEvent,
    MultiModalMessage,
    RequestUsage,
    Response,
    SelectorEvent,
    SelectSpeakerEvent,
    StopMessage,
    StructuredMessage,
    SystemMessage,
    TaskResult,
    TextMessage,
    ThoughtEvent,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
    ToolCallSummaryMessage,
    UserInputRequestedEvent,
    UserMessage,
    dump_message,
    load_message,
)
from .models import (
    ChatCompletionClient,
    ModelAuthenticationError,
    ModelBadRequestError,
    ModelConnectionError,
    ModelError,
    ModelFamily,
    ModelInfo,
    ModelNotFoundError,
    ModelRateLimitError,
    ModelRequest,
    ModelResponseError,
    ModelServerError,
    ModelTimeoutError,
    OpenAIChatCompletionClient,
    ReplayChatCompletionClient,
    ReplayExhaustedError,
    default_model,
    validate_model_info,
)
from .records import MOVES, Intervention, LLMCall, Move, MoveInfo, RunFinished, RunStarted, ToolExecution
from .tools import (
    BaseStreamTool,
    BaseTool,
    BaseToolWithState,
    FunctionTool,
    Handoff,
    ImageResultContent,
    ParametersSchema,
    StaticStreamWorkbench,
    StaticWorkbench,
    StreamTool,
    TextResultContent,
    Tool,
    ToolArgumentsError,
    ToolOverride,
    ToolResult,
    ToolSchema,
    Workbench,
)
from .trace import COLUMNS as TRACE_COLUMNS
from .trace import AgentRecorder, Trace, TraceFrames
from .trace import base as _trace_base

if TYPE_CHECKING:  # what loads on first use (see _LAZY): the notebook side (ipywidgets), the batches,
    # the stepper, MCP, the console, loaded traces
    from asyncio import AbstractEventLoop
    from contextlib import AbstractContextManager
    from types import ModuleType

    from .autogen.stepper import AutoGenStepper as _AutoGenStepper
    from .batch import Batch, BatchProgress, ProgressDisplay, run_many
    from .console import Console
    from .experiment import Experiment, contains, exact_match, llm_judge, load_experiment, numeric, regex
    from .experiment.compare import VariantComparison
    from .mcp import (
        McpToolAdapter,
        McpWorkbench,
        SseMcpToolAdapter,
        SseServerParams,
        StdioMcpToolAdapter,
        StdioServerParams,
        StreamableHttpMcpToolAdapter,
        StreamableHttpServerParams,
        mcp_server_tools,
    )
    from .models import (
        AzureOpenAIChatCompletionClient,
        CassetteChatCompletionClient,
        CassetteError,
        CassetteExhaustedError,
        CassetteMismatchError,
        RecordingChatCompletionClient,
    )
    from .notebook.compare_view import CompareView, compare
    from .notebook.experiment_view import ComparisonView, ExperimentView
    from .notebook.explorer import RunExplorer, explore
    from .notebook.stepper_widget import NotebookStepper, StepperWidget, step
    from .notebook.view import AgentRunView, last_view, show, start
    from .stepper import ForkSource, MoveUndone, Stepper, StepperFinished, StepResult, WalkInterrupted
    from .trace import LazyTrace, LoadedTrace, concat, load_jsonl, load_parquet

__version__ = "0.1.0"


def _from(module: str, *names: str) -> dict[str, str]:
    return dict.fromkeys(names, module)


# Names imported on first use: what a first run does not need (``import nbagent`` loads the agent,
# its messages, tools, contexts, model clients and the live trace, and neither of these).
_LAZY = {
    **_from(".notebook.compare_view", "compare", "CompareView"),
    **_from(".notebook.explorer", "explore", "RunExplorer"),
    **_from(".notebook.view", "show", "start", "last_view", "AgentRunView"),
    **_from(".notebook.stepper_widget", "step", "NotebookStepper", "StepperWidget"),
    **_from(".batch", "Batch", "BatchProgress", "run_many"),
    **_from(".console", "Console"),
    **_from(".experiment", "Experiment", "contains", "exact_match", "llm_judge", "load_experiment", "numeric", "regex"),
    **_from(".stepper", "ForkSource", "MoveUndone", "Stepper", "StepperFinished", "StepResult", "WalkInterrupted"),
    **_from(".models", *_models.LOADED_ON_FIRST_USE),
    **_from(".trace", "LazyTrace", "LoadedTrace", "concat", "load_jsonl", "load_parquet"),
    **_from(
        ".mcp",
        "McpToolAdapter",
        "McpWorkbench",
        "SseMcpToolAdapter",
        "SseServerParams",
        "StdioMcpToolAdapter",
        "StdioServerParams",
        "StreamableHttpMcpToolAdapter",
        "StreamableHttpServerParams",
        "mcp_server_tools",
    ),
}

if not TYPE_CHECKING:  # hidden from type checkers: a misspelt name is "no attribute", not ``object``
    __getattr__, __dir__ = lazy_names(__name__, _LAZY)


def _component_modules() -> None:
    """The modules of nbagent's components that ``import nbagent`` does not load, for a config naming one."""
    from . import mcp  # noqa: F401
    from .models import azure, cassette  # noqa: F401


_components.register_component_modules(_component_modules)


def _batch_widget(batch: "Batch") -> "ProgressDisplay":
    """A batch's progress in a notebook: the widget of the notebook side (ipywidgets loads on first use)."""
    from .notebook.batch_view import batch_view

    return batch_view(batch)


def _batch_in_cell(batch: "Batch", shown_in: int | None) -> None:
    from .notebook.batch_view import show_in_cell

    show_in_cell(batch, shown_in)


def _explorer(trace: TraceFrames, *, page_size: int, live: bool | None) -> "RunExplorer":
    """``trace.explore()``: the notebook side's run explorer (ipywidgets loads on first use)."""
    from .notebook.explorer import explore

    return explore(trace, page_size=page_size, live=live)


_trace_base.register_explorer(_explorer)


def _comparison_view(comparison: "VariantComparison", *, page_size: int) -> "ComparisonView":
    """``comparison.view()``: the notebook side's widget (ipywidgets loads on first use)."""
    from .notebook.experiment_view import comparison_view

    return comparison_view(comparison, page_size=page_size)


def _experiment_view(experiment: "Experiment", a: str | None = None, b: str | None = None) -> "ExperimentView":
    """``exp.view()``: the notebook side's widget (ipywidgets loads on first use)."""
    from .notebook.experiment_view import experiment_view

    return experiment_view(experiment, a, b)


def _experiment_registered(compare: "ModuleType") -> None:
    """Once the experiments' comparison loads (with ``nbagent.Experiment``): its views are the notebook side's."""
    compare.register_view("comparison", _comparison_view)
    compare.register_view("experiment", _experiment_view)


when_imported(f"{__name__}.experiment.compare", _experiment_registered)


# The notebook layer's kernel-specific code, hooked into the loop layer (which imports no IPython):
def _kernel_comms(loop: "AbstractEventLoop") -> "AbstractContextManager[None]":
    """While a sync run drives the kernel's loop: its comm messages (a Stop click) are dispatched."""
    from .notebook.kernel import comms_meanwhile

    return comms_meanwhile(loop)


def _in_kernel() -> bool:
    from .notebook.kernel import in_kernel

    return in_kernel()


def _autogen_stepper() -> "type[_AutoGenStepper]":
    from .notebook.autogen_stepper import NotebookAutoGenStepper

    return NotebookAutoGenStepper


def _notebook_hints() -> None:
    """In a kernel: ``asyncio.run(...)`` in a cell says in one line what to write instead, and a kernel
    interrupt of an awaiting cell acts at once."""
    if _in_kernel():
        from IPython import get_ipython

        from .notebook.hints import install
        from .notebook.kernel import wake_on_signals

        install(get_ipython())
        wake_on_signals()


def _batch_registered(_: "ModuleType") -> None:
    """The notebook side of a batch (its widget, a kernel's cell), hooked in when ``nbagent.batch`` loads."""
    from . import batch

    batch.register_progress_display("widget", _batch_widget)
    batch.register_kernel_check(_in_kernel)
    batch.register_cell_display(_batch_in_cell)


_sync.register_driving_hook(_kernel_comms)
when_imported(f"{__name__}.batch", _batch_registered)
_autogen.register_notebook_stepper(_autogen_stepper)
_notebook_hints()


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext nbagent``: registers the ``%%agent`` and ``%agent_reset`` magics."""
    from .notebook.magics import load_ipython_extension as load

    load(ipython)


__all__ = [
    "AgentBusyError",
    "AgentEvent",
    "AgentRecorder",
    "AgentRun",
    "AgentRunView",
    "AssistantAgent",
    "AssistantMessage",
    "AzureOpenAIChatCompletionClient",
    "BaseAgentEvent",
    "BaseChatMessage",
    "Alias",
    "BaseStreamTool",
    "BaseTool",
    "BaseToolWithState",
    "Batch",
    "BatchProgress",
    "Experiment",
    "BufferedChatCompletionContext",
    "CancellationToken",
    "CancelledWithResult",
    "CassetteChatCompletionClient",
    "CassetteError",
    "CassetteExhaustedError",
    "CassetteMismatchError",
    "ChatCompletionClient",
    "ChatCompletionContext",
    "ChatMessage",
    "CodeBlock",
    "CodeExecutionEvent",
    "CodeGenerationEvent",
    "CodeResult",
    "CommandNotAllowedError",
    "CompareView",
    "Component",
    "ComponentBase",
    "ComponentLoader",
    "ComponentModel",
    "Console",
    "CreateResult",
    "FailedRun",
    "ForkSource",
    "FunctionCall",
    "FunctionExecutionResult",
    "FunctionExecutionResultMessage",
    "FunctionTool",
    "Handoff",
    "HandoffMessage",
    "HeadAndTailChatCompletionContext",
    "Image",
    "ImportFromModule",
    "ImageResultContent",
    "Intervention",
    "Interventions",
    "LLMCall",
    "ListMemory",
    "LazyTrace",
    "LoadedTrace",
    "MOVES",
    "McpToolAdapter",
    "McpWorkbench",
    "Memory",
    "MemoryContent",
    "MemoryMimeType",
    "MemoryQueryEvent",
    "MemoryQueryResult",
    "MessageFactory",
    "ModelAuthenticationError",
    "ModelBadRequestError",
    "ModelClientStreamingChunkEvent",
    "ModelConnectionError",
    "ModelError",
    "ModelFamily",
    "ModelInfo",
    "ModelNotFoundError",
    "ModelRateLimitError",
    "ModelRequest",
    "ModelResponseError",
    "ModelServerError",
    "ModelTimeoutError",
    "Move",
    "MoveInfo",
    "MultiModalMessage",
    "NotebookStepper",
    "OpenAIChatCompletionClient",
    "ParametersSchema",
    "RecordingChatCompletionClient",
    "RepeatedTaskWarning",
    "ReplayChatCompletionClient",
    "ReplayExhaustedError",
    "RequestUsage",
    "Response",
    "RunFinished",
    "RunStarted",
    "SelectSpeakerEvent",
    "SelectorEvent",
    "SourceCodeNotAllowedError",
    "SseMcpToolAdapter",
    "SseServerParams",
    "StaticStreamWorkbench",
    "StaticWorkbench",
    "StopMessage",
    "StreamTool",
    "StdioMcpToolAdapter",
    "StdioServerParams",
    "StepResult",
    "Stepper",
    "StepperFinished",
    "WalkInterrupted",
    "MoveUndone",
    "StepperWidget",
    "StreamableHttpMcpToolAdapter",
    "StreamableHttpServerParams",
    "StructuredMessage",
    "StructuredMessageFactory",
    "StructuredOutputError",
    "SystemMessage",
    "TRACE_COLUMNS",
    "TaskResult",
    "TextMessage",
    "TextResultContent",
    "ThoughtEvent",
    "TokenLimitedChatCompletionContext",
    "Tool",
    "ToolArgumentsError",
    "ToolCallExecutionEvent",
    "ToolCallRequestEvent",
    "ToolCallSummaryMessage",
    "ToolExecution",
    "ToolOverride",
    "ToolResult",
    "ToolSchema",
    "Trace",
    "TraceFrames",
    "UnboundedChatCompletionContext",
    "UpdateContextResult",
    "UserInputRequestedEvent",
    "UserMessage",
    "Workbench",
    "__version__",
    "compare",
    "explore",
    "contains",
    "exact_match",
    "llm_judge",
    "load_experiment",
    "numeric",
    "regex",
    "concat",
    "default_model",
    "dump_message",
    "get_language",
    "last_view",
    "is_component_class",
    "load_component",
    "load_ipython_extension",
    "load_jsonl",
    "load_message",
    "load_parquet",
    "mcp_server_tools",
    "run",
    "run_many",
    "set_language",
    "show",
    "start",
    "step",
    "validate_model_info",
]
