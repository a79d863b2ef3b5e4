"""``assert_frame_equal`` for the suite: pandas' own, after a whole-frame check that settles equal frames at once.

pandas' ``assert_frame_equal`` compares column by column through per-element paths (arrow-backed texts
and categories are boxed value by value): it was a seventh of the fast tier's CPU, nearly all of it on
frames that were equal. ``DataFrame.equals`` compares blocks whole. Where it finds the frames equal, and
the details it leaves out match too (the axes' types and names, each category's order), no option of
pandas' check could fail; anything else goes to pandas' check, which says what differs.
"""

from __future__ import annotations

from typing import Any

import pandas as pd


def _same_axis(left: pd.Index, right: pd.Index) -> bool:
    return type(left) is type(right) and left.dtype == right.dtype and list(left.names) == list(right.names)


def _plainly_equal(left: Any, right: Any) -> bool:
    """Whether the frames are equal down to dtypes, axes' types and names and category order."""
    if not (isinstance(left, pd.DataFrame) and isinstance(right, pd.DataFrame)):
        return False
    if type(left) is not type(right) or not left.equals(right):
        return False
    if not (_same_axis(left.index, right.index) and _same_axis(left.columns, right.columns)):
        return False
    if (
        isinstance(left.index, pd.DatetimeIndex)
        or left.flags.allows_duplicate_labels != right.flags.allows_duplicate_labels
    ):
        return False  # an index's freq: pandas' check has the last word
    for (_, a), (_, b) in zip(left.dtypes.items(), right.dtypes.items(), strict=True):
        if a != b or (isinstance(a, pd.CategoricalDtype) and list(a.categories) != list(b.categories)):
            return False
    return True


def assert_frame_equal(left: Any, right: Any, **options: Any) -> None:
    """``pandas.testing.assert_frame_equal(left, right, **options)``, settled at once for equal frames."""
    if _plainly_equal(left, right):
        return
    pd.testing.assert_frame_equal(left, right, **options)
