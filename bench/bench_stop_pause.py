"""Benchmark: how soon Stop, Pause and a kernel interrupt end a run in a real kernel (the 1 s targets).

The tests assert what Stop, Pause and an interrupt do (tests/notebook/test_kernel.py, tests/batch/test_kernel.py)
with hang guards only; how soon is measured here, in a real kernel (``python3``), ``--repeat`` times each:

- Stop: a run shown with ``await nbagent.show(agent, task)`` waits in a tool that sleeps 60 s; its view's Stop
  button is clicked (a comm message, as ipywidgets sends it from the browser); the figure is the time from
  the click to the run's end (the run's own clock, in the kernel);
- interrupt: the same run awaited with ``await agent.run(task=...)``; the kernel is interrupted; the figure
  is the time from the interrupt to the cell's error;
- Pause: a stepper widget's "Run to end" walks a loop whose model calls take 0.3 s; its Pause button is
  clicked; the figure is the time from the click to the walk being paused at a move boundary.

Printed: each figure's median and largest, against the 1 s target, and the load average at the start.

    python bench/bench_stop_pause.py [--repeat 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from jupyter_client.manager import start_new_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.kernels import SLOW_AGENT  # noqa: E402 (the repository's tests, beside bench/)

TARGET_S = 1.0
IOPUB_DEADLINE_S = 120.0
SETUP = (
    SLOW_AGENT
    + """
import time

def looper():
    calls = [CreateResult(finish_reason="function_calls",
                          content=[FunctionCall(id=f"c{i}", name="add", arguments='{"a": 1, "b": 2}')])
             for i in range(12)]
    return AssistantAgent("looper", ReplayChatCompletionClient([*calls, "done"], latency=0.3), tools=[add],
                          max_tool_iterations=13)

def add(a: int, b: int) -> int:
    "Add two integers."
    print("ADDED", flush=True)
    return a + b

def ended_at(view):
    "The wall-clock time the view's run ended."
    return time.time() - (time.perf_counter() - view._finished_perf)
"""
)
PAUSE = """
stepper = nbagent.step(looper(), "Add up.")
display(stepper)
w = stepper.widget()
async def paused_at():
    while w.busy:  # the widget's walk: busy until it pauses at a move boundary
        await asyncio.sleep(0.002)
    return time.time()
watcher = None
print(w.run_button.model_id, w.pause_button.model_id)
"""


class Kernel:
    """A started ``python3`` kernel and its client: code run, IOPub read with a deadline, comm clicks."""

    def __init__(self) -> None:
        self.manager, self.client = start_new_kernel(kernel_name="python3")

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)

    def message(self, what: str) -> dict[str, Any]:
        """The next IOPub message; past the deadline, an error naming what was awaited."""
        try:
            return self.client.get_iopub_msg(timeout=IOPUB_DEADLINE_S)  # type: ignore[no-any-return]
        except Exception as error:
            raise TimeoutError(f"no IOPub message within {IOPUB_DEADLINE_S:g} s while waiting for {what}") from error

    def run(self, code: str) -> str:
        """Run ``code``: what it printed, once the kernel is idle (an error in it raises)."""
        msg_id, printed = self.client.execute(code), []
        while True:
            message = self.message(f"the end of {code.splitlines()[0]!r}")
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            if message["msg_type"] == "stream":
                printed.append(message["content"]["text"])
            elif message["msg_type"] == "error":
                raise RuntimeError(f"{message['content']['ename']}: {message['content']['evalue']}")
            elif message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
                return "".join(printed)

    def click(self, comm_id: str, data: dict[str, Any] | None = None) -> float:
        """A click (or ``data``) sent to a widget, as from the browser: its wall-clock time."""
        content = {"comm_id": comm_id, "data": data or {"method": "custom", "content": {"event": "click"}}}
        clicked = time.time()
        self.client.shell_channel.send(self.client.session.msg("comm_msg", content))
        return clicked

    def until(self, msg_id: str, text: str, button: str | None = None) -> str | None:
        """Read the cell ``msg_id``'s IOPub until it printed ``text`` and, if ``button`` is given, opened a
        button labelled ``button`` (a shown run goes live, its Stop button with it, once it has run for
        ``GO_LIVE_S``: after its tool may have printed): the model id of the last such button."""
        found, printed = None, False
        while not printed or (button is not None and found is None):
            message = self.message(f"{text!r} from the cell" + (f" and its {button!r} button" if button else ""))
            kind = message["msg_type"]
            if kind == "comm_open" and button is not None:
                state = message["content"]["data"].get("state", {})
                if state.get("_model_name") == "ButtonModel" and state.get("description") == button:
                    found = message["content"]["comm_id"]
            elif kind == "stream" and text in message["content"]["text"]:
                printed = printed or message["parent_header"].get("msg_id") == msg_id
        return found

    def idle(self, msg_id: str) -> list[tuple[str, float]]:
        """The errors of the cell ``msg_id`` (name, when received), once it is idle."""
        errors = []
        while True:
            message = self.message("the cell's end")
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            if message["msg_type"] == "error":
                errors.append((message["content"]["ename"], time.time()))
            elif message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
                return errors


def stop(kernel: Kernel) -> float:
    kernel.run("a = make('a')")
    msg_id = kernel.client.execute("v = await nbagent.show(a, 'go')")
    button = kernel.until(msg_id, "STARTED", button="Stop")
    if button is None:
        raise RuntimeError("the view opened no Stop button")
    clicked = kernel.click(button)
    kernel.idle(msg_id)
    status, ended = kernel.run("print(v.status, ended_at(v))").split()
    if status != "cancelled":
        raise RuntimeError(f"the run ended {status!r}, not cancelled")
    return float(ended) - clicked


def interrupt(kernel: Kernel) -> float:
    kernel.run("b = make('b')")
    msg_id = kernel.client.execute("await b.run(task='go')")
    kernel.until(msg_id, "STARTED")
    asked = time.time()
    kernel.manager.interrupt_kernel()
    errors = kernel.idle(msg_id)
    if not errors:
        raise RuntimeError("the interrupted cell ended without an error")
    return errors[0][1] - asked


TOGGLE = {"method": "update", "state": {"value": True}, "buffer_paths": []}
"""A browser's click on the stepper's buttons (``ClickButton``s): the value turned on, not a "click" event."""


def pause(kernel: Kernel) -> float:
    run_button, pause_button = kernel.run(PAUSE).split()
    kernel.click(run_button, TOGGLE)
    deadline = time.monotonic() + IOPUB_DEADLINE_S
    while int(kernel.run("print(len(stepper.history))")) < 5:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the walk made fewer than 5 moves in {IOPUB_DEADLINE_S:g} s")
        time.sleep(0.1)
    if kernel.run("watcher = asyncio.ensure_future(paused_at())\nprint(w.busy)").strip() != "True":
        raise RuntimeError("the walk ended before Pause was clicked")
    clicked = kernel.click(pause_button, TOGGLE)
    status, paused = kernel.run("paused = await watcher\nprint(stepper.status, paused)").split()
    if status != "paused":
        raise RuntimeError(f"the walk is {status!r}, not paused")
    return float(paused) - clicked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="times each figure is measured")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, not {args.repeat}")
    load = os.getloadavg()[0]
    kernel = Kernel()
    try:
        kernel.run(SETUP)
        figures = {name: [measure(kernel) for _ in range(args.repeat)] for name, measure in MEASURES.items()}
    finally:
        kernel.close()
    print(f"load average at the start: {load:.1f}; {args.repeat} times each; target {TARGET_S:g} s")
    summary = {}
    for name, seconds in figures.items():
        summary[name] = {"median_s": round(statistics.median(seconds), 3), "max_s": round(max(seconds), 3)}
        over = sum(s >= TARGET_S for s in seconds)
        print(f"{name:>10}: median {statistics.median(seconds):.3f} s, largest {max(seconds):.3f} s, {over} over")
    if args.json:
        args.json.write_text(json.dumps({"load_average": load, "repeat": args.repeat, "figures": summary}, indent=2))


MEASURES = {"Stop": stop, "interrupt": interrupt, "Pause": pause}

if __name__ == "__main__":
    main()
