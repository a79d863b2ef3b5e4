"""Batches over real HTTP: the openai SDK (through OpenAIChatCompletionClient) against the scripted
Chat Completions server, for retries on rate limits and server errors with Retry-After."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

from nbagent import AssistantAgent, Batch, ModelRateLimitError, OpenAIChatCompletionClient
from tests.models.chat_server import ChatServer, Reply
from tests.waits import eventually

from .helpers import LOOKUP, contexts_valid

KEY = "sk-" + "test-batch-7c1d2e"  # a fake key, made at run time


class Scripts:
    """Replies per task (the first user message's text), in order; the time of every request."""

    def __init__(self, scripts: dict[str, list[Reply]], default: list[Reply] | None = None) -> None:
        self.scripts = scripts
        self.default = default
        self.seen: dict[str, int] = defaultdict(int)
        self.times: dict[str, list[float]] = defaultdict(list)
        self.bodies: dict[str, list[Any]] = defaultdict(list)
        self._lock = threading.Lock()

    def __call__(self, body: Any) -> Reply:
        task = next(m["content"] for m in body["messages"] if m["role"] == "user")
        with self._lock:
            index = self.seen[task]
            self.seen[task] += 1
            self.times[task].append(time.monotonic())
            self.bodies[task].append(body)
        script = self.scripts.get(task, self.default or [])
        return script[min(index, len(script) - 1)]


@pytest.fixture
def scripts() -> Scripts:
    return Scripts({})


@pytest.fixture
def server(scripts: Scripts) -> Iterator[ChatServer]:
    with ChatServer(responder=scripts) as chat_server:
        yield chat_server


def agents(server: ChatServer, made: list[AssistantAgent]) -> Any:
    client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=KEY, max_retries=0)

    def make(task: str) -> AssistantAgent:
        agent = AssistantAgent("weather", client, tools=[LOOKUP], reflect_on_tool_use=True)
        made.append(agent)
        return agent

    return make, client


TOOL_THEN_ANSWER = [Reply.call(("lookup", {"city": "Paris"})), Reply.text("Sunny.")]


async def test_a_rate_limit_is_retried_after_the_servers_retry_after(server: ChatServer, scripts: Scripts) -> None:
    limited = Reply.error(429, "slow down", headers={"retry-after": "0.4"})
    scripts.scripts = {"A": [limited, *TOOL_THEN_ANSWER], "B": TOOL_THEN_ANSWER}
    made: list[AssistantAgent] = []
    make, client = agents(server, made)
    batch = await Batch(make, ["A", "B"], concurrency=2, retries=3, progress=None).run()
    results = batch.results
    assert list(results["status"]) == ["ok", "ok"] and list(results["attempts"]) == [2, 1]
    assert list(results["answer"]) == ["Sunny.", "Sunny."]
    first, second = scripts.times["A"][:2]
    assert second - first >= 0.4  # the Retry-After was honoured
    attempts = batch.attempts_df()
    a = attempts[attempts["task_index"] == 0]
    assert list(a["attempt"]) == [1, 2] and list(a["status"]) == ["error", "ok"]
    assert a["error"].iloc[0].startswith("ModelRateLimitError: gpt-4o at http://127.0.0.1:")
    assert a["error"].iloc[0].endswith("HTTP 429: slow down") and a["wait_s"].iloc[1] == pytest.approx(0.4)
    # The retry went on from the failed run: the task is in the request once.
    retried = scripts.bodies["A"][1]["messages"]
    assert [m["role"] for m in retried] == ["system", "user"]
    # Both attempts are runs of the trace, the failed one with its error.
    runs = batch.runs_df()
    assert sorted(runs[runs["task_index"] == 0]["status"].astype(str)) == ["error", "ok"]
    assert contexts_valid(made) == []
    await client.close()


async def test_server_errors_are_retried_with_backoff(server: ChatServer, scripts: Scripts) -> None:
    failing = Reply.error(503, "overloaded")
    scripts.scripts = {"A": [failing, failing, *TOOL_THEN_ANSWER]}
    made: list[AssistantAgent] = []
    make, client = agents(server, made)
    batch = await Batch(make, ["A"], retries=3, backoff=0.1, progress=None).run()
    assert list(batch.results["status"]) == ["ok"] and list(batch.results["attempts"]) == [3]
    times = scripts.times["A"]
    assert times[1] - times[0] >= 0.05 and times[2] - times[1] >= 0.1  # 0.1 then 0.2, with jitter (x0.5..1)
    waits = list(batch.attempts_df()["wait_s"])
    assert waits[0] == 0 and 0.05 <= waits[1] <= 0.1 and 0.1 <= waits[2] <= 0.2
    assert int(batch.results["llm_calls"].iloc[0]) == 4  # two failed calls, then the tool call and the answer
    await client.close()


async def test_retries_given_up_a_wait_past_the_timeout_and_other_errors_are_rows(
    server: ChatServer, scripts: Scripts
) -> None:
    scripts.scripts = {
        "always limited": [Reply.error(429, "slow down")],
        "wait too long": [Reply.error(429, "later", headers={"retry-after": "5"})],
        "bad request": [Reply.error(400, "bad")],
        "fine": TOOL_THEN_ANSWER,
    }
    made: list[AssistantAgent] = []
    make, client = agents(server, made)
    tasks = ["always limited", "wait too long", "bad request", "fine"]
    started = time.monotonic()
    batch = await Batch(make, tasks, retries=2, backoff=0.01, timeout=2, progress=None).run()
    assert time.monotonic() - started < 60  # a hang guard; not waiting is asserted by the errors below
    results = batch.results
    assert list(results["status"]) == ["error", "error", "error", "ok"]
    assert list(results["attempts"]) == [3, 1, 1, 1]
    errors = list(results["error"])
    assert errors[0].startswith("ModelRateLimitError:") and errors[0].endswith("HTTP 429: slow down")
    assert errors[1].endswith("(not retried: the wait of 5.0 s would pass the task's timeout)")
    assert errors[2].startswith("ModelBadRequestError:") and errors[2].endswith("HTTP 400: bad")
    assert scripts.seen["always limited"] == 3 and scripts.seen["bad request"] == 1
    assert contexts_valid(made) == []
    await client.close()


async def test_a_retry_after_pauses_every_task(server: ChatServer, scripts: Scripts) -> None:
    scripts.scripts = {"A": [Reply.error(429, "slow down", headers={"retry-after-ms": "2000"}), *TOOL_THEN_ANSWER]}
    scripts.default = [Reply.call(("lookup", {"city": "x"}), delay=0.05), Reply.text("ok", delay=0.05)]
    made: list[AssistantAgent] = []
    make, client = agents(server, made)
    batch = await Batch(make, ["A", *[f"t{i}" for i in range(6)]], concurrency=2, progress=None).run()
    assert set(batch.results["status"]) == {"ok"}
    limited_at = scripts.times["A"][0]
    firsts = [times[0] for task, times in scripts.times.items() if task != "A"]
    # none started while asked to wait: a request already sent when the 429 came may reach the server late on a
    # loaded machine, so the window starts 0.5 s into the 2 s wait (a margin, not a speed being measured)
    assert [t for t in firsts if limited_at + 0.5 < t < limited_at + 1.9] == []
    assert scripts.times["A"][1] - limited_at >= 2.0
    await client.close()


async def test_many_tasks_over_http_each_with_a_tool_call(server: ChatServer, scripts: Scripts) -> None:
    scripts.default = TOOL_THEN_ANSWER
    made: list[AssistantAgent] = []
    make, client = agents(server, made)
    batch = await Batch(make, [f"task {i}" for i in range(60)], concurrency=16, progress=None).run()
    results = batch.results
    assert set(results["status"]) == {"ok"} and len(results) == 60
    assert results["prompt_tokens"].sum() == 60 * 20 and results["completion_tokens"].sum() == 60 * 10
    assert all(request.status == 200 for request in server.requests) and len(server.requests) == 120
    assert contexts_valid(made) == []
    await client.close()


async def test_retries_are_counted_once_across_the_sdk_and_the_batch(server: ChatServer, scripts: Scripts) -> None:
    """A client left with the SDK's retries (max_retries=2) in a Batch of retries=3, against a server
    that always answers 429: 4 requests (the batch's tries), not 3 x 4 = 12."""
    scripts.scripts = {"always": [Reply.error(429, "slow down")]}
    client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=KEY, max_retries=2)
    batch = Batch(AssistantAgent("w", client), ["always"], retries=3, backoff=0.01, progress=None)
    await batch.run()
    assert scripts.seen["always"] == 4 and list(batch.results["status"]) == ["error"]
    # Outside a batch the SDK's retries are the client's (2 here): 3 requests.
    scripts.seen.clear()
    with pytest.raises(ModelRateLimitError):
        await AssistantAgent("w", client).run(task="always")
    assert scripts.seen["always"] == 3


async def test_retry_after_is_capped_by_max_backoff_and_by_the_tasks_timeout(
    server: ChatServer, scripts: Scripts
) -> None:
    """Retry-After: 3600 with max_backoff=0.2 waits 0.2 s (not the hour, and not every task of the batch
    for an hour); with a timeout shorter than the wait, the task is not retried."""
    scripts.scripts = {"hour": [Reply.error(429, "later", headers={"retry-after": "3600"}), Reply.text("done")]}
    made: list[AssistantAgent] = []
    make, _ = agents(server, made)
    batch = Batch(make, ["hour"], retries=2, max_backoff=0.2, progress=None)
    await asyncio.wait_for(batch.run(), 60)
    assert list(batch.results["status"]) == ["ok"]
    assert batch.attempts_df()["wait_s"].tolist() == [0.0, 0.2]
    scripts.seen.clear()
    scripts.scripts = {"short": [Reply.error(429, "later", headers={"retry-after": "3600"}), Reply.text("done")]}
    batch = Batch(make, ["short"], retries=2, max_backoff=120, timeout=5, progress=None)
    await asyncio.wait_for(batch.run(), 60)
    assert list(batch.results["status"]) == ["error"] and "would pass the task's timeout" in batch.results["error"][0]
    assert scripts.seen["short"] == 1


async def _settled(server: ChatServer, at_most: int) -> int:
    """The server's open connections once they settle at ``at_most`` or under (a closed connection's end
    reaches the server's thread a moment later; on a loaded machine, seconds), or after the 60 s hang guard."""
    with contextlib.suppress(AssertionError):  # the caller's assertion says how many were left
        await eventually(lambda: server.connections <= at_most, f"the server's connections to settle at {at_most}")
    return server.connections


@pytest.mark.parametrize("shared", [False, True])
async def test_connections_stay_bounded_by_the_concurrency(server: ChatServer, scripts: Scripts, shared: bool) -> None:
    import gc

    scripts.default = [Reply.text("sunny").with_(delay=0.02)]
    concurrency, clients = 8, []
    one = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=KEY, max_retries=0)

    def make(task: str) -> AssistantAgent:
        client = one if shared else OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=KEY)
        clients.append(client)
        return AssistantAgent("weather", client)

    gc.disable()  # the connections are closed when each task ends, not when its client is collected
    try:
        batch = await Batch(make, [f"city {i}" for i in range(40)], concurrency=concurrency).run()
        assert batch.results["status"].tolist() == ["ok"] * 40
        assert server.peak_connections <= concurrency, server.peak_report()
        left = await _settled(server, concurrency if shared else 0)
    finally:
        gc.enable()
    if shared:  # the shared client is its owner's: open, and it keeps serving
        assert 1 <= left <= concurrency
        assert (await AssistantAgent("again", one).run(task="city 0")).messages[-1].to_text() == "sunny"
        await one.close()
    else:  # each task's own client closed at the task's end
        assert left == 0 and len(clients) == 40


async def test_the_servers_peak_counts_the_connections_open_at_once() -> None:
    """The measure the bound above reads: ten clients left open count 10, ten that each close before the
    next one connects count 1 (whether or not the server's loop has read their closes yet)."""
    import openai

    for close_each, expected in ((False, 10), (True, 1)):
        with ChatServer() as server:
            server.script(*[Reply.text("sunny")] * 10)
            kept = []
            for _ in range(10):
                client = openai.AsyncOpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
                await client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
                if close_each:
                    await client.close()
                else:
                    kept.append(client)
            assert server.peak_connections == expected, close_each
            assert server.peak_report().endswith("not accepted by this server then: []"), server.peak_report()
            if not close_each:  # the ten kept clients' sockets, read from /proc/net/tcp, are the peak's
                assert server.peak_ports == server.established(), server.peak_report()
            for client in kept:
                await client.close()


async def test_a_client_closed_by_a_batch_and_used_again_reopens(server: ChatServer, scripts: Scripts) -> None:
    scripts.default = [Reply.text("sunny")]
    client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=KEY)
    batch = await Batch(lambda task: AssistantAgent("weather", client), ["city 0"], concurrency=1).run()
    assert batch.results["status"].tolist() == ["ok"]
    assert await _settled(server, 0) == 0  # seen in one task only: closed at its end
    again = await Batch(lambda task: AssistantAgent("weather", client), ["city 1", "city 2"], concurrency=1).run()
    assert again.results["status"].tolist() == ["ok", "ok"]
    await client.close()


@pytest.mark.parametrize("concurrency", [1, 4])
async def test_a_shared_autogen_client_is_never_closed_by_a_batch(
    server: ChatServer, scripts: Scripts, concurrency: int
) -> None:
    """Each task's agent wraps the shared AutoGen client anew, and with concurrency=1 its first task ends
    before the second begins: use alone cannot tell it from a task's own, and AutoGen's close is for good.
    Before, the batch closed it at its first task's end: the other tasks failed ('the client has been
    closed'), and so did the user's next call."""
    from autogen_ext.models.openai import OpenAIChatCompletionClient as AutoGenClient

    scripts.default = [Reply.text("sunny")]
    shared = AutoGenClient(model="gpt-4o-2024-08-06", base_url=server.base_url, api_key=KEY, max_retries=0)
    batch = await Batch(lambda task: AssistantAgent("weather", shared), ["a", "b", "c"], concurrency=concurrency).run()
    assert batch.results["status"].tolist() == ["ok"] * 3, batch.results["error"].tolist()
    assert (await AssistantAgent("again", shared).run(task="d")).messages[-1].to_text() == "sunny"
    await shared.close()
