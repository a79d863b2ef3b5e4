"""Benchmark: the IOPub messages a cell that shows runs in a loop sends, against jupyter_server's rate limit.

A real kernel (``python3``) runs one cell that shows ``--runs`` replay runs one after the other
(``await nbagent.show(agent, task)``). ``--kind``: ``plain`` (one answer), ``tools`` (a tool call, then
a streamed answer), ``slow`` (the same, streamed slowly enough, 0.5 s, that its view goes live before it
ends: widgets, then its static copy). Every IOPub message
of that cell is received with its time; the messages jupyter_server's rate limit counts (all but
``status``, ``comm_open`` and ``execute_input``) are counted over its window (``rate_limit_window``,
3 s). Printed: the runs a second, the messages a run by type, and the highest rate over any window
against ``iopub_msg_rate_limit`` (1,000 a second by default). Above it, jupyter_server stops sending
the cell's output ("IOPub message rate exceeded") until the rate falls: see NOTEBOOK_FACTS for what
a widget does then.

    python bench/bench_iopub.py [--runs 100] [--kind plain|tools|slow] [--json out.json]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path
from typing import Any

from jupyter_client.manager import start_new_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.kernels import NOT_COUNTED, highest_rate  # noqa: E402

WINDOW_S = 3.0  # jupyter_server's ServerApp.rate_limit_window
LIMIT_PER_S = 1000.0  # its ServerApp.iopub_msg_rate_limit

CELL = """
import time
import nbagent
from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient

def shout(text: str) -> str:
    "Echo the text."
    return text

def make(i, kind):
    answer = f"answer {{i}}: " + "fine, thank you " * 10
    if kind == "plain":
        return AssistantAgent("bot", ReplayChatCompletionClient([answer]))
    request = FunctionCall(id="c1", name="shout", arguments='{{"text": "hi"}}')
    call = CreateResult(finish_reason="function_calls", content=[request])
    client = ReplayChatCompletionClient([call, answer], chunk_delay=0.015 if kind == "slow" else 0.0)
    return AssistantAgent("bot", client, tools=[shout], reflect_on_tool_use=True, model_client_stream=True)

started = time.perf_counter()
for i in range({runs}):
    await nbagent.show(make(i, {kind!r}), f"task {{i}}")
print(json.dumps({{"runs_per_s": {runs} / (time.perf_counter() - started)}}))
"""


def measure(runs: int, kind: str = "plain") -> dict[str, Any]:
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        client.execute("import json, nbagent", reply=True, timeout=120)
        cell = client.execute(CELL.format(runs=runs, kind=kind))
        counted: list[float] = []
        kinds: collections.Counter[str] = collections.Counter()
        printed = ""
        while True:
            message = client.get_iopub_msg(timeout=600)
            if message["parent_header"].get("msg_id") != cell:
                continue
            msg_type = message["msg_type"]
            kinds[msg_type] += 1
            if msg_type not in NOT_COUNTED:
                counted.append(time.perf_counter())
            if msg_type == "stream":
                printed += message["content"]["text"]
            if msg_type == "error":
                raise RuntimeError(f"the cell failed: {message['content']['evalue']}")
            if msg_type == "status" and message["content"]["execution_state"] == "idle":
                break
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    rate = highest_rate(counted, WINDOW_S)
    return {
        "runs": runs,
        "kind": kind,
        "runs_per_s": round(json.loads(printed.strip().splitlines()[-1])["runs_per_s"], 1),
        "counted_messages_per_run": round(len(counted) / runs, 1),
        "messages_per_run": {name: round(count / runs, 1) for name, count in sorted(kinds.items())},
        "highest_counted_rate_per_s": round(rate, 1),
        "limit_per_s": LIMIT_PER_S,
        "over_limit": rate > LIMIT_PER_S,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--kind", choices=("plain", "tools", "slow"), default="plain")
    parser.add_argument("--json")
    args = parser.parse_args()
    figures = measure(args.runs, args.kind)
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
