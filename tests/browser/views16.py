"""Notebook cells shared by the browser tests of issue 16: agents whose runs show every state of
every view (finished, streaming, waiting in a tool, stopped with discarded text, interrupted,
failed; a stepper mid-walk; a trace's summary and timeline)."""

from __future__ import annotations

SETUP = '''
import asyncio, time
import ipywidgets as widgets
import nbagent
from nbagent import (
    AssistantAgent, CancellationToken, CreateResult, FunctionCall, ReplayChatCompletionClient, RequestUsage,
)

def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

started = {}

async def wait_forever(x: int) -> str:
    """Never returns (until cancelled)."""
    started.setdefault(x, asyncio.Event()).set()
    print("STARTED", x, flush=True)
    await asyncio.Event().wait()
    return "unreachable"

ANSWER = (
    "The four sums:\\n\\n| a | b | a + b |\\n|---|---|---|\\n| 0 | 1 | 1 |\\n| 1 | 2 | 3 |\\n| 2 | 3 | 5 |\\n"
    "| 3 | 4 | 7 |\\n\\nEach is `add(a, b)`:\\n\\n```python\\nprint(add(3, 4))\\n```\\n\\n"
    "- the **smallest** is 1\\n- the largest is 7\\n\\nSee [the docs](https://example.org)."
)
WORDS = " ".join(f"word{i}" for i in range(8000))

def adder(name, cards=4):
    """Four parallel tool calls (a thought first), then a streamed Markdown answer."""
    calls = [FunctionCall(id=f"c{i}", name="add", arguments=f'{{"a": {i}, "b": {i + 1}}}') for i in range(cards)]
    script = [
        CreateResult(finish_reason="function_calls", content=calls, thought="I add each pair.",
                     usage=RequestUsage(prompt_tokens=40, completion_tokens=12)),
        CreateResult(finish_reason="stop", content=ANSWER, usage=RequestUsage(prompt_tokens=90, completion_tokens=60)),
    ]
    return AssistantAgent(name, ReplayChatCompletionClient(script, chunk_delay=0.002), tools=[add],
                          reflect_on_tool_use=True, model_client_stream=True)

def talker(name, delay=0.01):
    """A long streamed answer, one word every ``delay`` seconds."""
    return AssistantAgent(name, ReplayChatCompletionClient([WORDS], chunk_delay=delay), model_client_stream=True)

def waiter(name, key):
    """A tool call that waits until the run is stopped."""
    call = FunctionCall(id=f"w{key}", name="wait_forever", arguments=f'{{"x": {key}}}')
    script = [CreateResult(finish_reason="function_calls", content=[call]), "after the stop"]
    return AssistantAgent(name, ReplayChatCompletionClient(script), tools=[wait_forever], reflect_on_tool_use=True)
'''

VIEWS = [
    SETUP,
    # Finished: the output is the static copy.
    "ok_agent = adder('adder')\nok_view = await nbagent.show(ok_agent, 'Sum the four pairs.')",
    # Streaming (in the background, for the rest of the test): the live widget.
    "streaming = nbagent.start(talker('talker'), 'Talk for a long time.')\nawait asyncio.sleep(1.5)",
    # Waiting in a tool: Stop enabled, a running tool card.
    "waiting = nbagent.start(waiter('waiter', 1), 'Wait.')\nawait started.setdefault(1, asyncio.Event()).wait()",
    # Stopped while streaming: its text never entered the context.
    "cut_agent = talker('cutter', 0.01)\ncut = nbagent.start(cut_agent, 'Talk.')\nawait asyncio.sleep(0.6)\n"
    "cut.stop()\nawait cut.wait()",
    # Cancelled from outside (task.cancel()): interrupted.
    "gone = nbagent.start(waiter('canceller', 2), 'Wait.')\nawait started.setdefault(2, asyncio.Event()).wait()\n"
    "gone.task.cancel()\ntry:\n    await gone.wait()\nexcept asyncio.CancelledError:\n    pass",
    # A failed model call.
    "try:\n    await nbagent.show(AssistantAgent('failing', ReplayChatCompletionClient([])), 'Hello?')\n"
    "except Exception as error:\n    print(type(error).__name__)",
    # A stepper mid-walk (at the tool request: its four cards; context rows added), and its static copy.
    "stepped_agent = adder('stepped')\nstepper = nbagent.step(stepped_agent, 'Sum the pairs.')\nstepper",
    "for _ in range(4):\n    await stepper.next()",
    "from IPython.display import HTML\nfrom nbagent.notebook.stepper_widget import stepper_html\n"
    "HTML(stepper_html(stepper))",
    # The trace's summary (with the last run's timeline) and a timeline.
    "ok_agent.trace",
    "ok_agent.trace.timeline()",
]

VIEW_GROUPS = [
    ["live view, finished (static copy: ok, cancelled, interrupted, error)", ".jp-RenderedHTMLCommon .nba-view"],
    ["live view, running (widget: streaming, in a tool)", ".nba-view.widget-vbox"],
    ["stepper (widget)", ".nba-stepper-live"],
    ["stepper diagram", ".nba-stepper-live .nba-pipeline"],
    ["context table", ".nba-stepper-live .nba-stepper-context"],
    ["stepper static copy", ".jp-RenderedHTMLCommon .nba-static-copy"],
    ["trace summary", ".nba-trace .nba-trace-summary"],
    ["trace timeline", ".nbagent-timeline"],
]
