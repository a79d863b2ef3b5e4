"""Benchmark the live view's streaming in a real Jupyter kernel (jupyter_client, no browser).

Two cells stream 10,000 chunks through an ``AgentRunView``:

* ``burst``: an ``LLMCall`` then 10,000 chunks handed to ``view.handle`` in a tight loop (the view's
  own cost), as the text items ``view.run`` reads (``agent.iter(..., chunk_events=False)``);
* ``paced``: a scripted agent (``ReplayChatCompletionClient``) streams a 10,000-word answer with a
  0.5 ms pause between words, run with ``await view.run(agent, ...)``, as a notebook user would.

For each, the kernel measures its time per chunk: the view's bookkeeping in ``view.handle`` plus
every update of the streamed-text widgets (also those the trailing-flush timer makes), and this
script counts the comm messages the kernel sends on iopub (every widget update is one) and their
bytes. Widget updates cost ~100 us each on a quiet machine and more under load: the load average
is recorded with the figures.
Targets: <= 30 updates/s, <= 5 us of kernel time per chunk.

    python bench/bench_view.py [--chunks 10000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import ipywidgets
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

KERNEL = "nbagent-bench"

SETUP = """
import asyncio, json, time
from nbagent import AssistantAgent, ReplayChatCompletionClient
from nbagent import LLMCall
from nbagent.messages import ModelClientStreamingChunkEvent
from nbagent.models.base import ModelRequest
from nbagent.notebook import view as view_module
from nbagent.notebook.view import AgentRunView

spent = {"bookkeeping_s": 0.0, "chunks": 0, "update_s": 0.0, "updates": 0}
show = view_module._Stream._show

def timed_show(self, text):
    start = time.perf_counter()
    show(self, text)
    spent["update_s"] += time.perf_counter() - start
    spent["updates"] += 1

view_module._Stream._show = timed_show

def timed(view):
    for key in spent:
        spent[key] = 0
    handle = view.handle

    def wrapper(item):
        start = time.perf_counter()
        updates_before = spent["update_s"]
        handle(item)
        if type(item) is str or type(item) is ModelClientStreamingChunkEvent:
            elapsed = time.perf_counter() - start
            spent["bookkeeping_s"] += elapsed - (spent["update_s"] - updates_before)
            spent["chunks"] += 1
    view.handle = wrapper
    return spent
"""

BURST = """
view = AgentRunView("burst")
display(view)
view.handle(LLMCall("r1", 0, "initial", "replay", ModelRequest([], [], "auto", None), "m1", True))
timed(view)
chunks = [f"w{{i}} " for i in range({n})]
start = time.perf_counter()
for chunk in chunks:
    view.handle(chunk)
loop_s = time.perf_counter() - start
await asyncio.sleep(0.1)
text = view.model.entries[-1].text
assert text == "".join(f"w{{i}} " for i in range({n}))
print("RESULT" + json.dumps({{**spent, "wall_s": loop_s}}))
"""

PACED = """
words = "".join(f"w{{i}} " for i in range({n}))
agent = AssistantAgent("bot", ReplayChatCompletionClient([words], chunk_delay=0.0005), model_client_stream=True)
view = AgentRunView("paced")
display(view)
timed(view)
start = time.perf_counter()
response = await view.run(agent, "talk")
wall = time.perf_counter() - start
assert response.chat_message.content == words
print("RESULT" + json.dumps({{**spent, "wall_s": wall}}))
"""


def kernel_dirs(folder: Path) -> list[str]:
    spec_dir = folder / KERNEL
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "nbagent bench",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    return [str(folder)]


def run_cell(client: Any, code: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """Execute ``code``: its RESULT line (if any) and the comm messages it caused on iopub."""
    msg_id = client.execute(code)
    stats: dict[str, Any] = {"comm_msgs": 0, "comm_bytes": 0, "first": None, "last": None}
    result: dict[str, Any] | None = None
    while True:
        message = client.get_iopub_msg(timeout=300)
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        kind = message["msg_type"]
        if kind == "comm_msg":
            stats["comm_msgs"] += 1
            stats["comm_bytes"] += len(json.dumps(message["content"]["data"]))
            stamp = message["header"]["date"].timestamp()
            stats["first"] = stamp if stats["first"] is None else stats["first"]
            stats["last"] = stamp
        elif kind == "stream" and "RESULT" in message["content"]["text"]:
            result = json.loads(message["content"]["text"].split("RESULT", 1)[1].splitlines()[0])
        elif kind == "error":
            raise RuntimeError(f"{message['content']['ename']}: {message['content']['evalue']}")
        elif kind == "status" and message["content"]["execution_state"] == "idle":
            return result, stats


def measure(client: Any, code: str) -> dict[str, Any]:
    """Run one benchmark cell and turn what it reported into figures."""
    result, stats = run_cell(client, code)
    assert result is not None, "the cell printed no RESULT"
    span = (stats["last"] or 0.0) - (stats["first"] or 0.0)
    return {
        "chunks": result["chunks"],
        "kernel_us_per_chunk": round((result["bookkeeping_s"] + result["update_s"]) / result["chunks"] * 1e6, 3),
        "bookkeeping_us_per_chunk": round(result["bookkeeping_s"] / result["chunks"] * 1e6, 3),
        "stream_updates": result["updates"],
        "us_per_stream_update": round(result["update_s"] / max(result["updates"], 1) * 1e6, 1),
        "run_wall_s": round(result["wall_s"], 3),
        "comm_msgs": stats["comm_msgs"],
        "comm_kbytes": round(stats["comm_bytes"] / 1024, 1),
        "comm_span_s": round(span, 3),
        "updates_per_s": round(stats["comm_msgs"] / max(result["wall_s"], span, 1e-9), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        manager = KernelManager(
            kernel_name=KERNEL, kernel_spec_manager=KernelSpecManager(kernel_dirs=kernel_dirs(Path(folder)))
        )
        manager.start_kernel()
        client = manager.client()
        client.start_channels()
        try:
            client.wait_for_ready(timeout=60)
            run_cell(client, SETUP)
            figures = {
                "burst": measure(client, BURST.format(n=args.chunks)),
                "paced": measure(client, PACED.format(n=args.chunks)),
            }
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)

    report = {
        "benchmark": "bench_view",
        "python": platform.python_version(),
        "ipywidgets": ipywidgets.__version__,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "targets": {"updates_per_s": 30, "kernel_us_per_chunk": 5},
        **figures,
    }
    for name, row in figures.items():
        print(
            f"{name:6} {row['chunks']:,} chunks: {row['kernel_us_per_chunk']:.2f} us/chunk in the view "
            f"({row['bookkeeping_us_per_chunk']:.2f} us bookkeeping + {row['stream_updates']} text updates of "
            f"{row['us_per_stream_update']:.0f} us); {row['comm_msgs']} comm messages ({row['comm_kbytes']} kB) "
            f"over {row['run_wall_s']:.2f} s = {row['updates_per_s']} updates/s"
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
