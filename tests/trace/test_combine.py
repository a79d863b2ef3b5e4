"""``stack``: the rows of several parts of a table as one frame, each category column the union of the parts'
categories, as the parts' values made into categories again through ``object`` make it."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from nbagent.trace.combine import cast, stack
from nbagent.trace.schema import COLUMNS, frame

from ..frames import assert_frame_equal


def part(n: int, **values: Any) -> pd.DataFrame:
    """A runs table of ``n`` rows, ``values`` (a column's value for every row) in it, else nulls."""
    data: dict[str, list[Any]] = {name: [None] * n for name in COLUMNS["runs"]}
    for name, value in values.items():
        data[name] = [value] * n
    return frame("runs", data)


def through_objects(pieces: list[pd.DataFrame], table: str = "runs") -> pd.DataFrame:
    """What ``stack`` gives, by its definition: every category column through ``object`` and back."""
    categories = [column for column, (dtype, _) in COLUMNS[table].items() if dtype == "category"]
    objects = [piece.astype({c: "object" for c in categories if c in piece.columns}) for piece in pieces]
    return cast(pd.concat(objects, ignore_index=True), table, list(pieces[0].columns))


def strings(piece: pd.DataFrame, column: str) -> pd.DataFrame:
    """``piece`` with ``column``'s categories held as ``object`` (as a reader of another library may give)."""
    values = piece[column]
    names = pd.Index(list(values.cat.categories), dtype="object")
    return piece.assign(**{column: pd.Categorical(values.astype("object"), categories=names)})


def unused(piece: pd.DataFrame, column: str, *names: str) -> pd.DataFrame:
    """``piece`` with ``column`` also holding the categories ``names``, which no row has (a Parquet file's
    dictionary read with a filter keeps them)."""
    return piece.assign(**{column: piece[column].cat.add_categories(list(names))})


CASES = {
    "different categories": [part(2, agent="b", status="ok"), part(3, agent="a", status="error")],
    "a part all null": [part(2, parent_run_id="r1"), part(2), part(1, parent_run_id="r0")],
    "every part all null": [part(2), part(3)],
    "categories no row holds": [unused(part(2, agent="b"), "agent", "z", "c"), part(1, agent="a")],
    "a part of no rows": [unused(part(0), "agent", "x"), part(2, agent="d")],
    "only unused categories": [unused(part(1), "parent_run_id", "r9"), part(1)],
    "object categories": [strings(part(2, agent="b"), "agent"), part(1, agent="a")],
    "a column not of categories": [part(2, agent="b").astype({"agent": "object"}), part(1, agent="a")],
    "ordered categories": [part(2, agent="b").astype({"agent": pd.CategoricalDtype(["b"], ordered=True)}), part(1)],
    "one part": [part(2, agent="b")],
}


@pytest.mark.parametrize("pieces", CASES.values(), ids=CASES.keys())
def test_stack_makes_what_objects_made_into_categories_make(pieces: list[pd.DataFrame]) -> None:
    before = [piece.copy() for piece in pieces]
    got = stack(pieces, "runs")
    want = through_objects(pieces)
    assert_frame_equal(got, want)
    for column in ("agent", "status", "parent_run_id"):
        assert list(got[column].cat.categories) == list(want[column].cat.categories), column
        assert got[column].cat.categories.dtype == want[column].cat.categories.dtype, column
    for piece, copy in zip(pieces, before, strict=True):  # the parts are left as they were
        assert_frame_equal(piece, copy)


def test_stack_of_some_columns_of_another_table() -> None:
    def events(agent: str, n: int) -> pd.DataFrame:
        data: dict[str, list[Any]] = {name: [None] * n for name in COLUMNS["events"]}
        data["agent"], data["kind"], data["seq"] = [agent] * n, ["Move"] * n, list(range(n))
        return frame("events", data)[["seq", "agent", "kind"]]

    pieces = [events("b", 2), unused(events("a", 1), "kind", "Response")]
    got = stack(pieces, "events", ["seq", "agent", "kind"])
    assert list(got.columns) == ["seq", "agent", "kind"]
    assert_frame_equal(got, through_objects(pieces, "events"))
    assert list(got["kind"].cat.categories) == ["Move"]
