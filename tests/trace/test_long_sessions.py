"""Long sessions bounded on request: Trace(max_runs=N) keeps the last runs (a ring buffer) with their
rows, context snapshots and views whole; the default redactor masks a long text once, not at every
frame built, and again when the secrets change. Memory over 100,000 runs and the time of the frames
of 200 runs with 1 MB outputs: bench/bench_long_session.py."""

from __future__ import annotations

from typing import Any

import pytest

import nbagent.trace.live
from nbagent import AssistantAgent, ReplayChatCompletionClient, Trace

from .helpers import KEY, KeyedClient, calls, tool_agent


async def test_max_runs_keeps_the_last_runs_whole() -> None:
    answers = [a for i in range(40) for a in (calls((f"c{i}", "add", f'{{"a": {i}, "b": 1}}')), f"sum {i + 1}")]
    agent = tool_agent("calc", *answers, reflect_on_tool_use=True)
    trace = Trace(max_runs=8)
    trace.attach(agent)
    for i in range(40):
        await agent.run(task=f"add {i} and 1")
    runs = trace.runs_df()
    assert 8 <= len(runs) <= 10 and list(runs["final_text"])[-1] == "sum 40"
    kept = set(runs["run_id"].astype(str))
    for frame in (trace.events_df(), trace.llm_calls_df(), trace.tool_calls_df()):
        assert set(frame["run_id"].astype(str)) == kept
    assert list(trace.tool_calls_df()["result"])[-1] == "40"
    # The context at the end of each kept run ends with its own task, tool call, result and answer.
    for run_id, final, task in zip(runs["run_id"].astype(str), runs["final_text"], runs["task"]):
        context = trace.context_df(run_id)
        assert list(context["text"])[-4] == task and list(context["text"])[-1] == final
    snapshots = trace.context_tables()["snapshots"]
    assert snapshots["event_row"].max() < len(trace.events_df())
    assert len(trace.store.snapshots) <= 4 * 10 + 1  # the forgotten runs' snapshots went with them


def test_max_runs_is_checked() -> None:
    with pytest.raises(ValueError, match="max_runs"):
        Trace(max_runs=0)
    with pytest.raises(TypeError, match="max_runs"):
        Trace(max_runs="10")  # type: ignore[arg-type]


async def test_a_long_text_is_masked_once_until_the_secrets_change(monkeypatch: pytest.MonkeyPatch) -> None:
    long_answer = "x" * 5000 + " the key is " + KEY
    agent = AssistantAgent("a", ReplayChatCompletionClient([long_answer] * 3))
    for i in range(3):
        await agent.run(task=f"task {i}")
    masked: list[int] = []
    real = nbagent.trace.live.mask

    def counting(text: str, secrets: Any = None) -> str:
        if len(text) >= nbagent.trace.live.MEMO_FROM:
            masked.append(len(text))
        return real(text, secrets)

    monkeypatch.setattr(nbagent.trace.live, "mask", counting)
    first = agent.trace.runs_df()
    assert masked and KEY not in first["final_text"].iloc[0] and "[REDACTED]" in first["final_text"].iloc[0]
    assert len(masked) == 1  # three runs, one text: masked once
    agent.trace.llm_calls_df(), agent.trace.events_df(), agent.trace.runs_df()
    assert len(masked) == 1  # built again: not scanned again
    # A secret learnt since (a newly attached client's key) is masked in texts scanned before.
    other = AssistantAgent("b", KeyedClient(["hi"], key="x" * 40))
    agent.trace.attach(other)
    assert "x" * 40 not in agent.trace.runs_df()["final_text"].iloc[0]
    assert len(masked) == 2


async def test_the_frames_share_one_arrow_copy_of_each_long_text() -> None:
    """A long tool output is in events, tool_calls and context_logs: the three columns hold one Arrow
    copy of it (the same buffer), with the dtype, the values and the masking of a column built the
    plain way; a trace with another redactor builds its columns the plain way."""
    pytest.importorskip("pyarrow", reason="needs pyarrow (the parquet extra): the shared copies are Arrow buffers")
    import pandas as pd

    from nbagent.trace.schema import LONG_TEXT

    output = "a line of the output, é\n" * (LONG_TEXT // 20) + "key " + KEY

    def fetch(n: int) -> str:
        """A long text."""
        return f"{n}: {output}"

    answers = [calls(("c1", "fetch", '{"n": 1}')), "done", calls(("c2", "fetch", '{"n": 2}')), "done again"]
    agent = AssistantAgent("a", ReplayChatCompletionClient(answers), tools=[fetch], reflect_on_tool_use=True)
    plain = Trace(redact=lambda text: text.replace(KEY, "[REDACTED]"))
    plain.attach(agent)
    for i in range(2):
        await agent.run(task=f"task {i}")
    trace = agent.trace

    def columns_of(source: Trace) -> dict[str, pd.Series]:
        return {
            "events": source.events_df()["text"],
            "tool_calls": source.tool_calls_df()["result"],
            "context_logs": source.context_tables()["context_logs"]["text"],
        }

    columns, plain_columns = columns_of(trace), columns_of(plain)
    addresses: dict[str, set[int]] = {}
    for name, column in columns.items():
        assert column.dtype == pd.StringDtype("pyarrow") == plain_columns[name].dtype == "string", name
        assert column.tolist() == plain_columns[name].tolist(), name
        longs = [text for text in column.dropna() if len(text) >= LONG_TEXT]
        assert len(longs) == 2 and all(KEY not in text and text.endswith("key [REDACTED]") for text in longs)
        chunks = column.array.__arrow_array__().chunks
        addresses[name] = {
            chunk.buffers()[2].address
            for chunk in chunks
            if len(chunk) == 1 and len(chunk[0].as_py() or "") >= LONG_TEXT
        }
    assert len(addresses["events"]) == 2 and addresses["events"] == addresses["tool_calls"] == addresses["context_logs"]
    assert trace.tool_calls_df()["result"].tolist() == plain.tool_calls_df()["result"].tolist()
    assert plain.tool_calls_df()["result"].array.__arrow_array__().num_chunks == 1
