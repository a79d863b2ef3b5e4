"""Each column of a trace's frames is built in one pass from the plain values a trace's rows hold (issue 45:
a frame of a few rows cost about 4 ms in pandas' per-column conversions, now a fraction of it). The
frames must not change: for any values, plain or not, a column equals pandas' conversion of them, the
one the frames were built with before (the reference below), dtype for dtype, category for category,
value for value; values pandas refuses are refused."""

from __future__ import annotations

import datetime
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbagent.redact import valid_text
from nbagent.trace.frames import per_run
from nbagent.trace.schema import COLUMNS, ColumnError, column, frame

REFUSED = (TypeError, ValueError, OverflowError)


def reference(dtype: str, values: Sequence[Any]) -> pd.Series:
    """``values`` as a column of ``dtype``, converted by pandas as ``schema.column`` did before 45."""
    if dtype == "object":
        return pd.Series(list(values), dtype="object")
    if dtype == "category":
        return pd.Series(values, dtype="object").astype("category")
    if dtype.startswith("datetime64"):
        times = pd.to_datetime(values, utc=True, format="ISO8601")
        return pd.Series(times).astype(dtype).dt.floor("us")
    if dtype == "string":
        try:
            return pd.Series(values, dtype="string")
        except UnicodeEncodeError:
            return pd.Series([valid_text(v) if isinstance(v, str) else v for v in values], dtype="string")
    return pd.Series(values, dtype=dtype)


def assert_same_column(found: pd.Series, expected: pd.Series) -> None:
    assert str(found.dtype) == str(expected.dtype) and found.dtype == expected.dtype
    assert type(found.array) is type(expected.array)
    if isinstance(expected.dtype, pd.CategoricalDtype):
        assert found.cat.categories.dtype == expected.cat.categories.dtype
        assert list(found.cat.categories) == list(expected.cat.categories)
        assert found.cat.codes.dtype == expected.cat.codes.dtype
    pd.testing.assert_series_equal(found, expected, check_exact=True, check_categorical=True)


def check(dtype: str, values: Sequence[Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas' own warnings about odd values are not the point
        try:
            expected = reference(dtype, values)
        except REFUSED:
            with pytest.raises(REFUSED):
                column(dtype, values)
            return
        assert_same_column(column(dtype, values), expected)


UTC = datetime.UTC
NULLS = st.sampled_from([None, float("nan"), pd.NA])
TEXTS = st.text(max_size=4) | st.sampled_from(["", "b", "a", "é", "\U0001f600", "ab"])
AWARE = st.datetimes(
    min_value=datetime.datetime(1678, 1, 1),
    max_value=datetime.datetime(2261, 12, 31),
    timezones=st.sampled_from([UTC, datetime.timezone(datetime.timedelta(hours=5, minutes=30))]),
)
# what a trace's rows hold, per dtype, and what a loaded frame's rows give back (NaN, NA, NaT, Timestamps)
PLAIN: dict[str, st.SearchStrategy[Any]] = {
    "Int64": st.integers(-(2**63) + 1, 2**63 - 1) | NULLS,
    "float64": st.floats(allow_nan=True) | st.integers(-(2**60), 2**60) | st.none(),
    "boolean": st.booleans() | NULLS,
    "category": TEXTS | NULLS,
    "string": TEXTS | NULLS,
    "object": st.dictionaries(TEXTS, st.integers() | TEXTS, max_size=2) | st.lists(st.integers(), max_size=2) | NULLS,
    "datetime64[ns, UTC]": AWARE | AWARE.map(pd.Timestamp) | st.sampled_from([None, pd.NaT]),
}
# and what they might hold besides: pandas decides, as before
ODD = (
    st.integers(-(2**70), 2**70)
    | st.floats()
    | st.booleans()
    | TEXTS
    | st.sampled_from(["1", "1.5", "2024-01-02T03:04:05.123456789Z", "\ud800", np.int64(3), np.float64(2.5), np.True_])
    | st.datetimes(timezones=st.none() | st.just(UTC))
    | st.sampled_from([pd.Timestamp("2024-01-01 00:00:00.000000999"), pd.NaT])
    | NULLS
)


@pytest.mark.parametrize("dtype", sorted(PLAIN))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_column_of_plain_values_is_pandas_conversion_of_them(dtype: str, data: st.DataObject) -> None:
    check(dtype, data.draw(st.lists(PLAIN[dtype], max_size=12)))


@pytest.mark.parametrize("dtype", sorted(PLAIN))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_tolist_of_a_column_gives_what_its_objects_give(dtype: str, data: st.DataObject) -> None:
    """The trace's readers take a column's values with ``tolist()`` (half the cost of ``astype("object")``
    first): the same values of the same types, the nulls too, for every dtype of :data:`COLUMNS`."""
    series = column(dtype, data.draw(st.lists(PLAIN[dtype], max_size=12)))
    got, want = series.tolist(), series.astype("object").tolist()
    assert [type(value) for value in got] == [type(value) for value in want]
    assert [repr(value) for value in got] == [repr(value) for value in want]


@pytest.mark.parametrize("dtype", sorted(PLAIN))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_column_of_any_values_is_pandas_conversion_or_refused_as_pandas_refuses(
    dtype: str, data: st.DataObject
) -> None:
    check(dtype, data.draw(st.lists(PLAIN[dtype] | ODD, max_size=8)))


ARRAYS: list[tuple[str, Callable[[], Any]]] = [
    ("Int64", lambda: np.array([3, 1, 2], dtype="int64")),
    ("Int64", lambda: np.array([1.0, 2.0])),
    ("float64", lambda: np.array([0.5, np.nan, 2.0])),
    ("float64", lambda: np.array([1, 2], dtype="int32")),
    ("datetime64[ns, UTC]", lambda: pd.to_datetime([1_700_000_000_123_456_789, -1_001, None], unit="ns", utc=True)),
    ("datetime64[ns, UTC]", lambda: pd.DatetimeIndex(["2024-01-01 00:00:00.0000015"], tz="Asia/Kolkata")),
    ("category", lambda: pd.Series(["b", None, "a"], dtype="category")),
    ("string", lambda: pd.Series(["x", None], dtype="string")),
    ("Int64", lambda: pd.Series([1, None], dtype="Int64")),
    ("object", lambda: ("a", {"b": 1}, [1, 2])),
]


@pytest.mark.parametrize(("dtype", "make"), ARRAYS)
def test_arrays_series_and_tuples_are_pandas_conversion_of_them(dtype: str, make: Callable[[], Any]) -> None:
    check(dtype, make())


def test_each_table_of_no_row_has_its_dtypes_and_text_categories_where_pandas_gives_them() -> None:
    for table, columns in COLUMNS.items():
        df = frame(table, {name: [] for name in columns})
        assert len(df) == 0 and list(df.columns) == list(columns)
        for name, (dtype, _) in columns.items():
            assert_same_column(df[name], reference(dtype, []).rename(name))


def test_a_frame_of_columns_of_different_lengths_is_refused_naming_the_table_and_the_lengths() -> None:
    data: dict[str, list[Any]] = {name: [None] for name in COLUMNS["context"]}
    data["tokens"] = [1, 2]
    with pytest.raises(ValueError, match=r"columns of 'context' are not of one length .*'tokens': 2"):
        frame("context", data)


def test_a_value_a_column_cannot_hold_names_the_column_whichever_path_tried_it_first() -> None:
    data: dict[str, list[Any]] = {name: [None] for name in COLUMNS["context"]}
    data["tokens"] = [2**80]  # an int the one-pass conversion gives up on, then pandas refuses
    with pytest.raises(ColumnError, match="column 'tokens' of 'context' holds a value that is not Int64"):
        frame("context", data)
    data["tokens"] = ["seven"]
    with pytest.raises(ColumnError, match="column 'tokens' of 'context'"):
        frame("context", data)


@pytest.mark.parametrize("storage", ["python", "pyarrow", "python"])
def test_texts_and_categories_follow_pandas_string_storage_option_as_it_changes(storage: str) -> None:
    """The category dtypes made once are made per storage: switching pandas' option between frames changes
    them as it changes pandas' own conversion (python, pyarrow, then python again from the made ones)."""
    with pd.option_context("mode.string_storage", storage):
        for dtype in ("category", "string"):
            check(dtype, ["b", None, "a", "b"])
            check(dtype, [])


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_events_per_run_columns_are_what_pandas_grouping_by_run_gave(data: st.DataObject) -> None:
    """``per_run`` (one pass) against the groupby, ffill and cumcount ``events_frame`` used before, rows of
    no run among them: a row's position in its run, its run's agent, seconds since the run's first row,
    and its step, move and iteration carried forward within its run."""
    runs = data.draw(st.lists(st.sampled_from(["r1", "r2", None]), max_size=12))
    n = len(runs)
    perfs = sorted(data.draw(st.lists(st.floats(0, 1e6), min_size=n, max_size=n)))
    marks = st.tuples(
        st.none() | st.integers(1, 5), st.none() | st.sampled_from(["a", "b"]), st.none() | st.integers(0, 3)
    )
    own = {i: data.draw(marks) for i in data.draw(st.sets(st.integers(0, 11))) if i < n}
    seq, agents, elapsed, filled = per_run(runs, perfs, {"r1": "A"}, own)

    by_run = pd.Series(runs, dtype="object")

    def sparse(at: int, dtype: str) -> pd.Series:
        values = {i: mark[at] for i, mark in own.items() if mark[at] is not None}
        out = pd.Series(pd.NA, index=range(n), dtype=dtype)
        if values:
            out.iloc[list(values)] = list(values.values())
        return out

    fill = pd.DataFrame({"step": sparse(0, "Int64"), "move": sparse(1, "object"), "iteration": sparse(2, "Int64")})
    fill = fill.groupby(by_run, sort=False).ffill()
    perf = pd.Series(np.array(perfs, dtype="float64"))
    expected = {
        "seq": ("Int64", by_run.groupby(by_run, sort=False).cumcount() if n else []),
        "agent": ("category", by_run.map({"r1": "A"}).astype("object") if n else []),
        "elapsed": ("float64", (perf - perf.groupby(by_run, sort=False).transform("first")).to_numpy() if n else []),
        "step": ("Int64", fill["step"] if n else []),
        "move": ("category", fill["move"] if n else []),
        "iteration": ("Int64", fill["iteration"] if n else []),
    }
    found = {
        "seq": seq,
        "agent": agents,
        "elapsed": elapsed,
        "step": [f[0] for f in filled],
        "move": [f[1] for f in filled],
        "iteration": [f[2] for f in filled],
    }
    for name, (dtype, values) in expected.items():
        assert_same_column(column(dtype, found[name]), reference(dtype, values).rename(None))
