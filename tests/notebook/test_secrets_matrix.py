"""One secret rule, every artefact (issue 31, point 2): seven secrets x every artefact nbagent makes.

The seven secrets (``secrets_scenario.py``) come the seven ways a secret reaches nbagent: an API key,
a gateway's bearer token, a URL's password, a secret header's value, a key in ``extra_headers``, the
environment's key, and a key of a known shape that nobody holds. A scripted server on 127.0.0.1
(real HTTP, the real ``openai`` SDK) echoes all seven, bare, in streamed answers, reasoning, tool
arguments (and so tool results) and error messages. Every artefact below is produced, written out as
text (files read back byte for byte) and grepped for each secret: reprs, errors and warnings, run
records and events as the renderer draws them (HTML and text), the live view's static copy, text and
widget state, the stepper's, the batch view's, Console's output, every trace frame and view, every
file of every export format (Parquet, JSONL, OTLP JSON and the OTLP request posted), a loaded trace's
frames, the cassette, ``save_state()``, every ``dump_component()``, Batch's results, attempts and
progress and every file of its dataset, and a notebook run in a real kernel, saved with its widget
state (the .ipynb, its widget state alone, its nbconvert HTML with and without widget state).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

import nbagent
from nbagent import AssistantAgent, Batch, Console, Trace
from nbagent.models import ModelError, RecordingChatCompletionClient
from nbagent.trace import OTLPRecorder
from nbagent.trace.loaded import load_jsonl, load_parquet

from ..kernels import execute_notebook, kernel_manager
from ..notebooks._kernel import KERNEL_NAME, write_kernelspec
from ..trace.test_otlp import Capture
from .secrets_scenario import ENV, clients, lookup, new_secrets, start_server

pytestmark = pytest.mark.kernel  # on the module: the fast tier does not import the file

ROOT = Path(__file__).resolve().parents[2]
MIN_ARTEFACTS = 65


def frame_text(frame: Any) -> str:
    return frame.to_json(default_handler=str, date_format="iso", orient="records")


def files_under(folder: Path) -> Iterator[tuple[str, str]]:
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            yield str(path.relative_to(folder)), path.read_bytes().decode("latin-1")


def widget_values(widget: Any) -> str:
    """Every string trait of a widget and its children (what its saved widget state holds)."""
    import ipywidgets

    parts = []
    for name in widget.keys:
        value = getattr(widget, name, None)
        if isinstance(value, str):
            parts.append(value)
    for child in getattr(widget, "children", ()):
        if isinstance(child, ipywidgets.Widget):
            parts.append(widget_values(child))
    return "\n".join(parts)


class Artefacts(dict[str, str]):
    def add(self, name: str, text: object) -> None:
        assert name not in self, name
        self[name] = text if isinstance(text, str) else repr(text)


async def produce(tmp_path: Path, values: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Artefacts:
    from nbagent.notebook.batch_view import BatchView
    from nbagent.notebook.view import AgentRunView
    from nbagent.render import to_html, to_text

    out = Artefacts()
    server = start_server(values)
    capture = Capture()
    capture.thread.start()
    try:
        monkeypatch.setenv("OPENAI_API_KEY", values["env key"])
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        made = clients(server.base_url, values)
        recorder = RecordingChatCompletionClient(made["keyed"], tmp_path / "run.cassette.json")
        shared = Trace()
        agents = {
            name: AssistantAgent(
                f"agent_{name}",
                recorder if name == "keyed" else client,
                tools=[lookup],
                reflect_on_tool_use=True,
                model_client_stream=True,
            )
            for name, client in made.items()
        }
        for agent in agents.values():
            shared.attach(agent)
        main = agents["keyed"]
        sender = OTLPRecorder(capture.endpoint, content=True, raise_errors=True).attach(main)
        # Runs: a tool round then a streamed answer, a refused request (400), on every client.
        for name, agent in agents.items():
            response = await agent.run(task=f"TOOL please {name}")
            out.add(f"response repr ({name})", repr(response))
            with pytest.raises(ModelError) as failed:
                await agent.run(task="ERROR please")
            out.add(f"error str ({name})", str(failed.value))
            out.add(f"error repr ({name})", repr(failed.value))
            out.add(f"failed_run ({name})", repr(agent.failed_run))
            out.add(f"client repr ({name})", repr(agent.model_client))
            out.add(f"agent repr ({name})", repr(agent))
            out.add(f"save_state ({name})", json.dumps(await agent.save_state()))
            if name != "keyed":  # a recording client is not dumped (loading one would record over the cassette)
                out.add(f"dump_component agent ({name})", agent.dump_component().model_dump_json())
            out.add(f"dump_component client ({name})", made[name].dump_component().model_dump_json())
        await asyncio.to_thread(sender.flush)
        posted = [request.SerializeToString().decode("latin-1") for _, request in capture.requests]
        out.add("OTLPRecorder requests posted (as the runs ended)", "\n".join(posted))
        out.add("recorder repr", repr(recorder))
        out.add("trace repr", repr(shared))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            nbagent.OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url.replace("127.0.0.1", "localhost"))
        out.add("warnings", "\n".join(str(w.message) for w in caught))

        # The renderer, item by item: every record, event and message of the main agent's runs.
        items = shared.items
        out.add("render to_html (every item)", "\n".join(str(to_html(item)) for item in items))
        out.add("render to_text (every item)", "\n".join(str(to_text(item)) for item in items))
        console = io.StringIO()
        await Console(main.run_stream(task="TOOL console"), output=console, output_stats=True)
        out.add("Console output", console.getvalue())

        # The live view (no kernel: its model), a run that answers and one that fails.
        for label, task in (("answer", "TOOL view"), ("failure", "ERROR view")):
            view = AgentRunView()
            try:
                await view.run(main, task)
            except ModelError:
                pass
            out.add(f"view static HTML ({label})", view.to_html())
            out.add(f"view text ({label})", view.to_text())
            out.add(f"view widget state ({label})", widget_values(view))
            out.add(f"view mime bundle ({label})", json.dumps(view._repr_mimebundle_(), default=str))
        stepper = nbagent.step(main, "TOOL stepper")
        await stepper.run_to_end()
        out.add("stepper static HTML", stepper.static_bundle()["text/html"])
        out.add("stepper widget state", widget_values(stepper.widget()))
        await stepper.aclose()

        # The trace: frames, views, exports.
        out.add("events_df", frame_text(shared.events_df()))
        out.add("llm_calls_df", frame_text(shared.llm_calls_df()))
        out.add("tool_calls_df", frame_text(shared.tool_calls_df()))
        out.add("runs_df", frame_text(shared.runs_df()))
        out.add("context_df", frame_text(shared.context_df()))
        for table, frame in shared.context_tables().items():
            out.add(f"context table {table}", frame_text(frame))
        run_id = shared.runs_df()["run_id"].iloc[0]
        out.add("request_df", frame_text(shared.request_df(run_id)))
        out.add("live_context_df", frame_text(shared.live_context_df(main)))
        out.add("summary", repr(shared.summary()))
        out.add("trace HTML", shared._repr_html_())
        out.add("timeline HTML", shared.timeline()._repr_html_())
        parquet = shared.to_parquet(tmp_path / "parquet")
        for name, text in files_under(parquet):
            out.add(f"parquet file {name}", text)
        jsonl = shared.to_jsonl(tmp_path / "jsonl")
        for name, text in files_under(jsonl):
            out.add(f"jsonl file {name}", text)
        shared.to_otlp_json(tmp_path / "otlp.json", content=True)
        out.add("OTLP JSON file", (tmp_path / "otlp.json").read_text())
        sender.detach(main)
        shared.to_otlp(capture.endpoint, content=True)
        out.add("OTLP request posted", capture.requests[-1][1].SerializeToString().decode("latin-1"))
        for label, loaded in (("parquet", load_parquet(parquet)), ("jsonl", load_jsonl(jsonl))):
            for frame in ("events_df", "llm_calls_df", "tool_calls_df", "runs_df"):
                out.add(f"loaded {label} {frame}", frame_text(getattr(loaded, frame)()))
        out.add("cassette", (tmp_path / "run.cassette.json").read_text())

        # A batch (copies of an agent sharing its client), written as a dataset.
        batch = Batch(agents["url"], ["TOOL one", "plain two", "ERROR three"], output=tmp_path / "batch", concurrency=2)
        await batch.run()
        out.add("batch results", frame_text(batch.results))
        out.add("batch failures", frame_text(batch.failures))
        out.add("batch progress", repr(batch.progress()))
        out.add("batch repr", repr(batch))
        batch_view = BatchView(batch, show=False)
        batch_view.finish(batch.progress())
        out.add("batch view HTML", batch_view.to_html())
        out.add("batch view widget state", widget_values(batch_view))
        for name, text in files_under(tmp_path / "batch"):
            out.add(f"batch dataset file {name}", text)
        for client in made.values():
            await client.close()
    finally:
        capture.server.shutdown()
        server.stop()
    return out


NOTEBOOK_CELLS = [
    f"import sys, os, json\nsys.path.insert(0, {str(ROOT)!r})\n"
    "from tests.notebook.secrets_scenario import from_environment, start_server, clients, lookup\n"
    "import nbagent\nvalues = from_environment()\nserver = start_server(values)\n"
    "os.environ['OPENAI_API_KEY'] = values['env key']\nos.environ['OPENAI_BASE_URL'] = server.base_url\n"
    "made = clients(server.base_url, values)\n"
    "agents = {name: nbagent.AssistantAgent(f'agent_{name}', client, tools=[lookup], reflect_on_tool_use=True,"
    " model_client_stream=True) for name, client in made.items()}",
    "for name, agent in agents.items():\n    view = await nbagent.show(agent, f'TOOL shown {name}')",
    "view = nbagent.start(agents['keyed'], 'TOOL started')\nawait view.wait()",
    "try:\n    await nbagent.show(agents['url'], 'ERROR shown')\nexcept Exception as error:\n    print(error)",
    "stepper = nbagent.step(agents['gateway'], 'TOOL stepped')\nawait stepper.run_to_end()\nstepper",
    "batch = nbagent.Batch(agents['env'], ['TOOL a', 'ERROR b'])\nawait batch.run()\nbatch.results",
    "agents['keyed'].trace",
    "agents['keyed'].trace.events_df()",
]


def run_notebook(tmp_path: Path, values: dict[str, str]) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in NOTEBOOK_CELLS]
    kernels = write_kernelspec(tmp_path / "spec", sys.executable, {ENV: json.dumps(values)})
    execute_notebook(nb, kernel_manager(KERNEL_NAME, [str(kernels)]), timeout=180, store_widget_state=True)
    path = tmp_path / "saved.ipynb"
    nbformat.write(nb, path)
    return path


def notebook_artefacts(path: Path) -> Artefacts:
    from nbconvert import HTMLExporter

    out = Artefacts()
    text = path.read_text()
    out.add("saved notebook (.ipynb)", text)
    nb = nbformat.reads(text, as_version=4)
    state = nb.metadata.get("widgets", {})
    assert state, "the notebook was saved without widget state"
    out.add("saved notebook widget state", json.dumps(state))
    out.add("nbconvert HTML (with widget state)", HTMLExporter().from_notebook_node(nb)[0])
    nb.metadata.pop("widgets")
    out.add("nbconvert HTML (no widget state)", HTMLExporter().from_notebook_node(nb)[0])
    return out


async def test_no_secret_reaches_any_artefact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    values = new_secrets()
    artefacts = await produce(tmp_path, values, monkeypatch)
    saved = run_notebook(tmp_path, values)
    artefacts.update(notebook_artefacts(saved))
    assert len(artefacts) >= MIN_ARTEFACTS, len(artefacts)
    # The control: the echoed secrets did reach these artefacts, masked, not absent.
    reached = [
        "events_df", "saved notebook (.ipynb)", "nbconvert HTML (no widget state)", "cassette", "batch results",
        "OTLPRecorder requests posted (as the runs ended)", "OTLP request posted", "view static HTML (answer)",
        "view widget state (answer)", "save_state (keyed)", "Console output", "error str (url)", "response repr (env)",
    ]  # fmt: skip
    assert [name for name in reached if "[REDACTED]" not in artefacts[name]] == []
    leaks = [
        f"{kind} in {name}"
        for name, text in artefacts.items()
        for kind, secret in values.items()
        if secret in text or secret.lower() in text.lower()
    ]
    print(f"secrets matrix: {len(artefacts)} artefacts x {len(values)} secrets = {len(artefacts) * len(values)} checks")
    assert leaks == [], "\n".join(leaks)
    os.environ.pop(ENV, None)
