"""``assert_frame_equal`` for the suite: pandas' own, after a whole-frame check that settles plainly equal frames.

pandas' ``assert_frame_equal`` compares column by column through per-element paths (arrow-backed texts
and categories are boxed value by value): it was a seventh of the fast tier's CPU, nearly all of it on
frames that were equal. ``DataFrame.equals`` compares blocks whole. The quick check takes only what the trace
frames are, and only where ``equals`` is at least as strict as pandas' check: plain axes (a ``RangeIndex`` or
an ``Index``, neither a ``MultiIndex``, a ``CategoricalIndex`` nor one with a ``freq``) of the same type,
dtype, inferred type and names, the same dtypes with each category's order, and no missing value in an
object column (``equals`` takes ``None`` for ``NaN`` there; pandas does not). Anything else goes to pandas'
check, which also says what differs.
"""

from __future__ import annotations

from typing import Any

import pandas as pd


def _plain_axis(left: pd.Index, right: pd.Index) -> bool:
    return (
        type(left) is type(right)
        and type(left) in (pd.RangeIndex, pd.Index)
        and left.dtype == right.dtype
        and list(left.names) == list(right.names)
        and left.inferred_type == right.inferred_type
    )


def _plainly_equal(left: Any, right: Any) -> bool:
    """Whether the frames are equal as pandas' check would find them, by the whole-frame path."""
    if not (type(left) is type(right) is pd.DataFrame) or not left.equals(right):
        return False
    if not (_plain_axis(left.index, right.index) and _plain_axis(left.columns, right.columns)):
        return False
    if left.flags.allows_duplicate_labels != right.flags.allows_duplicate_labels:
        return False
    for position, (a, b) in enumerate(zip(left.dtypes, right.dtypes, strict=True)):
        if a != b or (isinstance(a, pd.CategoricalDtype) and list(a.categories) != list(b.categories)):
            return False
        if str(a) == "object" and left.iloc[:, position].isna().any():
            return False
    return True


def assert_frame_equal(left: Any, right: Any, **options: Any) -> None:
    """``pandas.testing.assert_frame_equal(left, right, **options)``, settled at once for plainly equal frames."""
    if _plainly_equal(left, right):
        return
    pd.testing.assert_frame_equal(left, right, **options)
