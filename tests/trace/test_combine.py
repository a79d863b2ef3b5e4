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


def through_objects(pieces: list[pd.DataFrame]) -> pd.DataFrame:
    """What ``stack`` gives, by its definition: every category column through ``object`` and back."""
    categories = [column for column, (dtype, _) in COLUMNS["runs"].items() if dtype == "category"]
    objects = [piece.astype(dict.fromkeys(categories, "object")) for piece in pieces]
    return cast(pd.concat(objects, ignore_index=True), "runs")


def strings(piece: pd.DataFrame, column: str) -> pd.DataFrame:
    """``piece`` with ``column``'s categories held as ``object`` (as a reader of another library may give)."""
    values = piece[column]
    names = pd.Index(list(values.cat.categories), dtype="object")
    return piece.assign(**{column: pd.Categorical(values.astype("object"), categories=names)})


CASES = {
    "different categories": [part(2, agent="b", status="ok"), part(3, agent="a", status="error")],
    "a part all null": [part(2, parent_run_id="r1"), part(2), part(1, parent_run_id="r0")],
    "every part all null": [part(2), part(3)],
    "object categories": [strings(part(2, agent="b"), "agent"), part(1, agent="a")],
    "a column not of categories": [part(2, agent="b").astype({"agent": "object"}), part(1, agent="a")],
    "one part": [part(2, agent="b")],
}


@pytest.mark.parametrize("pieces", CASES.values(), ids=CASES.keys())
def test_stack_makes_what_objects_made_into_categories_make(pieces: list[pd.DataFrame]) -> None:
    got = stack(pieces, "runs")
    assert_frame_equal(got, through_objects(pieces))
    for column in ("agent", "status", "parent_run_id"):
        assert got[column].cat.categories.dtype == through_objects(pieces)[column].cat.categories.dtype, column
