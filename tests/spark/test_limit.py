"""nbagent.spark.limit without Spark: the driver's JobLimit grants request slots at its rate and at most
so many at once, in arrival order, to LimitClients over TCP on 127.0.0.1; an unreachable limit is a clear
error within its deadline; a client that dies gives its slot back."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from nbagent.spark.limit import JobLimit, LimitAddress, LimitClient, LimitUnreachable

from ..ports import refusing_port
from ..waits import within


@pytest.fixture
def limits() -> Iterator[list[JobLimit]]:
    made: list[JobLimit] = []
    yield made
    for limit in made:
        limit.close()


def start(limits: list[JobLimit], rate: float | None, in_flight: int | None) -> JobLimit:
    limit = JobLimit(rate, in_flight)
    limits.append(limit)
    return limit


async def test_at_most_max_in_flight_slots_at_once_and_a_slot_given_back_grants_the_next(
    limits: list[JobLimit],
) -> None:
    limit = start(limits, None, 2)
    clients = [LimitClient(limit.address) for _ in range(5)]
    held = [await clients[0].acquire(), await clients[1].acquire()]
    third = asyncio.ensure_future(clients[2].acquire())
    await asyncio.sleep(0.3)
    assert not third.done() and limit.granted == 2
    held.pop()()  # given back: the waiting one goes
    held.append(await asyncio.wait_for(third, 30))
    assert limit.granted == 3
    for release in held:
        release()


async def test_requests_are_granted_at_most_at_the_rate(limits: list[JobLimit]) -> None:
    limit = start(limits, 20.0, None)
    client = LimitClient(limit.address)
    times = []

    async def one() -> None:
        release = await client.acquire()
        times.append(time.monotonic())
        release()

    asked = time.monotonic()
    await within(asyncio.gather(*(one() for _ in range(10))), "10 slots at 20 a second")
    # The k-th grant comes k/20 s after the first at the earliest, and the first after the asking. A loaded
    # machine may deliver grants late, and two together (the gaps between arrivals then say nothing), never
    # early: so each arrival is at least k/20 s after the asking.
    early = [(k, round(at - asked, 3)) for k, at in enumerate(sorted(times)) if at - asked < k * 0.05]
    assert limit.granted == 10 and early == [], f"(k, seconds after asking) earlier than k/20 s: {early}"


async def test_a_client_that_goes_away_while_it_waits_or_holds_gives_its_slot_back(limits: list[JobLimit]) -> None:
    limit = start(limits, None, 1)
    client = LimitClient(limit.address)
    release = await client.acquire()
    waiting = asyncio.ensure_future(client.acquire())
    await asyncio.sleep(0.2)
    waiting.cancel()  # a task's timeout while it waits: its connection closes, its turn is dropped
    with pytest.raises(asyncio.CancelledError):
        await waiting
    release()  # the holder ends (a dead executor's socket closes the same way)
    again = await asyncio.wait_for(client.acquire(), 30)  # neither the holder nor the gone waiter keeps a slot
    again()
    # (the gone waiter's turn may be granted before the server reads its close: the slot comes back then)
    assert limit.granted in (2, 3)


async def test_an_unreachable_limit_is_a_clear_error_within_its_deadline() -> None:
    with refusing_port() as port:
        client = LimitClient(LimitAddress("127.0.0.1", port, "secret", connect_timeout=2))
        with pytest.raises(LimitUnreachable, match=rf"request limit on the driver \(127.0.0.1:{port}\) did not answer"):
            await asyncio.wait_for(client.check(), 30)
        with pytest.raises(LimitUnreachable, match=r"the driver has ended, or this executor cannot reach"):
            await asyncio.wait_for(client.acquire(), 30)


async def test_a_stranger_without_the_job_s_secret_gets_no_slot(limits: list[JobLimit]) -> None:
    limit = start(limits, None, 1)
    address = limit.address
    stranger = LimitClient(LimitAddress(address.host, address.port, "not-the-secret", connect_timeout=5))
    with pytest.raises(LimitUnreachable, match=r"refused this executor"):
        await asyncio.wait_for(stranger.check(), 30)
    with pytest.raises(LimitUnreachable, match=r"closed the connection before granting a slot"):
        await asyncio.wait_for(stranger.acquire(), 30)
    assert limit.granted == 0
    await LimitClient(address).check()


async def test_the_loop_takes_a_slot_for_each_model_call_and_gives_it_back_however_the_call_ends() -> None:
    """REQUEST_LIMIT set in a context: each model request of the runs in it waits for a slot and gives it
    back when it ends (answered, failed); none set: nothing is asked."""
    from nbagent import AssistantAgent, ReplayChatCompletionClient
    from nbagent.models.limit import REQUEST_LIMIT
    from tests.batch.helpers import LOOKUP, tool_script

    events: list[str] = []

    class Counting:
        async def acquire(self) -> Callable[[], None]:
            events.append("acquire")
            return lambda: events.append("release")

    async def run(script: list[Any]) -> None:
        agent = AssistantAgent("weather", ReplayChatCompletionClient(script), tools=[LOOKUP], reflect_on_tool_use=True)
        await agent.run(task="city 1")

    await run(tool_script("city 1"))
    assert events == []
    token = REQUEST_LIMIT.set(Counting())
    try:
        await run(tool_script("city 1"))
        assert events == ["acquire", "release"] * 2  # the tool call, then the reflection
        events.clear()
        with pytest.raises(Exception, match="no answer left"):
            await run([])  # the model call fails: its slot is given back all the same
        assert events == ["acquire", "release"]
    finally:
        REQUEST_LIMIT.reset(token)
