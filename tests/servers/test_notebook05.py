"""Notebook 05 top to bottom against llama-server and the real SmolLM2-135M model (issues 18, 32): on
the Qwen2.5 chat template, so its real-model tool section runs live: the model calls ``get_weather``
for Paris, the tool runs, the reflection answers, in the live view of a real kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.notebooks._kernel import (
    ROOT,
    error_outputs,
    execute,
    leftover_tasks,
    output_text,
    this_python,
    write_kernelspec,
)

from .realservers import MODEL, Running

pytestmark = [pytest.mark.timeout(900), pytest.mark.kernel]


def test_live_models_notebook_on_llama_server(llama_tools: Running, tmp_path: Path) -> None:
    llama = llama_tools
    env = {"NBAGENT_BASE_URL": llama.base_url, "NBAGENT_MODEL": MODEL, "NBAGENT_API_KEY": llama.api_key}
    nb = execute(
        ROOT / "notebooks" / "05_live_models.ipynb", write_kernelspec(tmp_path, this_python(), env), timeout=300
    )
    assert error_outputs(nb) == []
    assert leftover_tasks(nb) == "leftover tasks: []"
    text = output_text(nb)
    for line in (
        "mode: LIVE: a real model will be called",
        f"model: {MODEL} | OpenAIChatCompletionClient",
        f"model: {MODEL} | interactions:",
        "same as recorded: True",
        "CassetteMismatchError:",
        'the model called get_weather({"city": "Paris"}) -> Paris: 18 degrees, light rain',
    ):
        assert line in text
    assert llama.api_key not in text
