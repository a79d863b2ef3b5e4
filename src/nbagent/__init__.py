"""nbagent: explore, teach and analyse an LLM agent's tool-use loop in a notebook."""

from .agent import AgentBusyError, AgentRun, AssistantAgent, StructuredOutputError
from .cancellation import CancellationToken
from .context import (
    BufferedChatCompletionContext,
    ChatCompletionContext,
    HeadAndTailChatCompletionContext,
    TokenLimitedChatCompletionContext,
    UnboundedChatCompletionContext,
)
from .memory import ListMemory, Memory, MemoryQueryResult, UpdateContextResult
from .messages import (
    AssistantMessage,
    BaseAgentEvent,
    BaseChatMessage,
    CreateResult,
    FunctionCall,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    HandoffMessage,
    Image,
    MemoryContent,
    MemoryQueryEvent,
    ModelClientStreamingChunkEvent,
    RequestUsage,
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
    dump_message,
    load_message,
)
from .models import (
    ChatCompletionClient,
    ModelError,
    ModelInfo,
    ModelRequest,
    ReplayChatCompletionClient,
    ReplayExhaustedError,
)
from .run import MOVES, LLMCall, Move, MoveInfo, RunFinished, RunStarted, ToolExecution
from .tools import BaseTool, FunctionTool, Handoff, StaticWorkbench, ToolArgumentsError, ToolResult, Workbench
from .trace import Trace

__version__ = "0.1.0"

__all__ = [name for name in dir() if not name.startswith("_")]
