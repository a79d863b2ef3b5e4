"""The live view in JupyterLab: what a person sees after Run All (issue 5, item 9).

One notebook: a replay-model agent with two tools, a thought and streamed text, shown with
``await nbagent.show(...)``; then a second agent whose tool result and text carry XSS payloads.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .conftest import LabNotebook
from .xss import DANGEROUS_DOM_JS

pytestmark = pytest.mark.browser

SETUP = '''
import nbagent
from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient, RequestUsage

def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny, 21 °C in {city}"

def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

FINAL = (
    "Paris is **sunny** at 21 °C.\\n\\n- weather: sunny\\n- sum: 5\\n\\n"
    "Done after two tool calls, streamed word by word."
)
client = ReplayChatCompletionClient(
    [
        CreateResult(
            finish_reason="function_calls",
            content=[
                FunctionCall(id="call_w", name="get_weather", arguments='{"city": "Paris"}'),
                FunctionCall(id="call_a", name="add", arguments='{"a": 2, "b": 3}'),
            ],
            usage=RequestUsage(prompt_tokens=50, completion_tokens=10),
            thought="I need the weather and a sum.",
        ),
        CreateResult(finish_reason="stop", content=FINAL, usage=RequestUsage(prompt_tokens=120, completion_tokens=30)),
    ],
    chunk_delay=0.01,
)
agent = AssistantAgent("helper", client, tools=[get_weather, add], reflect_on_tool_use=True, model_client_stream=True)
'''

RUN = 'view = await nbagent.show(agent, "What is the weather in Paris, and 2 + 3?")'

XSS = '''
IMG = "<img src=x onerror=\\"__xss('live-img')\\">"
SCRIPT = "<script>__xss('live-script')</script>"

def fetch_page(url: str) -> str:
    """Fetch a web page (returns hostile HTML)."""
    return f"page {url}: {IMG} {SCRIPT}"

hostile = AssistantAgent(
    "hostile",
    ReplayChatCompletionClient(
        [
            CreateResult(
                finish_reason="function_calls",
                content=[FunctionCall(id="c1", name="fetch_page", arguments='{"url": "u1"}')],
            ),
            f"Here is the page: {IMG} and {SCRIPT} done.",
        ]
    ),
    tools=[fetch_page],
    reflect_on_tool_use=True,
    model_client_stream=True,
)
xss_view = await nbagent.show(hostile, "Fetch u1")
'''

STOPPABLE = '''
import asyncio
started = asyncio.Event()

async def wait_forever(x: int) -> str:
    """Never returns (until cancelled)."""
    started.set()
    await asyncio.Event().wait()
    return "unreachable"

slow = AssistantAgent(
    "slow",
    ReplayChatCompletionClient(
        [
            CreateResult(
                finish_reason="function_calls",
                content=[FunctionCall(id="w1", name="wait_forever", arguments='{"x": 1}')],
            ),
            "after the stop",
        ]
    ),
    tools=[wait_forever],
)
slow_view = nbagent.start(slow, "Wait for me")
await started.wait()
'''

CHECK = "print(view.status, xss_view.status, slow_view.status, repr(view.response.chat_message.content == FINAL))"

# Read from the first view: each footer metric, the tool cards, the answer.
_VIEW_JS = """(view) => {
  const q = (sel) => [...view.querySelectorAll(sel)];
  return {
    classes: [...view.classList].filter(c => c.startsWith('nba-state-')),
    footer: Object.fromEntries(q('.nba-footer [data-metric]').map(s => [s.dataset.metric, s.dataset.value])),
    cards: q('.nba-tool-card[data-tool-name]').map(c => ({
      name: c.dataset.toolName, id: c.dataset.callId, state: c.dataset.state,
      args: c.querySelector('.nba-tool-args').innerText,
      result: c.querySelector('.nba-tool-result pre').innerText,
      label: c.querySelector('.nba-tool-result .nba-label').innerText,
    })),
    final: q('.nba-final .nba-markdown').map(e => e.innerText.replace(/\\s+/g, ' ').trim()),
    strong: q('.nba-final strong').map(e => e.innerText),
    items: q('.nba-final li').map(e => e.innerText),
    streaming: q('.nba-streaming').length,
    thought: q('details.nba-thought').map(d => ({open: d.open, text: d.textContent})),
    user: q('.nba-user').map(e => e.innerText),
    userStep: q('.nba-user .nba-step').map(e => e.dataset.step),
    toolStep: q('.nba-tool-group .nba-step').map(e => e.dataset.step),
    stops: view.querySelectorAll('.nba-stop').length,
    static: !!view.closest('.jp-RenderedHTMLCommon'),
  };
}"""


def test_live_view_shows_a_run_and_runs_no_payload(run_notebook_in_lab: Callable[..., LabNotebook]) -> None:
    nb: LabNotebook = run_notebook_in_lab([SETUP, RUN, XSS, STOPPABLE, CHECK], name="live_view")
    page = nb.page
    assert nb.error_outputs() == []
    assert nb.output_texts()[4].strip() == "ok ok running True"
    views = page.locator(".nba-view")
    assert views.count() == 3
    seen = views.nth(0).evaluate(_VIEW_JS)

    assert seen["classes"] == ["nba-state-ok"]
    assert seen["streaming"] == 0
    assert seen["final"] == [
        "Paris is sunny at 21 °C. weather: sunny sum: 5 Done after two tool calls, streamed word by word."
    ]
    assert seen["strong"] == ["sunny"]
    assert seen["items"] == ["weather: sunny", "sum: 5"]
    assert [(c["name"], c["id"], c["state"], c["label"], c["result"]) for c in seen["cards"]] == [
        ("get_weather", "call_w", "ok", "result", "sunny, 21 °C in Paris"),
        ("add", "call_a", "ok", "result", "5"),
    ]
    assert '"city": "Paris"' in seen["cards"][0]["args"]
    assert '"a": 2' in seen["cards"][1]["args"] and '"b": 3' in seen["cards"][1]["args"]
    footer = seen["footer"]
    elapsed = footer.pop("elapsed")
    assert float(elapsed) > 0
    assert footer == {
        "tokens": "210",
        "prompt_tokens": "170",
        "completion_tokens": "40",
        "llm_calls": "2",
        "tool_calls": "2",
        "status": "ok",
    }
    assert seen["thought"] == [{"open": False, "text": seen["thought"][0]["text"]}]
    assert "I need the weather and a sum." in seen["thought"][0]["text"]
    assert [text.strip().endswith("What is the weather in Paris, and 2 + 3?") for text in seen["user"]] == [True]
    assert seen["userStep"] == ["1"]
    assert seen["toolStep"] == ["5"]
    # The run has ended: its output is the static copy (no widget, no Stop button).
    assert seen["static"] is True and seen["stops"] == 0

    hostile = views.nth(1)
    text = hostile.inner_text()
    # The payloads are shown as text (escaped), in the tool card and in the answer...
    assert "<img src=x onerror=\"__xss('live-img')\">" in hostile.locator(".nba-tool-result").inner_text()
    assert "<script>__xss('live-script')</script>" in text
    # ...and none became an element or ran.
    assert page.evaluate(DANGEROUS_DOM_JS, ".nba-view") == []
    assert nb.xss_hits() == {"window": [], "dom": ""}
    assert nb.console_errors == []
    assert nb.screenshot is not None and nb.screenshot.stat().st_size > 10_000
    assert nb.shot("view", ".nba-view").stat().st_size > 10_000

    # Stop, clicked in the browser after the cell has finished, cancels the background run...
    stoppable = views.nth(2)
    assert stoppable.locator(".nba-tool-card[data-tool-name=wait_forever]").get_attribute("data-state") == "running"
    assert stoppable.evaluate("(view) => view.classList.contains('widget-vbox')")  # still the live widget
    stoppable.locator(".nba-stop button, button.nba-stop").first.click()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-RenderedHTMLCommon .nba-view.nba-state-cancelled')]"
        ".some(v => v.querySelector('.nba-title').textContent.trim() === 'slow')"
    )
    nb.settle()
    assert stoppable.locator(".nba-footer [data-metric=status]").get_attribute("data-value") == "cancelled"
    assert stoppable.locator(".nba-tool-card[data-tool-name=wait_forever]").get_attribute("data-state") == "error"
    # ...and leaves a context the next run accepts.
    assert nb.execute(
        "print([type(m).__name__ for m in slow.model_context.messages], slow.is_running)\n"
        "again = await slow.run(task='and now?')\n"
        "print(again.messages[-1].content)"
    ) == ("['UserMessage', 'AssistantMessage', 'FunctionExecutionResultMessage'] False\nafter the stop\n")
    nb.shot("stopped", ".nba-view >> nth=2")
    assert nb.console_errors == []
