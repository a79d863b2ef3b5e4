"""The notebooks that use ``nbagent.default_model()`` run live against an OpenAI-compatible server.

``NBAGENT_BASE_URL`` points the kernel at the scripted Chat Completions server of the models tests
(real HTTP and SSE through the openai SDK, every request validated as the real API would), so the
live branch of each notebook is exercised without a network or a key.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.models.chat_server import ChatServer, Reply

from ._kernel import ROOT, error_outputs, execute, leftover_tasks, output_text, this_python, write_kernelspec

pytestmark = pytest.mark.kernel


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


def live_kernels(folder: Path, server: ChatServer) -> Path:
    return write_kernelspec(folder, this_python(), {"NBAGENT_BASE_URL": server.base_url, "NBAGENT_MODEL": "scripted"})


def test_quickstart_runs_live(server: ChatServer, tmp_path: Path) -> None:
    server.script(
        Reply.call(("get_weather", {"city": "Tokyo"}), ("convert_to_fahrenheit", {"celsius": 18}), usage=(90, 30)),
        Reply.text("Live: 18 °C and sunny in Tokyo, 64.4 °F.", pieces=5, usage=(150, 12)),
    )
    nb = execute(ROOT / "notebooks" / "01_quickstart.ipynb", live_kernels(tmp_path, server))
    assert error_outputs(nb) == []
    assert leftover_tasks(nb) == "leftover tasks: []"
    text = output_text(nb)
    assert "model: scripted" in text
    assert "Live: 18 °C and sunny in Tokyo, 64.4 °F." in text
    assert [r.status for r in server.requests] == [200, 200]
    assert [m["role"] for m in server.requests[1].body["messages"]] == ["system", "user", "assistant", "tool", "tool"]
    assert server.requests[1].body["stream"] is True


def test_live_models_notebook_runs_live(server: ChatServer, tmp_path: Path) -> None:
    server.script(
        # the weather demo agent: two parallel calls, then the reflection
        Reply.call(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Tokyo"})),
        Reply.text("Live: rain in Paris, sun in Tokyo."),
        # the real-tool section: the model's call for Paris, then the reflection
        Reply.call(("get_weather", {"city": "Paris"})),
        Reply.text("Live: 18 degrees and light rain in Paris."),
        # recording a cassette of the calculator agent
        Reply.call(("multiply", {"a": 6, "b": 7})),
        Reply.text("Live: 42."),
        # %%agent chat
        Reply.text("Live: a model calling tools until it can answer."),
    )
    nb = execute(ROOT / "notebooks" / "05_live_models.ipynb", live_kernels(tmp_path, server))
    assert error_outputs(nb) == []
    assert leftover_tasks(nb) == "leftover tasks: []"
    text = output_text(nb)
    for line in (
        "mode: LIVE: a real model will be called",
        "model: scripted | OpenAIChatCompletionClient",
        "Live: rain in Paris, sun in Tokyo.",
        "answer: Live: 42.",
        "2 model calls recorded in multiply.cassette.json",
        "model: scripted | interactions: 2",
        "replayed answer: Live: 42.",
        "same as recorded: True",
        "Live: a model calling tools until it can answer.",
        'the model called get_weather({"city": "Paris"}) -> Paris: 18 degrees, light rain',
        "answer: Live: 18 degrees and light rain in Paris.",
    ):
        assert line in text
    assert [r.status for r in server.requests] == [200] * 7
    tool_section = server.requests[2].body  # a model that is not SmolLM2 gets no example turns
    assert [m["role"] for m in tool_section["messages"]] == ["system", "user"]
    assert (tool_section["temperature"], tool_section["seed"]) == (0, 7)
    assert server.pending == 0
