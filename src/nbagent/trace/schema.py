"""The trace's tables: their columns and dtypes (:data:`COLUMNS`), and what exports read of a trace.

Every frame a trace builds, saves or loads has exactly the columns and dtypes of :data:`COLUMNS`
(:func:`frame` builds it). :class:`TraceTables` is what an export reads of a trace (a live one or a
loaded one): its id and its tables.
"""

from __future__ import annotations

import datetime
import functools
import importlib.util
import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..redact import valid_text

if TYPE_CHECKING:
    import pandas as pd

# table -> column -> (dtype, meaning). The frames are built with exactly these columns and dtypes.
COLUMNS: dict[str, dict[str, tuple[str, str]]] = {
    "events": {
        "trace_id": ("category", "id of the trace (one per session), to tell traces apart in a folder"),
        "run_id": ("category", "id of the run the item belongs to"),
        "agent": ("category", "name of the agent that ran it"),
        "seq": ("Int64", "position of the item in its run, from 0 (RunStarted)"),
        "kind": (
            "category",
            "Move, LLMCall, ToolExecution, RunStarted, RunFinished, Intervention, Response or the event type",
        ),
        "step": ("Int64", "STEP 1-5 of the loop, from the item's move or the move before it"),
        "move": ("category", "name of that move (records.MOVES)"),
        "iteration": ("Int64", "tool-loop iteration, from 0"),
        "event_id": ("string", "id of the event or message (null for records)"),
        "message_id": ("string", "id of the message the item builds or is (chunks: full_message_id)"),
        "source": ("category", "who produced the event"),
        "text": ("string", "content as text, redacted"),
        "prompt_tokens": ("Int64", "models_usage.prompt_tokens of the event"),
        "completion_tokens": ("Int64", "models_usage.completion_tokens of the event"),
        "timestamp": (
            "datetime64[ns, UTC]",
            "wall-clock time the item was recorded (a record's own start or end), to the us",
        ),
        "elapsed_s": ("float64", "monotonic seconds since the run started"),
    },
    "llm_calls": {
        "trace_id": ("category", "id of the trace"),
        "run_id": ("category", "id of the run"),
        "agent": ("category", "name of the agent"),
        "call_index": ("Int64", "position of the call in its run, from 0"),
        "llm_call_id": (
            "string",
            "id of the call, unique in the trace: '<run_id>/<call_index>' (tool_calls.llm_call_id)",
        ),
        "iteration": ("Int64", "tool-loop iteration the call belongs to (a reflection: the last, which it follows)"),
        "purpose": ("category", "initial, tool_loop or reflection"),
        "model": ("category", "model name"),
        "provider": ("category", "who serves the model, as its client knows it (gen_ai.provider.name)"),
        "message_id": ("string", "id of the message the answer becomes"),
        "streaming": ("boolean", "whether the call was streamed"),
        "n_messages": ("Int64", "messages sent (system messages included)"),
        "n_tools": ("Int64", "tools offered"),
        "tool_choice": (
            "category",
            "auto, none, required or the forced tool's name, as sent (null: not sent, as with no tools); "
            "for a client that does not say what it sent (the replay model, AutoGen's clients), as asked",
        ),
        "started_at": ("datetime64[ns, UTC]", "when the call started"),
        "ttft_s": ("float64", "seconds to the first streamed chunk (NaN: not streamed, or not measured)"),
        "duration_s": ("float64", "seconds the call took (NaN if it never ended)"),
        "prompt_tokens": ("Int64", "usage.prompt_tokens (gen_ai.usage.input_tokens; null: not reported)"),
        "completion_tokens": ("Int64", "usage.completion_tokens (gen_ai.usage.output_tokens; null: not reported)"),
        "finish_reason": ("category", "stop, function_calls, length, content_filter or unknown"),
        "cached": ("boolean", "the answer came from a cache"),
        "has_thought": ("boolean", "the model returned reasoning"),
        "n_tool_calls": ("Int64", "tool calls in the answer"),
        "status": ("category", "ok, error or running (never ended)"),
        "error": ("string", "the error, when the call failed"),
        "response_text": ("string", "the text answer (or the calls as name(arguments)), redacted"),
        "response_model": ("category", "the model that answered, as the server said (gen_ai.response.model)"),
        "response_id": ("string", "the server's id of the answer (gen_ai.response.id)"),
        "request_params": (
            "object",
            "every parameter of the request besides messages and tools, by its name on the wire and as sent "
            "(model, temperature, seed, tool_choice, response_format, stream, stream_options..., overrides "
            "through extra_body or create args included), redacted; for a client that does not say what it "
            "sent: the tool_choice asked for and the client's create args",
        ),
        "system_instructions": ("string", "the system messages sent before the context, redacted"),
        "tool_definitions": (
            "object",
            "the tools offered, as [{type: 'function', name, description, parameters}] (gen_ai.tool.definitions)",
        ),
    },
    "tool_calls": {
        "trace_id": ("category", "id of the trace"),
        "run_id": ("category", "id of the run"),
        "agent": ("category", "name of the agent"),
        "iteration": ("Int64", "tool-loop iteration"),
        "batch_size": ("Int64", "calls the model requested at once"),
        "call_id": ("string", "id of the call as the model gave it (gen_ai.tool.call.id; may repeat or be empty)"),
        "llm_call_id": ("string", "the LLM call that requested it (llm_calls.llm_call_id): the key to join them"),
        "tool_name": ("category", "name of the tool (gen_ai.tool.name)"),
        "arguments": ("object", "arguments parsed from JSON (a dict; the raw string if it is not JSON)"),
        "result": ("string", "the result text, redacted"),
        "is_error": ("boolean", "the call gave an error result (null if it never ended)"),
        "started_at": ("datetime64[ns, UTC]", "when the call started"),
        "duration_s": (
            "float64",
            "seconds the call took. In runs of AutoGen's own agents (nbagent.autogen) the parallel calls of "
            "one batch share the batch's duration: AutoGen reports one ToolCallExecutionEvent when the "
            "last call of the batch ends",
        ),
        "concurrent_with": ("Int64", "how many calls of the run ran at once with it, itself included"),
    },
    "runs": {
        "trace_id": ("category", "id of the trace"),
        "run_id": ("category", "id of the run"),
        "agent": ("category", "name of the agent"),
        "parent_run_id": ("category", "the run this run is a turn of (a team run), null for a top-level run"),
        "forked_from": ("category", "the run this run is a fork of (Stepper.fork), null when it is not a fork"),
        "fork_move": ("Int64", "moves the fork shares with that run: it was forked before move fork_move + 1"),
        "max_tool_iterations": ("Int64", "the agent's max_tool_iterations (null: not an nbagent AssistantAgent's run)"),
        "reflect_on_tool_use": (
            "boolean",
            "the agent's reflect_on_tool_use (null: not an nbagent AssistantAgent's run)",
        ),
        "status": ("category", "ok, error, cancelled or running"),
        "error": ("string", "the error, when the run failed"),
        "started_at": ("datetime64[ns, UTC]", "when the run started"),
        "ended_at": ("datetime64[ns, UTC]", "when it ended (null while running)"),
        "duration_s": ("float64", "seconds it took"),
        "task": ("string", "the new messages of the run as text, redacted"),
        "final_type": ("category", "type of the final message"),
        "final_text": ("string", "the final message as text, redacted"),
        "n_events": ("Int64", "items recorded, records and chunks included"),
        "n_chunks": ("Int64", "streamed chunks"),
        "n_llm_calls": ("Int64", "model calls"),
        "n_tool_calls": ("Int64", "tool calls"),
        "n_tool_errors": ("Int64", "tool calls with an error result"),
        "prompt_tokens": ("Int64", "prompt tokens over the run's model calls"),
        "completion_tokens": ("Int64", "completion tokens over the run's model calls"),
        "handoff_target": ("category", "the agent the run handed the conversation to (its HandoffMessage's target)"),
    },
    "context": {
        "position": ("Int64", "index in the model context"),
        "kind": ("category", "system, user, assistant or tool_result"),
        "source": ("category", "who wrote the message"),
        "text": ("string", "the message as the model reads it, redacted"),
        "tool_calls": ("object", "assistant tool calls as [{id, name, arguments}] (None otherwise)"),
        "thought": ("string", "the model's reasoning, redacted"),
        "tokens": ("Int64", "estimated tokens (nbagent.context.estimate_tokens)"),
        "run_id": ("category", "the run that added the message (null: added outside a run)"),
        "step": ("Int64", "the STEP that added it"),
        "move": ("category", "the move that added it"),
    },
}
# The context snapshots as exported: each message log once, each snapshot as a prefix of one.
COLUMNS["context_logs"] = {
    "trace_id": ("category", "id of the trace"),
    "log": ("Int64", "id of the log: a context's messages in order, only ever appended to"),
    **COLUMNS["context"],
}
COLUMNS["snapshots"] = {
    "trace_id": ("category", "id of the trace"),
    "agent": ("category", "the agent whose context it is"),
    "event_row": ("Int64", "row in events_df (chunks included) of the first item that saw this context"),
    "log": ("Int64", "the log (context_logs.log) the context was a prefix of"),
    "length": ("Int64", "the context then: the log's first length messages"),
}
TABLES = ("events", "llm_calls", "tool_calls", "runs")
CONTEXT_TABLES = ("context_logs", "snapshots")  # exported with TABLES; they give context_df after a load
JSON_COLUMNS = {
    "llm_calls": ("request_params", "tool_definitions"),
    "tool_calls": ("arguments",),
    "context": ("tool_calls",),
    "context_logs": ("tool_calls",),
}
CHUNK_KIND = "ModelClientStreamingChunkEvent"  # the ``kind`` of a streamed chunk's row in ``events``


class ArrowTexts(Protocol):
    """Gives the one Arrow copy of a long text (a ``large_string`` array holding it alone) that every
    frame of a trace shares (a trace's redactor keeps them: :class:`nbagent.trace.live.Trace`)."""

    def arrow_text(self, text: str) -> Any: ...


LONG_TEXT = 65_536
"""Texts at least this long are shared Arrow copies in the frames of a trace that keeps them."""


@functools.cache
def has_pyarrow() -> bool:
    """Whether pyarrow is installed (an optional dependency: ``nbagent-loop[parquet]``)."""
    return importlib.util.find_spec("pyarrow") is not None


def shared_texts(red: object) -> ArrowTexts | None:
    """``red`` (a trace's redactor) if it keeps the shared Arrow copies of long texts (and pyarrow is
    installed to hold them), else ``None``."""
    return red if callable(getattr(red, "arrow_text", None)) and has_pyarrow() else None  # type: ignore[return-value]


def text_column(values: Sequence[Any], texts: ArrowTexts) -> Any:
    """A ``string`` column's array of ``values`` whose long texts are the shared copies of ``texts`` (a
    chunked array of them and of the runs of other values between them): the same values and dtype as
    :func:`string_array` with no new copy of a long text. The same 200 texts of 1 MB are in three tables
    (events, tool_calls, context_logs): each copy is fresh memory the kernel hands out and zeroes
    (0.4-0.6 s of system time per 200 MB, most of a first build's time; ``bench/RESULTS.md``)."""
    import pandas as pd

    longs = [at for at, value in enumerate(values) if isinstance(value, str) and len(value) >= LONG_TEXT]
    if not longs:
        return string_array(values)
    import pyarrow as pa

    kind = pa.large_string()
    chunks = []
    start = 0
    for at in [*longs, len(values)]:
        if at > start:  # the values between two long texts, converted as pandas converts them
            chunks.append(pa.array(string_array(values[start:at])).cast(kind))
        if at < len(values):
            chunks.append(texts.arrow_text(valid_text(values[at])))
        start = at + 1
    return pd.arrays.ArrowStringArray(pa.chunked_array(chunks, type=kind))


def string_array(values: Sequence[Any]) -> Any:
    """``pd.array(values, dtype="string")``, a text with a lone surrogate made valid (:func:`valid_text`):
    the values are checked only when the column cannot be built as they are. Texts and nulls alone (what
    the frames hold) go to Arrow in one call when pandas keeps its strings there."""
    import pandas as pd

    if pd.StringDtype().storage == "pyarrow" and _types(values) <= {str, type(None), float, type(pd.NA)}:
        import pyarrow as pa

        try:  # NaN and NA as null, as pandas takes them; a float that is a number is refused
            text = pa.array(values, type=pa.large_string(), from_pandas=True)
            return pd.arrays.ArrowStringArray(pa.chunked_array([text]))
        except (pa.ArrowException, UnicodeEncodeError):
            pass  # a lone surrogate, or a number: as pandas takes them, below
    try:
        return pd.array(values, dtype="string")
    except UnicodeEncodeError:
        return pd.array([valid_text(v) if isinstance(v, str) else v for v in values], dtype="string")


class ColumnError(ValueError):
    """A column's values that are not of its dtype (:func:`frame`): names the table, the column and its dtype."""

    def __init__(self, table: str, column: str, dtype: str, why: BaseException) -> None:
        self.table, self.column, self.dtype = table, column, dtype
        first = (str(why).splitlines() or [type(why).__name__])[0]  # pandas' hints follow on more lines
        super().__init__(f"column {column!r} of {table!r} holds a value that is not {dtype} ({first})")


def column(dtype: str, values: Sequence[Any], texts: ArrowTexts | None = None) -> pd.Series:
    """``values`` as a column of ``dtype`` (one of :data:`COLUMNS`'), as :func:`frame` makes each."""
    import pandas as pd

    return pd.Series(column_array(dtype, values, texts), copy=False)


def column_array(dtype: str, values: Sequence[Any], texts: ArrowTexts | None = None) -> Any:
    """``values`` as the array of a column of ``dtype`` (for ``object``, a Series of that dtype: pandas 3
    takes an array of texts alone as ``str``). The values a trace's rows give (Python ints,
    floats, bools, texts, aware datetimes and nulls, in lists) are converted in one pass each
    (:data:`_PLAIN`); anything else as pandas converts it, whose result those passes equal value for
    value and dtype for dtype (``tests/trace/test_frame_columns.py``)."""
    if dtype == "string":
        return string_array(values) if texts is None else text_column(values, texts)
    plain = _PLAIN[dtype]
    if not isinstance(values, _NOT_PLAIN):
        try:
            array = plain(values)
        except (TypeError, ValueError, OverflowError):  # the general conversion says what is wrong
            array = None
        if array is not None:
            return array
    return _converted(dtype, values)


def _converted(dtype: str, values: Sequence[Any]) -> Any:
    """``values`` as pandas converts them to ``dtype``: the general case of :func:`column_array`."""
    import pandas as pd

    if dtype == "object":
        return pd.Series(list(values), dtype="object")
    if dtype == "category":  # categories of text, also when every value is null (else float64)
        return pd.Series(values, dtype="object").astype("category").array
    if dtype.startswith("datetime64"):  # to the microsecond: what Parquet readers all take (Spark)
        times = pd.to_datetime(values, utc=True, format="ISO8601")  # text: any ISO 8601 (JSON lines)
        return pd.Series(times).astype(dtype).dt.floor("us").array
    return pd.Series(values, dtype=dtype).array


def _types(values: Sequence[Any]) -> set[type]:
    """The types of ``values`` (a pass in C)."""
    return set(map(type, values))


_NOT_PLAIN: tuple[type, ...] = (str, bytes, Mapping)  # a text or a mapping is no sequence of values here
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_MICROSECOND = datetime.timedelta(microseconds=1)
_NAT = -(2**63)  # NaT as datetime64's int64


def _masked(values: Sequence[Any], kind: type) -> tuple[Any, Any] | None:
    """``values`` as a numpy object array and its null mask (None, NA), or ``None`` when a value is
    neither null nor of type ``kind`` exactly (a bool is no int here; pandas takes a NaN among large
    ints through floats, so a NaN goes its way too)."""
    import numpy as np
    import pandas as pd

    if not _types(values) <= {type(None), type(pd.NA), kind}:
        return None
    objects = np.fromiter(values, dtype=object, count=len(values))
    return objects, pd.isna(objects)


def _plain_objects(values: Sequence[Any]) -> Any:
    import numpy as np
    import pandas as pd

    return pd.Series(np.fromiter(values, dtype=object, count=len(values)), dtype="object", copy=False)


def _plain_floats(values: Sequence[Any]) -> Any:
    import numpy as np

    if isinstance(values, np.ndarray):
        return values.astype("float64") if values.dtype.kind in "fiu" else None
    if not _types(values) <= {float, int, type(None)}:
        return None
    return np.array(values, dtype="float64")  # None as NaN


def _plain_ints(values: Sequence[Any]) -> Any:
    import numpy as np
    import pandas as pd

    if isinstance(values, np.ndarray):
        if values.dtype.kind not in "iu":
            return None
        return pd.arrays.IntegerArray(values.astype("int64"), np.zeros(len(values), dtype=bool))
    masked = _masked(values, int)
    if masked is None:
        return None
    objects, mask = masked
    objects[mask] = 0
    return pd.arrays.IntegerArray(objects.astype("int64"), mask)


def _plain_bools(values: Sequence[Any]) -> Any:
    import pandas as pd

    masked = _masked(values, bool)
    if masked is None:
        return None
    objects, mask = masked
    objects[mask] = False
    return pd.arrays.BooleanArray(objects.astype(bool), mask)


def _nan(value: Any) -> bool:
    return type(value) is float and value != value


def _plain_categories(values: Sequence[Any]) -> Any:
    import numpy as np
    import pandas as pd

    distinct = set(values)
    names = sorted(value for value in distinct if type(value) is str)
    na = pd.NA
    code = {value: -1 for value in distinct if value is None or value is na or _nan(value)}
    if len(code) + len(names) != len(distinct):
        return None
    code.update(zip(names, range(len(names))))
    codes = np.fromiter(map(code.__getitem__, values), dtype="int64", count=len(values))
    return pd.Categorical.from_codes(codes, dtype=category_dtype(names))


def category_dtype(names: Sequence[str]) -> Any:
    """The dtype of a category column holding the texts ``names`` (sorted), as pandas infers it from them:
    ``object`` categories when there is none. Small sets (a trace's agents, kinds, statuses) are made once."""
    import pandas as pd

    make = _categories if len(names) <= 64 else _categories.__wrapped__
    return make(tuple(names), pd.StringDtype().storage)


@functools.lru_cache(maxsize=512)
def _categories(names: tuple[str, ...], storage: str) -> Any:
    """The dtype of a category column of the texts ``names`` (sorted), as pandas infers it from them with
    its strings kept in ``storage`` (its option now); the small sets a trace's columns repeat (its
    agents, kinds, statuses) are made once."""
    import pandas as pd

    return pd.CategoricalDtype(pd.Index(list(names)) if names else pd.Index([], dtype="object"))


def utc_times(ns: Any) -> Any:
    """Times in ns since the epoch (an int64 numpy array, NaT as its minimum) as a ``datetime64[ns, UTC]`` array."""
    import pandas as pd

    return pd.array(ns.view("datetime64[ns]"), dtype=pd.DatetimeTZDtype("ns", "UTC"))


def _ns(value: Any) -> int:
    """An aware time or a null as ns since the epoch to the microsecond (NaT's int64 when null)."""
    import pandas as pd

    if value is None or value is pd.NaT:
        return _NAT
    if value.tzinfo is None:
        raise TypeError("a naive time")  # taken as pandas takes it
    if type(value) is pd.Timestamp:
        return int(value.value - value.value % 1000)
    return int((value - _EPOCH) // _MICROSECOND * 1000)


def _plain_times(values: Sequence[Any]) -> Any:
    import numpy as np
    import pandas as pd

    if isinstance(values, pd.DatetimeIndex | pd.arrays.DatetimeArray):
        if str(values.dtype) != "datetime64[ns, UTC]":
            return None
        ns = values.asi8
        return utc_times(np.where(ns == _NAT, _NAT, ns - ns % 1000))
    if not _types(values) <= {datetime.datetime, pd.Timestamp, type(None), type(pd.NaT)}:
        return None
    return utc_times(np.fromiter(map(_ns, values), dtype="int64", count=len(values)))


_PLAIN = {
    "object": _plain_objects,
    "category": _plain_categories,
    "Int64": _plain_ints,
    "float64": _plain_floats,
    "boolean": _plain_bools,
    "datetime64[ns, UTC]": _plain_times,
}


def frame(table: str, data: Mapping[str, Sequence[Any]], texts: ArrowTexts | None = None) -> pd.DataFrame:
    """A DataFrame of ``table`` with the columns and dtypes of :data:`COLUMNS` (times to the microsecond);
    with ``texts``, the long texts of its ``string`` columns are their shared copies (:func:`text_column`).
    Values a column's dtype cannot hold: a :class:`ColumnError` naming the column; columns of different
    lengths: a ValueError naming the table and them."""
    import pandas as pd

    columns = COLUMNS[table]
    out: dict[str, Any] = {}
    for name, (dtype, _) in columns.items():
        try:
            out[name] = column_array(dtype, data[name], texts)
        except (TypeError, ValueError, OverflowError) as error:
            raise ColumnError(table, name, dtype, error) from error
    lengths = {name: len(array) for name, array in out.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"frame: the columns of {table!r} are not of one length ({lengths})")
    return pd.DataFrame(out, copy=False)  # the columns in their order


class TraceTables(Protocol):
    """What an export reads of a trace: its id and its tables (a live or a loaded trace)."""

    @property
    def trace_id(self) -> str: ...

    def events_df(self, include_chunks: bool = True) -> pd.DataFrame: ...

    def llm_calls_df(self) -> pd.DataFrame: ...

    def tool_calls_df(self) -> pd.DataFrame: ...

    def runs_df(self) -> pd.DataFrame: ...

    def context_tables(self) -> dict[str, pd.DataFrame]: ...


def tables_of(trace: TraceTables) -> dict[str, pd.DataFrame]:
    """Every table of ``trace`` by name: the four frames of :data:`TABLES` and the context ones."""
    return {
        "events": trace.events_df(),
        "llm_calls": trace.llm_calls_df(),
        "tool_calls": trace.tool_calls_df(),
        "runs": trace.runs_df(),
        **trace.context_tables(),
    }


def empty(table: str) -> pd.DataFrame:
    """A frame of ``table`` with no row."""
    return frame(table, {name: [] for name in COLUMNS[table]})


def json_cell(text: str) -> Any:
    """A JSON-valued cell's text (``arguments``, ``request_params``...) decoded; text nested deeper than
    Python's decoder goes (RecursionError) stays the text it is, as a cell that is not JSON does
    (``arguments``: "the raw string if it is not JSON"). Text that is not JSON: ``json.JSONDecodeError``."""
    try:
        return json.loads(text)
    except RecursionError:
        return text


MAX_DURATION_S = 1e9
"""The longest duration (31 years) the exports and views take as recorded: one beyond it (inf, 1e300, 1e12:
no span end fits in OTLP's 64-bit nanoseconds), negative or NaN is out of range, shown as missing."""


def seconds(value: Any) -> float | None:
    """A duration or time offset in seconds as recorded, ``None`` when missing or out of range (NaN,
    negative, infinite, past :data:`MAX_DURATION_S`)."""
    number = json_value(value)
    if not isinstance(number, int | float) or isinstance(number, bool):
        return None
    return float(number) if 0 <= number <= MAX_DURATION_S else None


def seconds_column(values: pd.Series) -> pd.Series:
    """A column of durations as :func:`seconds` reads each: float64, a value missing or out of range NaN
    (what a table shows, sorts and takes percentiles of as missing)."""
    import pandas as pd

    numbers = pd.to_numeric(values, errors="coerce").astype("float64")
    return numbers.where((numbers >= 0) & (numbers <= MAX_DURATION_S))


def json_value(value: Any) -> Any:
    """A cell as a JSON value: NA and NaN as null, timestamps as ISO 8601 text to the microsecond."""
    import pandas as pd

    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, pd.Timestamp):  # one width for every time (a whole second keeps its fraction)
        return value.isoformat(timespec="microseconds")
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value


def trace_id_of(frames: Mapping[str, pd.DataFrame], fallback: str) -> str:
    """The id in the rows, for files written before the id was stored apart; else ``fallback``."""
    for df in frames.values():
        if len(df) and "trace_id" in df:
            return str(df["trace_id"].iloc[0])
    return fallback
