"""Benchmark of nbagent.Batch against the raw openai SDK, over real HTTP at the same concurrency.

The project's scripted Chat Completions server (``tests/models/chat_server.py``) runs in a process of
its own on 127.0.0.1 and answers every request after a fixed latency (``--latency``, 50 ms): a
request whose last message is not a tool result gets a tool call, one after a tool result gets the
final answer. Each of ``--tasks`` tasks (2,000) is one tool call and a final answer, two requests:

* **raw**: the openai SDK's ``AsyncOpenAI`` (the HTTP client nbagent's client uses), ``--concurrency``
  (64) workers each taking the next task as it finishes one (the fastest hand-written loop, as Batch's
  own workers), per task: the request with the tool, the tool run by hand, the request with its result
  and no tools (what nbagent sends when it reflects);
* **nbagent**: ``Batch(make_agent, tasks, concurrency=64, progress=None)`` with a fresh
  ``AssistantAgent`` per task (``reflect_on_tool_use=True``, one shared ``OpenAIChatCompletionClient``),
  every run recorded in the batch's trace, results built at the end; no progress display (in a
  terminal the default is a tqdm bar, at most 10 updates a second).

The requests are the same but for one field: nbagent's tool schema says ``"strict": false``. The raw
side sends each with ``chat.completions.create``, as the SDK is used: create() first runs its
arguments through the SDK's transform by type hints (0.1-0.4 ms of CPU a request, a no-op on JSON-ready
dicts) and builds its pydantic models of the answer. nbagent's client posts the same request
through the SDK's own ``post()`` and reads the answer's bytes as JSON (the SDK's errors, retries and
timeouts are the same). So that the loop's own cost shows, the raw side is also run on that path
(``raw_post``: the same ``post()`` and ``json.loads``, by hand): nbagent over it is what the loop, the
trace and the batch cost.

Both sides run the tool the same way. The main figure (the goal's) has the tool ``lookup`` as an
``async def``: the raw side awaits it between its two requests, nbagent's ``FunctionTool`` awaits it
inline. The second has it as a plain ``def``: nbagent's ``FunctionTool`` runs a sync function in a
worker thread (``asyncio.to_thread``, as AutoGen's runs it in the executor, so a blocking tool never
blocks the loop) and the raw side does the same (calling it inline instead, as the comparison did
before, gave the raw side the cheaper path: 0.85-0.89 at dc52ae6). Any pause between a
task's two requests costs CPU in the SDK's connection pool (httpcore2 polls every idle connection's
socket on each request and release, and more connections sit idle when tasks pause), so a thread
hop costs both sides the same.

The raw side is also run the usual way, an ``asyncio.Semaphore`` and ``gather`` over every task
(``raw_gather_*``): its hand-off between tasks is such a pause too, and costs it about 0.3 ms a task.

The six runs (raw and nbagent with the async tool, the raw SDK's post() path, the raw Semaphore
loop, raw and nbagent with the sync tool in a thread) alternate ``--rounds`` times after a warm-up,
each round starting with another run and each run after a garbage collection; each figure is the
median, and the goal's ratio is also given per round (nbagent's run against the raw run of the same
round: median, min, max). Also:
CPU seconds of this process per task (the server's are its own process's), the memory a batch keeps
per 1,000 tasks (tracemalloc: results and traces in memory, and with ``output=`` a folder, where it
stays flat), and the replay model's tasks per second (no HTTP, the sync tool).

    python bench/bench_batch.py [--tasks 2000] [--concurrency 64] [--latency 0.05] [--rounds 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOAL = 0.9

SERVER = textwrap.dedent(
    """
    import sys
    from tests.models.chat_server import ChatServer, Reply

    latency = float(sys.argv[1])
    call = Reply.call(("lookup", {"city": "Paris"}), delay=latency)
    answer = Reply.text("It is sunny in Paris.", delay=latency)

    def respond(body):
        return answer if body["messages"][-1]["role"] == "tool" else call

    server = ChatServer(responder=respond).start()
    server.requests = type("Forget", (list,), {"append": lambda self, item: None})()
    print(server.port, flush=True)
    sys.stdin.read()
    server.stop()
    """
)

SYSTEM = (
    "You are a helpful AI assistant. Solve tasks using your tools. "
    "Reply with TERMINATE when the task has been completed."
)
POST_OPTIONS = {"security": {"bearer_auth": True}}  # the SDK's request options, as create() gives them
TOOL_SCHEMA = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "The weather of a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


async def lookup(city: str) -> str:
    """The weather of a city."""
    return f"sunny in {city}"


def lookup_sync(city: str) -> str:
    """The weather of a city."""
    return f"sunny in {city}"


class Server:
    """The scripted server in a subprocess, on a free port of 127.0.0.1."""

    def __init__(self, latency: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(latency)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


async def raw_sdk(base_url: str, tasks: list[str], concurrency: int, tool: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) for the raw SDK to run every task. ``tool``: "async" (``lookup``
    awaited), "thread" (``lookup_sync`` in ``asyncio.to_thread``); with "+gather" the tasks go through
    an ``asyncio.Semaphore`` and ``gather`` instead of ``concurrency`` workers taking the next task;
    with "+post" each request is the SDK's ``post()`` of the same body, its answer read as JSON."""
    import openai

    client = openai.AsyncOpenAI(
        base_url=base_url, api_key="sk-bench", max_retries=0, http_client=openai.DefaultAsyncHttpxClient()
    )
    tool, _, pattern = tool.partition("+")

    async def ask(**body: Any) -> tuple[str, list[tuple[str, str, str]]]:
        """The answer's text and tool calls (id, name, arguments): ``post()`` of the body read as
        JSON, or ``create()`` and the SDK's models of the answer."""
        if pattern == "post":
            answer = await client.post("/chat/completions", cast_to=bytes, body=body, options=POST_OPTIONS)
            message = json.loads(answer)["choices"][0]["message"]
            found = message.get("tool_calls") or []
            calls = [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in found]
            return message.get("content") or "", calls
        completion = await client.chat.completions.create(**body)
        reply = completion.choices[0].message
        return reply.content or "", [(c.id, c.function.name, c.function.arguments) for c in reply.tool_calls or []]

    async def one(task: str) -> str:
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]
        _, calls = await ask(model="gpt-4o", messages=messages, tools=[TOOL_SCHEMA], tool_choice="auto")
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
                    for call_id, name, arguments in calls
                ],
            }
        )
        for call_id, _, arguments in calls:
            if tool == "async":
                result = await lookup(**json.loads(arguments))
            else:
                result = await asyncio.to_thread(lookup_sync, **json.loads(arguments))
            messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
        text, _ = await ask(model="gpt-4o", messages=messages)
        return text

    gate = asyncio.Semaphore(concurrency)

    async def gated(task: str) -> str:
        async with gate:
            return await one(task)

    answers: list[str] = []
    pending = iter(tasks)

    async def worker() -> None:
        for task in pending:
            answers.append(await one(task))

    wall, cpu = time.perf_counter(), time.process_time()
    if pattern == "gather":
        answers = await asyncio.gather(*(gated(task) for task in tasks))
    else:
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    assert len(answers) == len(tasks)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert all(answer == "It is sunny in Paris." for answer in answers)
    await client.close()
    return wall, cpu


async def nbagent_batch(base_url: str, tasks: list[str], concurrency: int, tool: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) for nbagent.Batch to run every task and build its results;
    ``tool``: "async" (``lookup``) or "thread" (``lookup_sync``, which FunctionTool runs in a thread)."""
    from nbagent import AssistantAgent, Batch, FunctionTool, OpenAIChatCompletionClient

    client = OpenAIChatCompletionClient("gpt-4o", base_url=base_url, api_key="sk-bench", max_retries=0)
    function_tool = FunctionTool(lookup if tool == "async" else lookup_sync, name="lookup")

    def make_agent(task: str) -> AssistantAgent:
        return AssistantAgent("bench", client, tools=[function_tool], reflect_on_tool_use=True)

    wall, cpu = time.perf_counter(), time.process_time()
    batch = await Batch(make_agent, tasks, concurrency=concurrency, progress=None).run()
    results = batch.results
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert (results["status"] == "ok").all() and (results["answer"] == "It is sunny in Paris.").all(), results
    assert (results["llm_calls"] == 2).all() and (results["tool_calls"] == 1).all()
    await client.close()
    return wall, cpu


def replay_factory() -> Any:
    from nbagent import AssistantAgent, CreateResult, FunctionCall, FunctionTool, ReplayChatCompletionClient

    tool = FunctionTool(lookup_sync, name="lookup")
    call = CreateResult(
        finish_reason="function_calls", content=[FunctionCall(id="c1", name="lookup", arguments='{"city": "Paris"}')]
    )

    def make_agent(task: str) -> AssistantAgent:
        client = ReplayChatCompletionClient([call, "It is sunny in Paris."])
        return AssistantAgent("bench", client, tools=[tool], reflect_on_tool_use=True)

    return make_agent


async def replay_rate(tasks: list[str], concurrency: int) -> float:
    """Tasks per second on the replay model (no HTTP): the batch's and the loop's own cost."""
    from nbagent import Batch

    started = time.perf_counter()
    batch = await Batch(replay_factory(), tasks, concurrency=concurrency, progress=None).run()
    assert len(batch.results) == len(tasks)
    return len(tasks) / (time.perf_counter() - started)


async def memory_per_1000(tasks: int, concurrency: int) -> dict[str, float]:
    """KB a batch keeps per 1,000 tasks (tracemalloc, after a collection, the batch still referenced):
    in memory (results and trace), and with output= (a folder): what 4x the tasks keep more, per
    1,000 tasks, and the peak while each runs (the part being written included)."""
    from nbagent import Batch

    async def kept(count: int, output: str | None) -> tuple[int, int]:
        names = [f"task {i}" for i in range(count)]
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        batch = Batch(replay_factory(), names, concurrency=concurrency, part_size=500, output=output, progress=None)
        await batch.run()
        peak = tracemalloc.get_traced_memory()[1] - before
        del names
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        del batch
        return held, peak

    with tempfile.TemporaryDirectory() as warm:  # imports and caches first (pyarrow, pandas)
        await Batch(replay_factory(), ["w"] * 600, part_size=500, output=warm, progress=None).run()
    tracemalloc.start()
    try:
        in_memory, _ = await kept(tasks, None)
        with tempfile.TemporaryDirectory() as small, tempfile.TemporaryDirectory() as large:
            held_small, peak_small = await kept(1000, small)
            held_large, peak_large = await kept(4000, large)
    finally:
        tracemalloc.stop()
    return {
        "in_memory_kb_per_1000_tasks": round(in_memory / tasks, 1),  # bytes per task = KB per 1,000 tasks
        "output_growth_kb_per_1000_tasks": round((held_large - held_small) / 3 / 1024, 1),
        "output_peak_mb_1000_tasks": round(peak_small / 2**20, 1),
        "output_peak_mb_4000_tasks": round(peak_large / 2**20, 1),
    }


RUNS = {  # run name: (runner, how it runs the tool [+ the raw side's pattern])
    "raw": (raw_sdk, "async"),
    "nbagent": (nbagent_batch, "async"),
    "raw_post": (raw_sdk, "async+post"),
    "raw_gather": (raw_sdk, "async+gather"),
    "raw_thread": (raw_sdk, "thread"),
    "nbagent_thread": (nbagent_batch, "thread"),
}


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    server = Server(args.latency)
    try:
        tasks = [f"What is the weather in city {i}?" for i in range(args.tasks)]
        warm = tasks[: min(200, len(tasks))]
        for runner, tool in RUNS.values():
            await runner(server.base_url, warm, args.concurrency, tool)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in RUNS}
        names = list(RUNS)
        for round_ in range(args.rounds):
            shift = round_ % len(names)  # each round starts with another run: none always follows another
            for name in names[shift:] + names[:shift]:
                runner, tool = RUNS[name]
                gc.collect()  # what the run before left is not this run's to collect
                times[name].append(await runner(server.base_url, tasks, args.concurrency, tool))
    finally:
        server.stop()
    rate = {name: statistics.median(args.tasks / wall for wall, _ in runs) for name, runs in times.items()}
    cpu = {name: round(statistics.median(c for _, c in runs) / args.tasks * 1000, 3) for name, runs in times.items()}
    raw_rate, our_rate = rate["raw"], rate["nbagent"]
    paired = sorted(raw[0] / ours[0] for raw, ours in zip(times["raw"], times["nbagent"], strict=True))
    ideal = args.concurrency / (2 * args.latency)
    figures: dict[str, Any] = {
        "tasks": args.tasks,
        "concurrency": args.concurrency,
        "latency_s": args.latency,
        "rounds": args.rounds,
        "ideal_tasks_per_s": round(ideal, 1),
        "raw_sdk_tasks_per_s": round(raw_rate, 1),
        "nbagent_tasks_per_s": round(our_rate, 1),
        "ratio_nbagent_over_raw": round(our_rate / raw_rate, 3),
        "ratio_per_round_median": round(statistics.median(paired), 3),
        "ratio_per_round_min": round(paired[0], 3),
        "ratio_per_round_max": round(paired[-1], 3),
        "goal_ratio": GOAL,
        "goal_met": our_rate / raw_rate >= GOAL and statistics.median(paired) >= GOAL,
        "raw_sdk_cpu_ms_per_task": cpu["raw"],
        "nbagent_cpu_ms_per_task": cpu["nbagent"],
        "sync_tool_raw_sdk_tasks_per_s": round(rate["raw_thread"], 1),
        "sync_tool_nbagent_tasks_per_s": round(rate["nbagent_thread"], 1),
        "sync_tool_ratio_nbagent_over_raw": round(rate["nbagent_thread"] / rate["raw_thread"], 3),
        "sync_tool_raw_sdk_cpu_ms_per_task": cpu["raw_thread"],
        "sync_tool_nbagent_cpu_ms_per_task": cpu["nbagent_thread"],
        "raw_post_tasks_per_s": round(rate["raw_post"], 1),
        "raw_post_cpu_ms_per_task": cpu["raw_post"],
        "ratio_nbagent_over_raw_post": round(our_rate / rate["raw_post"], 3),
        "raw_gather_tasks_per_s": round(rate["raw_gather"], 1),
        "raw_gather_cpu_ms_per_task": cpu["raw_gather"],
        "ratio_nbagent_over_raw_gather": round(our_rate / rate["raw_gather"], 3),
        "replay_tasks_per_s": round(await replay_rate([f"task {i}" for i in range(args.tasks)], args.concurrency), 1),
        **await memory_per_1000(min(args.tasks, 2000), args.concurrency),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
    }
    return figures


def report(figures: dict[str, Any]) -> str:
    f = figures

    def side(name: str, prefix: str) -> str:
        return f"  {name:<16} {f[prefix + 'tasks_per_s']:>8} tasks/s   {f[prefix + 'cpu_ms_per_task']:>7} ms CPU/task"

    met = "met" if f["goal_met"] else "NOT met"
    return "\n".join(
        [
            f"{f['tasks']} tasks, 1 tool call + final answer each, concurrency {f['concurrency']}, "
            f"server latency {f['latency_s'] * 1000:.0f} ms (ideal {f['ideal_tasks_per_s']} tasks/s), "
            f"median of {f['rounds']} rounds",
            "tool `async def lookup`, awaited inline on both sides (the goal's figure):",
            side("raw openai SDK", "raw_sdk_"),
            side("nbagent.Batch", "nbagent_"),
            f"  ratio {f['ratio_nbagent_over_raw']}, per round {f['ratio_per_round_median']} "
            f"({f['ratio_per_round_min']}-{f['ratio_per_round_max']}) (goal >= {f['goal_ratio']}: {met})",
            "tool `def lookup`, in a worker thread (asyncio.to_thread) on both sides:",
            side("raw openai SDK", "sync_tool_raw_sdk_"),
            side("nbagent.Batch", "sync_tool_nbagent_"),
            f"  ratio {f['sync_tool_ratio_nbagent_over_raw']}",
            "the raw SDK on nbagent's path, post() of the same body read as JSON (async tool, 64 workers):",
            side("raw SDK post()", "raw_post_"),
            f"  ratio {f['ratio_nbagent_over_raw_post']} (nbagent.Batch over this: the loop, trace and batch's cost)",
            "the raw SDK through a Semaphore and gather (async tool), the usual hand-written loop:",
            side("raw openai SDK", "raw_gather_"),
            f"  ratio {f['ratio_nbagent_over_raw_gather']} (nbagent.Batch with the async tool over this)",
            f"replay model: {f['replay_tasks_per_s']} tasks/s; memory per 1,000 tasks: "
            f"{f['in_memory_kb_per_1000_tasks']} KB in memory, "
            f"{f['output_growth_kb_per_1000_tasks']} KB more with output= (peak {f['output_peak_mb_1000_tasks']} MB "
            f"for 1,000 tasks, {f['output_peak_mb_4000_tasks']} MB for 4,000)",
            f"(load average {f['load_average_1min']} on {f['cpus']} CPUs)",
        ]
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds the server waits before each answer")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", metavar="PATH", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    figures = asyncio.run(measure(args))
    print(report(figures))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return figures


if __name__ == "__main__":
    main(sys.argv[1:])
