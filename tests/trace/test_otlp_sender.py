"""OTLPRecorder sends from a background thread: runs end while the collector never answers, trickles,
refuses or answers 503; every send has a total deadline; what is not sent is kept and tried again
until the queue is full, then counted and reported; memory stays bounded while runs overlap; every
error names the endpoint (trace.to_otlp's too). The loop's lag by collector: bench/bench_otlp.py."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

import nbagent.trace.sender
from nbagent import AssistantAgent, ReplayChatCompletionClient
from nbagent.trace import OTLPRecorder
from nbagent.trace.otlp import OTLPSendError

from ..waits import sent_all
from .collectors import Behaviour, Collector
from .helpers import sources_taking_freed_ids, tool_agent


@pytest.fixture
def collector(request: pytest.FixtureRequest) -> Iterator[Collector]:
    behaviour, status = request.param if isinstance(request.param, tuple) else (request.param, 200)
    made = Collector(behaviour, status, every=0.2)
    yield made
    made.close()


async def errors(recorder: OTLPRecorder, count: int) -> None:
    """Wait until ``recorder`` has reported ``count`` errors (bounded: a minute)."""
    async with asyncio.timeout(60):
        while len(recorder.errors) < count:
            await asyncio.sleep(0.05)


def chatty(name: str, runs: int, latency: float = 0.0) -> AssistantAgent:
    return AssistantAgent(name, ReplayChatCompletionClient([f"answer {i}" for i in range(runs)], latency=latency))


@pytest.mark.parametrize("collector", ["silent", "trickle"], indirect=True)
async def test_runs_end_at_once_while_the_collector_never_answers(collector: Collector) -> None:
    agent = chatty("a", 3)
    recorder = OTLPRecorder(collector.endpoint, timeout=1).attach(agent)
    for i in range(3):
        await agent.run(task=f"task {i}")
    assert recorder.pending_runs == 3  # the runs did not wait for their sends: none could be sent
    await errors(recorder, 1)
    assert (
        recorder.pending_runs == 3 and recorder.errors and all(collector.endpoint in error for error in recorder.errors)
    )
    assert "did not answer within 1 s" in recorder.errors[0] and "kept" in recorder.errors[0]
    assert not recorder.close(0.1)
    assert recorder.dropped_runs == 3 and "closed with 3 run(s) unsent" in recorder.errors[-1]


@pytest.mark.parametrize("collector", ["refuse", ("status", 503)], indirect=True)
async def test_a_run_not_sent_is_kept_and_tried_again(collector: Collector) -> None:
    agent = chatty("a", 1)
    recorder = OTLPRecorder(collector.endpoint, timeout=0.6).attach(agent)
    await agent.run(task="task")
    await errors(recorder, 2)
    expected = "refused the connection" if collector.behaviour == "refuse" else "answered 503"
    assert all(collector.endpoint in error and expected in error for error in recorder.errors)
    assert recorder.pending_runs == 1 and recorder.dropped_runs == 0 and recorder.sent == 0
    if collector.behaviour == "status":
        assert collector.requests >= 3  # retried with backoff within a send, and again after
        collector.status = 200
        await asyncio.to_thread(sent_all, recorder)
        assert recorder.sent == 2 and recorder.pending_runs == 0  # the run's span and its model call
    recorder.close(0.1)


@pytest.mark.parametrize("collector", ["silent"], indirect=True)
async def test_a_full_queue_drops_the_oldest_and_says_so(collector: Collector, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nbagent.trace.sender, "RUNS_PER_SEND", 1)  # each run a send of its own
    agent = chatty("a", 5)
    recorder = OTLPRecorder(collector.endpoint, timeout=30, max_queue=2).attach(agent)
    for i in range(5):
        await agent.run(task=f"task {i}")
    assert recorder.dropped_runs == 3 and recorder.pending_runs == 2  # the one being sent and the last
    assert sum("queue full (2): 1 run(s) dropped unsent" in error for error in recorder.errors) == 3
    recorder.close(0.1)


@pytest.mark.parametrize("collector", ["status"], indirect=True)
async def test_overlapping_runs_are_sent_in_bounded_groups(
    collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(nbagent.trace.sender, "RUNS_PER_SEND", 5)
    agents = [chatty(f"a{i}", 40, latency=0.002 * (i + 1)) for i in range(3)]
    recorder = OTLPRecorder(collector.endpoint)
    for agent in agents:
        recorder.attach(agent)
    most = 0

    async def runs(agent: AssistantAgent) -> None:
        nonlocal most
        for i in range(40):
            await agent.run(task=f"task {i}")
            most = max(most, len(recorder.trace.store.rows))

    await asyncio.gather(*(runs(agent) for agent in agents))  # three agents' runs overlap all along
    assert await asyncio.to_thread(recorder.flush, 120)
    assert recorder.sent == 2 * 120 and recorder.dropped_runs == 0 and recorder.errors == []
    assert most <= (5 + 3) * 8  # a generation holds at most RUNS_PER_SEND ended runs and those going
    assert 120 // 8 <= collector.requests < 120  # runs that end while a send is going go together


async def test_to_otlp_names_the_endpoint_when_refused_or_silent() -> None:
    agent = tool_agent("calc", "hi")
    await agent.run(task="go")
    trace = agent.trace
    for behaviour, expected in (("refuse", "refused the connection"), ("silent", "did not answer within 0.5 s"),
                                ("trickle", "did not answer within 0.5 s")):  # fmt: skip
        collector = Collector(behaviour, every=0.1)  # type: ignore[arg-type]
        start = time.monotonic()
        with pytest.raises(OTLPSendError, match=f"OTLP endpoint {collector.endpoint} {expected}"):
            await asyncio.to_thread(trace.to_otlp, collector.endpoint, timeout=0.5)
        assert time.monotonic() - start < 60  # a hang guard: a trickle used to hold it for ever
        collector.close()


def test_behaviours_are_what_the_bench_measures() -> None:
    assert set(Behaviour.__args__) == {"silent", "trickle", "refuse", "status"}  # type: ignore[attr-defined]


def test_a_new_source_with_a_collected_sources_id_is_attached() -> None:
    """The recorder keys its sources by ``id()``: a new source that gets a collected one's id is attached
    (it was taken for attached already, and never sent)."""
    sender = OTLPRecorder("http://127.0.0.1:9/v1/traces", timeout=1)
    reused = 0
    try:
        for new in sources_taking_freed_ids(sender.attach):
            reused += 1
            sender.attach(new)
            assert len(new.recorders) == 1
            sender.detach(new)
            assert new.recorders == []
    finally:
        sender.close(timeout=1)
    assert reused
