"""The one dispatch: every run item type has its HTML renderer and a terminal line, all escaped."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from html.parser import HTMLParser
from typing import Any

import pytest
from pydantic import BaseModel

from nbagent import messages, records
from nbagent.messages import (
    BaseAgentEvent,
    BaseChatMessage,
    CodeBlock,
    CodeExecutionEvent,
    CodeGenerationEvent,
    CodeResult,
    CreateResult,
    FunctionCall,
    FunctionExecutionResult,
    HandoffMessage,
    Image,
    MemoryContent,
    MemoryQueryEvent,
    ModelClientStreamingChunkEvent,
    MultiModalMessage,
    RequestUsage,
    Response,
    SelectorEvent,
    SelectSpeakerEvent,
    StopMessage,
    StructuredMessage,
    TextMessage,
    ThoughtEvent,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
    ToolCallSummaryMessage,
    UserInputRequestedEvent,
    UserMessage,
)
from nbagent.models.base import ModelRequest
from nbagent.records import Intervention, LLMCall, Move, RunFinished, RunStarted, ToolExecution
from nbagent.render import Options, to_html, to_text

X = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAAABJRU5ErkJggg=="
ESCAPED = "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&lt;script&gt;alert(2)&lt;/script&gt;"


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self.handlers: list[str] = []
        self.images: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.names.add(tag)
        self.handlers += [name for name, _ in attrs if name.startswith("on")]
        if tag == "img":
            self.images += [value for name, value in attrs if name == "src"]


class City(BaseModel):
    name: str


def _call() -> FunctionCall:
    return FunctionCall(id=X, name=X, arguments=X)


def _result(error: bool = False) -> FunctionExecutionResult:
    return FunctionExecutionResult(content=X, name=X, call_id=X, is_error=error)


def _llm_call() -> LLMCall:
    call = LLMCall("r1", 0, "initial", X, ModelRequest([UserMessage(content=X, source=X)], [], "auto", None), "m", True)
    call.finish(CreateResult(finish_reason="stop", content=X, usage=RequestUsage(prompt_tokens=3, completion_tokens=4)))
    return call


def _tool_execution() -> ToolExecution:
    execution = ToolExecution("r1", 0, _call(), 1)
    execution.finish(_result())
    return execution


SAMPLES: dict[type, Callable[[], Any]] = {
    TextMessage: lambda: TextMessage(content=X, source="bot"),
    StructuredMessage: lambda: StructuredMessage[City](content=City(name=X), source="bot"),
    ToolCallSummaryMessage: lambda: ToolCallSummaryMessage(
        content=X, source=X, tool_calls=[_call()], results=[_result()]
    ),
    HandoffMessage: lambda: HandoffMessage(content=X, target=X, source=X),
    ToolCallRequestEvent: lambda: ToolCallRequestEvent(content=[_call(), _call()], source=X),
    ToolCallExecutionEvent: lambda: ToolCallExecutionEvent(content=[_result(), _result(True)], source=X),
    ThoughtEvent: lambda: ThoughtEvent(content=X, source=X),
    MemoryQueryEvent: lambda: MemoryQueryEvent(content=[MemoryContent(content=X, mime_type=X)], source=X),
    ModelClientStreamingChunkEvent: lambda: ModelClientStreamingChunkEvent(content=X, source=X),
    Move: lambda: Move("r1", "tool_execution", 2),
    LLMCall: _llm_call,
    ToolExecution: _tool_execution,
    RunStarted: lambda: RunStarted("r1", X, [TextMessage(content=X, source="user")]),
    RunFinished: lambda: RunFinished("r1", X, "error", X),
    Intervention: lambda: Intervention("r1", 5, "tool_result", X),
    Response: lambda: Response(chat_message=TextMessage(content=X, source="bot")),
    str: lambda: X,
    MultiModalMessage: lambda: MultiModalMessage(content=[X, Image(data=PIXEL), Image(data=X, mime_type=X)], source=X),
    StopMessage: lambda: StopMessage(content=X, source=X),
    UserInputRequestedEvent: lambda: UserInputRequestedEvent(request_id=X, source=X),
    SelectSpeakerEvent: lambda: SelectSpeakerEvent(content=[X, X], source=X),
    SelectorEvent: lambda: SelectorEvent(content=X, source=X),
    CodeGenerationEvent: lambda: CodeGenerationEvent(
        retry_attempt=0, content=X, code_blocks=[CodeBlock(code=X, language=X)], source=X
    ),
    CodeExecutionEvent: lambda: CodeExecutionEvent(retry_attempt=1, result=CodeResult(exit_code=1, output=X), source=X),
}


def run_item_types() -> list[type]:
    """Every event and chat message type of nbagent.messages, every record, Response and str."""
    declared = [
        cls
        for _, cls in inspect.getmembers(messages, inspect.isclass)
        if cls.__module__ == messages.__name__
        and issubclass(cls, (BaseAgentEvent, BaseChatMessage))
        and cls not in (BaseAgentEvent, BaseChatMessage)
    ]
    return [*declared, *records.RECORD_TYPES, Response, str]


def test_every_run_item_type_has_its_own_renderer() -> None:
    types = run_item_types()
    assert len(types) == 24
    assert [cls.__name__ for cls in types if cls not in to_html.registry] == []
    assert sorted(cls.__name__ for cls in types) == sorted(cls.__name__ for cls in SAMPLES)


@pytest.mark.parametrize("kind", list(SAMPLES), ids=lambda kind: kind.__name__)
def test_each_item_renders_escaped(kind: type) -> None:
    item = SAMPLES[kind]()
    html = to_html(item, Options("call_llm", 2))
    tags = Tags()
    tags.feed(html)
    assert "script" not in tags.names and tags.handlers == []
    # Only a message's own images are shown: a PNG as a data: URI; an image of another type gets a placeholder.
    assert tags.images == ([f"data:image/png;base64,{PIXEL}"] if kind is MultiModalMessage else [])
    if kind is not Move:
        assert ESCAPED in html or "&lt;img src=x onerror=" in html, html
    line = to_text(item)
    if kind is str:
        assert line is None  # streamed text is not a line of its own
    else:
        assert isinstance(line, str) and "\n" not in line


def test_unknown_events_fall_back_to_their_base_class() -> None:
    class Custom(BaseAgentEvent):
        content: str
        type: str = "Custom"

    event = Custom(content=X, source="x")
    assert 'class="nba-event nba-other"' in to_html(event) and ESCAPED in to_html(event)
    assert to_text(event) == f"   Custom  {X}"
    assert "nba-other" in to_html(object())


def test_text_lines() -> None:
    assert to_text(Move("r", "call_llm")) == "-- STEP 4: Call the LLM  [_call_llm]"
    assert to_text(ToolCallRequestEvent(content=[FunctionCall(id="1", name="f", arguments="{}")], source="a")) == (
        "   ToolCallRequestEvent  f({})"
    )
    results = [FunctionExecutionResult(content="12", name="f", call_id="1")]
    assert to_text(ToolCallExecutionEvent(content=results, source="a")) == "   ToolCallExecutionEvent  f -> 12"
    hits = [MemoryContent(content="tea"), MemoryContent(content={"k": 1})]
    assert to_text(MemoryQueryEvent(content=hits, source="a")) == '   MemoryQueryEvent  tea; {"k": 1}'
    assert to_text(RunFinished("r", "a", "ok")) == "run finished  status=ok"
    assert to_text("piece") is None


def test_options_give_the_badge_and_the_number() -> None:
    html = to_html(_llm_call(), Options("reflect", 3))
    assert html.startswith('<div class="nba-event nba-llm-call" data-state="ok" data-purpose="initial">')
    assert 'data-move="reflect"' in html and "LLM call 3 · " in html and "3 + 4 tokens" in html
    head = to_html(Move("r", "tool_execution", 1), Options(number=5))
    assert head.startswith('<div class="nba-stepper-head" data-step="5" data-move="tool_execution" data-index="5">')
    assert "<code>_execute_tool_calls</code>" in head and " move 5 · tool-loop iteration=1 (2nd)" in head
    task = to_html(
        RunStarted("r", "a", [TextMessage(content="a", source="user"), TextMessage(content="b", source="user")])
    )
    assert task.count('class="nba-event nba-user"') == 2 and task.count('data-move="add_messages"') == 2


def test_only_an_answer_that_can_fill_its_box_has_a_resize_grip() -> None:
    """A one-line answer's card has no resize grip (the box is resizable only when the answer can reach
    its 32em cap: long, or many lines)."""
    from nbagent.messages import TextMessage
    from nbagent.render import STYLESHEET, to_html

    short_card = str(to_html(TextMessage(content="It is 18 °C.", source="assistant")))
    tall_card = str(to_html(TextMessage(content="\n".join(f"line {i}" for i in range(30)), source="assistant")))
    long_card = str(to_html(TextMessage(content="word " * 400, source="assistant")))
    assert 'class="nba-markdown"' in short_card and "nba-resizable" not in short_card
    assert "nba-markdown nba-resizable" in tall_card and "nba-markdown nba-resizable" in long_card
    rules = [rule for rule in str(STYLESHEET).replace("\n", "").split("}") if "resize:vertical" in rule]
    assert not any(rule.strip().startswith(".nba-markdown{") for rule in rules)
    assert any(rule.strip().startswith(".nba-markdown.nba-resizable{") for rule in rules)


def test_a_stopped_call_reads_cancelled_and_a_paused_one_paused() -> None:
    call = _llm_call()
    call.duration_s, call.result = None, None
    call.finish(None, "CancelledError: the run was cancelled")
    html = to_html(call)
    assert 'data-state="cancelled"' in html and "cancelled after" in html and "failed" not in html
    waiting = LLMCall("r1", 0, "initial", "m", ModelRequest([], [], "auto", None), "m1", False)
    paused = to_html(waiting, Options(paused=True))
    assert 'data-state="paused"' in paused and "paused before it is sent" in paused and "waiting" not in paused
