"""Context queries: the model context at any recorded point, as the frame ``context_df`` gives it.

:func:`pick_snapshot` finds the snapshot that holds the context an item saw (for a live trace and a
loaded one alike); :func:`context_rows` turns messages into the context frame, with the run and STEP
that added each message; :func:`context_tables` gives the snapshots as the exported tables
``context_logs`` and ``snapshots``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..context import estimate_tokens, message_text
from ..messages import AssistantMessage, FunctionExecutionResultMessage, LLMMessage, SystemMessage
from ..redact import Redactor
from .recording import NOWHERE, AgentRecorder
from .schema import COLUMNS, frame, shared_texts
from .store import RowStore
from .texts import arguments_text, calls_text, optional_text

if TYPE_CHECKING:
    import pandas as pd


def pick_snapshot(
    runs: Sequence[str | None],
    agents: Mapping[str, str],
    snapshots: Sequence[tuple[int, str]],
    run_id: str | None,
    seq: int | None,
    agent: str | None,
) -> int:
    """Which snapshot (given as (row, agent)) holds the context item ``seq`` of run ``run_id`` saw.

    ``runs`` gives the run of each row, ``agents`` the agent of each run. Without ``seq``: at the end
    of the run; without ``run_id``: the latest snapshot (of ``agent`` if given).
    """
    limit = len(runs)
    if run_id is not None:
        positions = [index for index, run in enumerate(runs) if run == run_id]
        if not positions:
            raise KeyError(f"no run {run_id!r} in this trace")
        if seq is not None:
            if not 0 <= seq < len(positions):
                raise IndexError(f"run {run_id!r} has {len(positions)} items, no seq {seq}")
            limit = positions[seq]
        else:
            limit = positions[-1]  # its last item: a snapshot of the next run start is after it
        agent = agents.get(run_id, agent)
    chosen = None
    for index, (row, name) in enumerate(snapshots):
        if row <= limit and (agent is None or name == agent):
            chosen = index
    if chosen is None:
        raise LookupError("no context snapshot there: this trace records no agent's context at that point")
    return chosen


def message_kind(message: LLMMessage) -> str:
    """A context message's kind as the context frame and the views name it: system, assistant,
    tool_result or user."""
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, AssistantMessage):
        return "assistant"
    if isinstance(message, FunctionExecutionResultMessage):
        return "tool_result"
    return "user"


def context_rows(
    messages: Sequence[LLMMessage], recorder: AgentRecorder[Any] | None, red: Redactor, live: bool = False
) -> pd.DataFrame:
    """The context frame of ``messages``, with the run and STEP ``recorder`` saw add each one
    (``live``: ``messages`` is the source's context now, see :meth:`AgentRecorder.origin_of`)."""
    cols: dict[str, list[Any]] = {name: [] for name in COLUMNS["context"]}
    add_context_rows(cols, messages, recorder, red, live)
    return frame("context", cols)


def add_context_rows(
    cols: dict[str, list[Any]],
    messages: Sequence[LLMMessage],
    recorder: AgentRecorder[Any] | None,
    red: Redactor,
    live: bool = False,
) -> None:
    """Append the context frame's rows of ``messages`` to ``cols`` (see :func:`context_rows`)."""
    for position, message in enumerate(messages):
        run_id, step, move = recorder.origin_of(message, live) if recorder is not None else NOWHERE
        calls = None
        if isinstance(message, AssistantMessage) and not isinstance(message.content, str):
            calls = [
                {"id": c.id, "name": red(c.name), "arguments": arguments_text(c.arguments, red)}
                for c in message.content
            ]
            text = calls_text(message.content, red)
        else:
            text = red(message_text(message))
        if isinstance(message, FunctionExecutionResultMessage):
            source = red(", ".join(result.name for result in message.content))
        else:
            source = getattr(message, "source", "system")
        row = {
            "position": position,
            "kind": message_kind(message),
            "source": source,
            "text": text,
            "tool_calls": calls,
            "thought": optional_text(getattr(message, "thought", None), red),
            "tokens": estimate_tokens(message),
            "run_id": run_id,
            "step": step,
            "move": move,
        }
        for name, value in row.items():
            cols[name].append(value)


def snapshot_context(
    store: RowStore, index: int, recorders: Sequence[AgentRecorder[Any]], red: Redactor
) -> pd.DataFrame:
    """The context frame of snapshot ``index`` of ``store`` (its recorder among ``recorders``)."""
    _, _, size, key, _, _ = store.snapshots[index]
    return context_rows(store.logs[index][:size], recorders[key], red)


def context_tables(
    store: RowStore, recorders: Sequence[AgentRecorder[Any]], red: Redactor, trace_id: str
) -> dict[str, pd.DataFrame]:
    """The snapshots of ``store`` as two tables: ``context_logs``, each message log once (the context
    frame's columns, per log), and ``snapshots``, each snapshot as a prefix of a log."""
    texts = shared_texts(red)
    return {name: frame(name, cols, texts) for name, cols in context_columns(store, recorders, red, trace_id).items()}


def context_columns(
    store: RowStore, recorders: Sequence[AgentRecorder[Any]], red: Redactor, trace_id: str
) -> dict[str, dict[str, list[Any]]]:
    """The columns of :func:`context_tables` as lists of plain values (no pandas)."""
    logs: dict[tuple[int, int], int] = {}  # (id of the log, recorder) -> log id
    kept: list[tuple[list[LLMMessage], int]] = []  # per log id: the log and its recorder
    lengths: list[int] = []
    snapshots: dict[str, list[Any]] = {name: [] for name in COLUMNS["snapshots"]}
    for (row, agent, size, key, _, _), log in zip(store.snapshots, store.logs):
        log_id = logs.setdefault((id(log), key), len(logs))
        if log_id == len(kept):
            kept.append((log, key))
            lengths.append(size)
        lengths[log_id] = max(lengths[log_id], size)
        for name, value in zip(COLUMNS["snapshots"], (trace_id, agent, row, log_id, size)):
            snapshots[name].append(value)
    messages: dict[str, list[Any]] = {name: [] for name in COLUMNS["context_logs"]}
    for log_id, ((log, key), length) in enumerate(zip(kept, lengths)):
        messages["trace_id"] += [trace_id] * length
        messages["log"] += [log_id] * length
        add_context_rows(messages, log[:length], recorders[key], red)
    return {"context_logs": messages, "snapshots": snapshots}
