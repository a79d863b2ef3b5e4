"""tests/frames.py: its quick check settles only frames that pandas' own check passes."""

from __future__ import annotations

import pandas as pd
import pytest

from .frames import assert_frame_equal

BASE = pd.DataFrame(
    {
        "kind": pd.Categorical(["a", "b", "a"], categories=["a", "b"]),
        "text": pd.Series(["x", None, "z"], dtype="str"),
        "n": pd.array([1, None, 3], dtype="Int64"),
        "at": pd.to_datetime(["2026-12-07T10:00:00Z"] * 3, utc=True),
    }
)


def test_equal_frames_pass() -> None:
    assert_frame_equal(BASE, BASE.copy())


@pytest.mark.parametrize(
    "change",
    [
        lambda df: df.assign(kind=df["kind"].cat.reorder_categories(["b", "a"])),  # same values, another order
        lambda df: df.set_axis(pd.Index([0.0, 1.0, 2.0]), axis=0),  # floats, not ints
        lambda df: df.rename_axis("row"),
        lambda df: df.assign(n=df["n"].astype("float64")),
        lambda df: df.assign(text=["x", None, "y"]),
        lambda df: df[["text", "kind", "n", "at"]],
    ],
    ids=["category order", "index type", "index name", "dtype", "value", "column order"],
)
def test_what_pandas_refuses_is_refused(change: object) -> None:
    other = change(BASE.copy())  # type: ignore[operator]
    with pytest.raises(AssertionError):
        pd.testing.assert_frame_equal(BASE, other)
    with pytest.raises(AssertionError):
        assert_frame_equal(BASE, other)


def test_what_the_quick_check_leaves_goes_to_pandas() -> None:
    assert_frame_equal(BASE, BASE.set_axis(pd.Index([0, 1, 2]), axis=0))  # ints: a RangeIndex's equal to pandas
    assert_frame_equal(BASE, BASE.assign(n=BASE["n"].astype("float64")), check_dtype=False)


OBJECTS = pd.DataFrame({"cell": pd.Series(["a", None], dtype=object)})


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (OBJECTS, OBJECTS.assign(cell=pd.Series(["a", float("nan")], dtype=object))),  # None is not NaN
        (pd.DataFrame({0: [1]}, dtype=object).T, pd.DataFrame({0.0: [1]}, dtype=object).T),  # labels 0 and 0.0
        (
            pd.DataFrame({"x": [1, 2]}, index=pd.CategoricalIndex(["a", "b"], categories=["a", "b"])),
            pd.DataFrame({"x": [1, 2]}, index=pd.CategoricalIndex(["a", "b"], categories=["b", "a"])),
        ),
        (
            pd.DataFrame({"x": [1]}, index=pd.MultiIndex.from_tuples([(1, "a")])),
            pd.DataFrame({"x": [1]}, index=pd.MultiIndex.from_tuples([(1.0, "a")])),
        ),
        (
            pd.DataFrame({"x": [1, 2]}, index=pd.timedelta_range("1s", periods=2, freq="1s")),
            pd.DataFrame({"x": [1, 2]}, index=pd.TimedeltaIndex(["1s", "2s"])),
        ),
    ],
    ids=["None and NaN in an object column", "labels 0 and 0.0", "index categories' order", "MultiIndex level", "freq"],
)
def test_what_equals_takes_for_equal_and_pandas_refuses_is_refused(left: pd.DataFrame, right: pd.DataFrame) -> None:
    with pytest.raises(AssertionError):
        pd.testing.assert_frame_equal(left, right)
    with pytest.raises(AssertionError):
        assert_frame_equal(left, right)
