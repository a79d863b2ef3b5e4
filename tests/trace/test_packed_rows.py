"""A finished run's rows packed into columns (issue 42.5, ``trace/packed.py``): every row reads back equal
to the one recorded (the same type), every frame is the same before and after packing, a run in
progress is never packed, and forgetting rows (``clear()``, ``max_runs``) keeps the packed ones right."""

from __future__ import annotations

import asyncio
import sys
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest

from nbagent import (
    AssistantAgent,
    CreateResult,
    ReplayChatCompletionClient,
    Trace,
)
from nbagent.messages import Response, TextMessage, text_result, usage
from nbagent.models import ReplayExhaustedError
from nbagent.records import Intervention, LLMCall, RunFinished, RunStarted
from nbagent.trace import packed as packed_module
from nbagent.trace import store as store_module
from nbagent.trace.packed import (
    CODES,
    EMPTY_LISTS,
    MIXED,
    NESTED,
    NUMBERS,
    OBJECTS,
    SAME,
    SINGLES,
    TIMES,
    Block,
    RunIds,
    Table,
    encode,
    grow,
)
from nbagent.trace.store import RowStore

from ..frames import assert_frame_equal
from .helpers import add, calls, fail, text

MESSAGE = TextMessage(content="hi", source="a")
FRAMES = ("runs_df", "events_df", "llm_calls_df", "tool_calls_df", "context_df")


class ItemList:
    """A recorder keeping every item it is given, as given."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.record = self.items.append


@pytest.fixture
def pack_by_hand(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No packing at runs' ends: the test packs (``store.pack()``)."""
    monkeypatch.setattr(store_module, "PACK_RUNS", 10**9)
    yield


async def mixed_runs(trace: Trace, given: ItemList) -> list[AssistantAgent]:
    """Plain runs, tool runs (a failing tool, a reflection, a thought), streamed runs (chunks whose ids are
    drawn when read), a handoff and a model failure, recorded into ``trace`` (and into ``given``). The agents
    are returned for the caller to keep: ``Trace.attach`` knows a source by its ``id()``, which a new agent
    may get once an attached one is collected."""
    plain = AssistantAgent("plain", ReplayChatCompletionClient([f"answer {i}" for i in range(3)]))
    tools = AssistantAgent(
        "tools",
        ReplayChatCompletionClient(
            [
                calls(("c1", "add", '{"a": 1, "b": 2}'), ("c2", "fail", '{"reason": "no"}')),
                text("3 and no", thought="hm"),
            ]
        ),
        tools=[add, fail],
        reflect_on_tool_use=True,
    )
    streamed = AssistantAgent("streamer", ReplayChatCompletionClient(["a b c", "d e f"]), model_client_stream=True)
    handing = AssistantAgent(
        "handing", ReplayChatCompletionClient([calls(("h1", "transfer_to_plain", "{}"))]), handoffs=["plain"]
    )
    agents = [plain, tools, streamed, handing]
    for agent in agents:
        trace.attach(agent)
        agent.recorders.append(given)
    for i in range(2):
        await plain.run(task=f"plain {i}")
    await tools.run(task="add and fail")
    await streamed.run(task="stream")
    async for _ in streamed.run_stream(task="stream again"):
        pass
    await handing.run(task="hand over")
    with pytest.raises(ReplayExhaustedError):
        await handing.run(task="again")  # a model failure: the run ends with an error
    trace.record(Intervention(trace.last_run(), 1, "answer", "an edit"))  # an intervention row
    return agents


def frames(trace: Trace) -> dict[str, pd.DataFrame]:
    out = {name: getattr(trace, name)() for name in FRAMES}
    out.update(trace.context_tables())
    return out


def assert_same_rows(found: list[Any], expected: list[Any]) -> None:
    assert len(found) == len(expected)
    for index, (row, want) in enumerate(zip(found, expected)):
        assert type(row) is type(want), index
        assert row == want, index


async def test_packed_rows_read_back_equal_with_every_frame(pack_by_hand: None) -> None:
    trace, given = Trace(), ItemList()
    await mixed_runs(trace, given)
    before = frames(trace)
    items = trace.items
    rows = list(trace.store.rows)  # every chunk's id drawn by the reads above
    kinds = {type(row).__name__ if type(row) is not tuple else len(row) for row in rows}
    assert kinds >= {"RunStarted", "LLMCall", "ToolExecution", "RunFinished", "Intervention", 3, 4, 5}
    trace.store.pack()
    packed = trace.store.rows
    assert packed.packed == len(rows) and not packed.tail  # every run ended: every row packed
    assert_same_rows(list(packed), rows)
    assert_same_rows([packed[index] for index in range(len(rows))], rows)  # one by one (bisect, count)
    assert_same_rows([packed[index - len(rows)] for index in range(len(rows))], rows)
    assert_same_rows(packed[5:17], rows[5:17])
    assert_same_rows(list(packed.iter_from(9)), rows[9:])
    assert_same_rows(list(reversed(packed)), rows[::-1])
    for start in (0, 3, len(rows) - 1, len(rows)):  # a row's run read from its column alone
        assert list(packed.runs_from(start)) == [store_module.run_of(row) for row in rows[start:]]
        for kind in (RunStarted, LLMCall, Intervention):
            expected = [(at, row) for at, row in enumerate(rows) if at >= start and type(row) is kind]
            assert list(packed.records_from(start, kind)) == expected
    assert packed == rows
    assert trace.items == items
    after = frames(trace)
    for name, frame in before.items():
        assert_frame_equal(after[name], frame, obj=name)
    for run in trace.runs_df()["run_id"]:  # one run read alone: its rows found by the index, not a scan
        assert trace.store.rows_of(run) == [at for at, row in enumerate(rows) if store_module.run_of(row) == run]
    last = trace.last_run()
    alone = trace.run(last).events_df().reset_index(drop=True).astype(object)
    expected = before["events_df"].query("run_id == @last").reset_index(drop=True).astype(object)
    assert_frame_equal(alone, expected)


async def kept_runs(count: int) -> tuple[Trace, AssistantAgent]:
    """A trace of ``count`` plain runs of one agent (returned too: kept alive), every run kept."""
    trace = Trace()
    agent = AssistantAgent("a", ReplayChatCompletionClient([f"answer {i}" for i in range(count)]))
    trace.attach(agent)
    for i in range(count):
        await agent.run(task=f"task {i}")
    return trace, agent


class PackAtEnds(ItemList):
    """A recorder (after the trace's) packing the trace's finished runs at every run's end, checking that
    the rows packed before read back as they were recorded."""

    def __init__(self, trace: Trace) -> None:
        super().__init__()
        self.trace = trace
        self.seen: list[Any] = []
        self.record = self.keep  # type: ignore[method-assign]

    def keep(self, item: Any) -> None:
        self.items.append(item)
        if isinstance(item, RunFinished):
            store = self.trace.store
            store.name_chunks()
            rows = list(store.rows)
            assert_same_rows(rows[: len(self.seen)], self.seen)
            self.seen = rows
            store.pack()


async def test_runs_appended_run_by_run_to_the_open_block_read_back_equal(pack_by_hand: None) -> None:
    """Every run's rows appended to one open block as it ends (new row kinds, columns made again when a
    value does not fit their kind: a failed call's error, a tool run's answer): every row and frame is
    as recorded."""
    trace = Trace()
    given = PackAtEnds(trace)
    await mixed_runs(trace, given)
    rows = trace.store.rows
    blocks = rows.blocks
    assert len(blocks) == 1 and blocks[0].open and rows.packed == len(given.seen)
    trace.store.pack()  # the intervention row, recorded after the last run's end
    assert rows.packed == len(rows) and not rows.tail
    packed = list(rows)
    assert_same_rows(packed[: len(given.seen)], given.seen)
    assert_same_rows([rows[index] for index in range(len(packed))], packed)
    assert [item for item in trace.items if isinstance(item, LLMCall)] == [
        item for item in given.items if isinstance(item, LLMCall)
    ]
    after = frames(trace)
    rows[:] = packed  # every row unpacked again, into the tail
    for name, frame in frames(trace).items():
        assert_frame_equal(after[name], frame, obj=name)
    blocks[0].close()
    assert not blocks[0].open and blocks[0].rows() == packed
    with pytest.raises(AssertionError, match="closed"):
        blocks[0].add(packed[:1])


async def test_a_run_left_open_stops_packing_until_it_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs ending after a run in progress started are not packed (nothing after its start can be) and
    not tried again at each end; once it ends, they are."""
    monkeypatch.setattr(store_module, "PACK_RUNS", 2)
    monkeypatch.setattr(store_module, "SETTLE_FROM", 1)  # snapshot rows settled (their runs' ids added) first
    trace = Trace()
    slow = AssistantAgent("slow", ReplayChatCompletionClient(["done"]))
    quick = AssistantAgent("quick", ReplayChatCompletionClient([f"answer {i}" for i in range(7)]))
    trace.attach(slow)
    trace.attach(quick)
    for i in range(2):
        await quick.run(task=f"before {i}")
    before = trace.store.rows.packed
    assert before == len(trace.store.rows) > 0
    stream = slow.run_stream(task="left open")
    for _ in range(2):
        await anext(stream)
    for i in range(5):
        await quick.run(task=f"beside {i}")
    assert trace.store.rows.packed == before and trace.store.in_progress() == {trace.runs_df()["run_id"].iloc[2]}
    async for _ in stream:
        pass
    rows, snapshots = trace.store.rows, trace.store.snapshots
    assert rows.packed == len(rows) and not trace.store.in_progress()
    whole = [store_module.run_of(row) for row in rows]  # a block read whole, by column, a row at a time
    assert whole == list(rows.runs_from(0)) == [store_module.run_of(rows[at]) for at in range(len(rows))]
    assert set(whole) == set(trace.runs_df()["run_id"])  # no run read as another or as None
    assert {run for *_, run, _ in snapshots} - {None} <= set(whole)
    assert list(trace.runs_df()["task"]) == [
        "before 0", "before 1", "left open", *(f"beside {i}" for i in range(5))
    ]  # fmt: skip


async def test_a_packed_run_s_rows_and_snapshots_share_its_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """The packed rows and the snapshot rows of a store keep each run's id once between them."""
    monkeypatch.setattr(store_module, "PACK_RUNS", 4)
    trace, _ = await kept_runs(12)
    store = trace.store
    assert store.rows.packed == len(store.rows) and store.snapshots.run_ids is store.rows.run_ids
    runs = set(trace.runs_df()["run_id"])
    assert {run for *_, run, _ in store.snapshots} - {None} == runs
    assert len(store.rows.run_ids) == len(runs) + 1  # and None: the first snapshot, taken before any run


async def test_blocks_read_whole_make_their_own_run_ids_texts_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A block read whole (its rows, its records) makes the text of its own runs' ids once each, not of
    every id the store keeps (the blocks share one list of them)."""
    monkeypatch.setattr(store_module, "PACK_RUNS", 2)
    monkeypatch.setattr(packed_module, "BLOCK_ROWS", 40)  # a block closed every 5 plain runs or so
    trace, _ = await kept_runs(40)
    rows = trace.store.rows
    expected = list(rows)
    assert len(rows.blocks) >= 6 and rows.packed == len(rows)
    made = []
    texts = packed_module.uuid_text

    def counted(raw: bytes) -> str:
        made.append(raw)
        return texts(raw)

    monkeypatch.setattr(packed_module, "uuid_text", counted)
    assert_same_rows(list(rows), expected)
    assert len(made) <= 40 + 2 * len(rows.blocks)  # (a run's snapshots settled apart: one id more a block)
    made.clear()
    assert [row for _, row in rows.records_from(0, RunStarted)] == [row for row in expected if type(row) is RunStarted]
    assert len(made) <= 40 + 2 * len(rows.blocks)


async def test_two_threads_read_two_blocks_of_one_store_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The blocks share their store's run ids, each block read whole listing its own: while another thread
    is reading one block (an export in a worker thread), a read of another block in this thread reads its
    own runs' ids (the listing was the store's, shared by threads: this read got the other's list, its run
    ids None or an IndexError)."""
    monkeypatch.setattr(store_module, "PACK_RUNS", 2)
    monkeypatch.setattr(packed_module, "BLOCK_ROWS", 40)
    trace, _ = await kept_runs(12)
    rows = trace.store.rows
    first, last = rows.blocks[0], rows.blocks[-1]
    assert first is not last and rows.packed == len(rows)
    expected = list(rows)
    listed, done = threading.Event(), threading.Event()

    def reads_the_last_block() -> None:  # held in the middle of a whole read of the last block
        last.runs.listing(True, last.first_run, last.end_run)
        listed.set()
        done.wait(60)
        last.runs.listing(False)

    reader = threading.Thread(target=reads_the_last_block)
    reader.start()
    try:
        assert listed.wait(60)
        assert_same_rows(first.rows(), expected[: first.count])
        assert [row for _, row in first.records(RunStarted)] == [
            r for r in expected[: first.count] if type(r) is RunStarted
        ]
    finally:
        done.set()
        reader.join(60)


async def test_the_last_run_of_a_packed_trace_is_found_without_rebuilding_its_blocks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``last_run()`` right after a pack (the tail empty) reads the blocks' ``RunStarted`` records alone."""
    monkeypatch.setattr(store_module, "PACK_RUNS", 2)
    monkeypatch.setattr(packed_module, "BLOCK_ROWS", 40)
    trace, _ = await kept_runs(12)
    rows = trace.store.rows
    assert rows.packed == len(rows) and not rows.tail
    expected = [row for row in rows if type(row) is RunStarted][-1].run_id

    def no_rebuild(self: Block) -> list[Any]:
        raise AssertionError("a block rebuilt whole")

    monkeypatch.setattr(Block, "rows", no_rebuild)
    assert trace.last_run() == expected


@pytest.mark.parametrize("name", ["events_df", "llm_calls_df", "tool_calls_df", "runs_df", "span_tables", "items"])
async def test_a_whole_trace_read_rebuilds_each_block_once(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """A frame (or the span tables, or the items) of a packed trace passes over its rows several times:
    the packed rows are rebuilt once, not at each pass."""
    monkeypatch.setattr(store_module, "PACK_RUNS", 2)
    monkeypatch.setattr(packed_module, "BLOCK_ROWS", 40)
    trace, _ = await kept_runs(12)
    blocks = trace.store.rows.blocks
    assert len(blocks) >= 2 and trace.store.rows.packed == len(trace.store.rows)
    expected = getattr(trace, name)
    expected = expected() if callable(expected) else expected
    rebuilt = []
    rows = Block.rows

    def counted(self: Block) -> list[Any]:
        rebuilt.append(self)
        return rows(self)

    monkeypatch.setattr(Block, "rows", counted)
    found = getattr(trace, name)
    found = found() if callable(found) else found
    assert sorted(map(id, rebuilt)) == sorted(map(id, blocks))  # each block once
    if isinstance(found, pd.DataFrame):
        assert_frame_equal(found, expected)
    else:
        assert repr(found) == repr(expected) or found == expected


async def test_new_runs_after_a_packed_block_and_a_second_block(pack_by_hand: None) -> None:
    trace, given = Trace(), ItemList()
    agents = await mixed_runs(trace, given)
    trace.store.pack()
    agent = AssistantAgent("later", ReplayChatCompletionClient(["x", "y"]))
    assert all(map(id, agents)) and id(agent) not in set(map(id, agents))  # alive: a new id
    trace.attach(agent)
    agent.recorders.append(given)
    await agent.run(task="after the block")
    rows = list(trace.store.rows)
    trace.store.pack()
    await agent.run(task="in the tail")
    assert trace.store.rows.packed == len(rows) and len(trace.store.rows.tail) > 0
    assert_same_rows(list(trace.store.rows)[: len(rows)], rows)
    items, before = trace.items, frames(trace)
    trace.store.pack()
    assert trace.items == items
    for name, frame in frames(trace).items():
        assert_frame_equal(frame, before[name], obj=name)
    assert list(trace.runs_df()["status"]).count("ok") == len(trace.runs_df()) - 1


async def test_a_run_in_progress_is_never_packed_and_survives_clear(pack_by_hand: None) -> None:
    trace = Trace()
    agent = AssistantAgent("a", ReplayChatCompletionClient(["one", "two", "three"]))
    trace.attach(agent)
    await agent.run(task="first")
    done = len(trace.store.rows)
    stream = agent.run_stream(task="second")
    for _ in range(2):
        await anext(stream)  # the second run started: its rows stay in the tail
    trace.store.pack()
    assert trace.store.rows.packed == done
    assert trace.store.in_progress() == {trace.last_run()}
    trace.clear()  # the finished run goes (packed), the run in progress is kept whole
    assert trace.store.rows.packed == 0
    async for _ in stream:
        pass
    runs = trace.runs_df()
    assert list(runs["task"]) == ["second"] and list(runs["status"]) == ["ok"]
    trace.store.pack()
    with pytest.raises(IndexError, match="packed"):
        trace.store.rows[0] = trace.store.rows[0]
    with pytest.raises(IndexError):
        trace.store.rows[1:] = []


async def test_max_runs_drops_packed_runs_and_packs_what_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "PACK_RUNS", 2)  # runs' ends pack the finished runs' rows
    trace, given = Trace(max_runs=4), ItemList()
    agent = AssistantAgent("a", ReplayChatCompletionClient([f"answer {i}" for i in range(13)]))
    trace.attach(agent)
    agent.recorders.append(given)
    for i in range(13):
        await agent.run(task=f"task {i}")
    store = trace.store
    assert store.rows.packed > 0
    runs = list(trace.runs_df()["task"])
    assert runs == [f"task {i}" for i in range(13 - len(runs), 13)] and 4 <= len(runs) <= 5
    kept = {run for run in trace.runs_df()["run_id"]}
    records = [item for item in trace.items if hasattr(item, "run_id")]
    assert records == [item for item in given.items if getattr(item, "run_id", None) in kept]
    context = trace.context_df()
    assert list(context["text"])[-2:] == ["task 12", "answer 12"]


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        ([None, None], SAME),
        ([1.5, float("nan"), -0.0], NUMBERS),
        (
            [
                pd.Timestamp("2026-01-01", tz="UTC").to_pydatetime(),
                pd.Timestamp("2026-01-02 00:00:00.000001", tz="UTC").to_pydatetime(),
            ],
            TIMES,
        ),
        ([[], []], EMPTY_LISTS),
        (["a", "b", "a", None, 3], CODES),
        ([True, 1], OBJECTS),  # a bool and an int are equal keys: kept as they are
        ([[1], []], OBJECTS),
        ([1.0, 1], OBJECTS),
        ([[1], ["a"]], SINGLES),
        (list(range(1000)), NUMBERS),  # many integers: an array of them
        ([Response(chat_message=MESSAGE), Response(chat_message=MESSAGE, inner_messages=[MESSAGE])], NESTED),
        ([text_result("a", usage(1, 2)), text_result("b", usage(3, 4))], NESTED),
        ([Response(chat_message=MESSAGE), MESSAGE, None], MIXED),
        ([CreateResult(finish_reason="stop", content="a", usage=usage(1, 2)), text_result("b", usage(3, 4))], OBJECTS),
    ],
)
def test_each_column_gives_back_its_values_exactly(values: list[Any], kind: int) -> None:
    table = Table()
    column = encode(values, table)
    assert column.kind == kind
    for found in ([column.get(index) for index in range(len(values))], list(column.values(len(values)))):
        assert [type(value) for value in found] == [type(value) for value in values]
        assert repr(found) == repr(values)  # nan and -0.0 too
        assert found == values or kind == NUMBERS  # (nan != nan)
        for value, was in zip(found, values):
            if kind in (EMPTY_LISTS, SINGLES, NESTED):
                assert value is not was  # a new one: changing it changes no other row


MESSAGE_RESPONSE = Response(chat_message=MESSAGE)


@pytest.mark.parametrize(
    ("first", "then", "kind"),
    [
        ([None, None], [None], SAME),
        ([None, None], ["x", None], CODES),
        (["a", "b", "a"], [1, None, "c"], CODES),
        ([1.5, 2.5], [3.5, -0.0], NUMBERS),
        ([1.5, 2.5], [None], OBJECTS),
        (list(range(20)), [2**40, -3], NUMBERS),
        (list(range(20)), [None, 2**70], CODES),
        (
            [pd.Timestamp("2026-01-01", tz="UTC").to_pydatetime()] * 2,
            [pd.Timestamp("2026-01-02 00:00:00.000001", tz="UTC").to_pydatetime()],
            TIMES,
        ),
        ([[], []], [[]], EMPTY_LISTS),
        ([[], []], [[1]], OBJECTS),
        ([[1], [2]], [["a"], [None]], SINGLES),
        ([MESSAGE_RESPONSE, Response(chat_message=MESSAGE, inner_messages=[MESSAGE])], [MESSAGE_RESPONSE], NESTED),
        ([text_result("a", usage(1, 2))] * 2, [text_result("b", usage(3, 4))], NESTED),
        ([MESSAGE_RESPONSE, MESSAGE_RESPONSE], [MESSAGE], MIXED),
        ([MESSAGE_RESPONSE, MESSAGE], [MESSAGE, MESSAGE_RESPONSE], MIXED),
        ([MESSAGE_RESPONSE, MESSAGE], [None], MIXED),
        ([MESSAGE, MESSAGE.model_copy()], [MESSAGE_RESPONSE], MIXED),  # by reference, then a nested type
        ([f"task {i}" for i in range(8)], ["task 8", None], OBJECTS),  # texts mostly distinct
    ],
)
def test_a_column_grows_and_is_made_again_when_a_value_does_not_fit(
    first: list[Any], then: list[Any], kind: int
) -> None:
    table = Table()
    column = grow(encode(first, table), len(first), then, table)
    assert column.kind == kind
    values = [*first, *then]
    for found in ([column.get(index) for index in range(len(values))], list(column.values(len(values)))):
        assert [type(value) for value in found] == [type(value) for value in values]
        assert repr(found) == repr(values)
        for value, was in zip(found, values):
            if kind in (EMPTY_LISTS, SINGLES, NESTED):
                assert value is not was  # a new one: changing it changes no other row


def test_clock_times_are_kept_exactly_in_4_bytes_near_the_first_and_8_further() -> None:
    first = datetime(2026, 1, 1, 12, 0, 0, 7, tzinfo=UTC)
    near = [first, first + timedelta(minutes=30), first - timedelta(minutes=30, microseconds=1)]
    table = Table()
    column = encode(near, table)
    assert column.kind == TIMES and column.data.typecode == "i"
    far = [first + timedelta(hours=2), first - timedelta(days=3650)]
    assert grow(column, 3, far, table) is column and column.data.typecode == "q"
    for found in ([column.get(index) for index in range(5)], list(column.values(5))):
        assert found == [*near, *far] and all(value.tzinfo is UTC for value in found)


def test_a_column_made_again_by_reference_is_not_made_again() -> None:
    """A column by reference meeting values of a nested type is made again once; if it is still by
    reference then (a value of the type that cannot be nested), it stays so: no pass over its rows at
    every append."""
    table = Table()
    validated = [CreateResult(finish_reason="stop", content=f"{i}", usage=usage(1, 2)) for i in range(2)]
    column = encode(validated, table)
    assert column.kind == OBJECTS
    again = grow(column, 2, [text_result("a", usage(1, 2))], table)
    assert again is not column and again.kind == OBJECTS
    assert grow(again, 3, [text_result("b", usage(1, 2))], table) is again
    assert list(again.values(4)) == [*validated, text_result("a", usage(1, 2)), text_result("b", usage(1, 2))]


def test_a_trace_cleared_at_every_run_packs_nothing_and_a_kept_one_packs_into_one_open_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Runs' ends pack once ``PACK_RUNS`` finished runs wait: a trace cleared at every run (a service's
    export-then-clear) packs nothing; a trace keeping its runs appends them to its one open block."""
    monkeypatch.setattr(store_module, "PACK_RUNS", 3)

    async def runs() -> None:
        cleared, kept = Trace(), Trace()
        agent = AssistantAgent("a", ReplayChatCompletionClient(["x"] * 10))
        cleared.attach(agent)
        kept.attach(agent)
        for _ in range(10):
            cleared.clear()
            await agent.run(task="go")
        assert cleared.store.rows.packed == 0 and len(cleared.runs_df()) == 1
        assert kept.store.rows.packed == 72 and len(kept.store.rows.tail) == 8  # 9 runs of 8 rows packed
        assert len(kept.store.rows.blocks) == 1 and kept.store.rows.blocks[0].open
        assert len(kept.runs_df()) == 10

    asyncio.run(runs())


def test_a_store_packs_only_finished_runs_and_many_blocks_are_found_by_bisect() -> None:
    store = RowStore()

    async def runs() -> None:
        trace = Trace()
        agent = AssistantAgent("a", ReplayChatCompletionClient([f"answer {i}" for i in range(40)]))
        trace.attach(agent)
        for i in range(40):
            await agent.run(task=f"task {i}")
            if i % 7 == 6:
                trace.store.pack()
        rows = list(trace.store.rows)
        assert_same_rows([trace.store.rows[at] for at in range(len(rows))], rows)
        store.rows[:] = trace.store.rows  # replaced whole, from a packed sequence: into the tail
        assert_same_rows(store.rows.tail, rows)

    asyncio.run(runs())


def test_run_ids_are_held_in_16_bytes_and_read_back_as_text() -> None:
    ids = [str(uuid.uuid4()) for _ in range(3)]
    others = [None, "run-1", ids[0].upper(), " " + ids[1][1:], "0" * 36]  # not a UUID's canonical text
    runs = RunIds()
    codes = runs.adding([*ids, *others, ids[0]])
    assert list(codes.values()) == list(range(8))  # each distinct id added once
    assert [runs[code] for code in codes.values()] == [*ids, *others] == runs.listed()
    assert len(runs) == 8
    for value in [*ids, *others]:
        assert runs.get(runs.add(value)) == value


async def test_a_packed_run_keeps_no_run_id_string() -> None:
    """Once packed (its rows and its snapshots), a finished run's id is held in 16 bytes, not as its text."""
    trace = Trace()
    agent = AssistantAgent("a", ReplayChatCompletionClient(["one", "two"]))
    trace.attach(agent)
    await agent.run(task="first")
    await agent.run(task="second")
    first = trace.store.rows[0]
    assert isinstance(first, RunStarted)
    count = sys.getrefcount(first.run_id)
    trace.store.pack()
    trace.store.snapshots.settle()
    assert sys.getrefcount(first.run_id) < count  # the trace let go of it
    assert trace.store.rows[0] == first and trace.store.snapshots.run_at(1) == first.run_id


async def test_a_run_spanning_a_big_block_is_read_at_the_cost_of_that_block(
    pack_by_hand: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run left open while many others start and end has its few rows far apart in one block: finding
    them reads the block's run column (no row rebuilt), and reading them rebuilds a row alone at most
    once each (was: every position of its span rebuilt alone, each counting its block from the start)."""
    release = asyncio.Event()

    async def wait() -> str:
        """Waits for the test."""
        await release.wait()
        return "done"

    trace = Trace()
    slow = AssistantAgent("slow", ReplayChatCompletionClient([calls(("w", "wait", "{}")), "ok"]), tools=[wait])
    other = AssistantAgent("other", ReplayChatCompletionClient([f"answer {i}" for i in range(300)]))
    trace.attach(slow)
    trace.attach(other)
    long_run = asyncio.ensure_future(slow.run(task="long"))
    while not trace.store.in_progress():
        await asyncio.sleep(0)
    for i in range(300):
        await other.run(task=f"short {i}")
    release.set()
    await long_run
    run = str(trace.runs_df().query("agent == 'slow'")["run_id"].iloc[0])
    expected = {name: getattr(trace.run(run), name)() for name in ("events_df", "llm_calls_df", "tool_calls_df")}
    context = trace.context_df(run)
    trace.store.pack()
    assert trace.store.rows.packed == len(trace.store.rows)
    counts = {"row": 0, "rows": 0}

    def counted(name: str) -> Any:
        original = getattr(Block, name)

        def call(self: Block, *args: Any) -> Any:
            counts[name] += 1
            return original(self, *args)

        return call

    monkeypatch.setattr(Block, "row", counted("row"))
    monkeypatch.setattr(Block, "rows", counted("rows"))
    positions = trace.store.rows_of(run)
    assert counts == {"row": 0, "rows": 0} and len(positions) < 20
    assert positions[-1] - positions[0] > 1_000  # far apart: 300 runs in between
    read = trace.run(run)
    assert counts["row"] <= len(positions) + 1 and counts["rows"] == 0  # its rows, and its first row's type
    for name, frame in expected.items():
        assert_frame_equal(getattr(read, name)(), frame)
    counts.update(row=0, rows=0)
    assert_frame_equal(trace.context_df(run), context)
    assert counts == {"row": 0, "rows": 0}  # the context's snapshot found from the run column alone
