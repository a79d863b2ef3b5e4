"""Combining the tables of several traces (sessions, or parts of one) into one set of tables.

``pd.concat`` of separately loaded traces turns every category column whose categories differ into
``object`` and leaves the context snapshots pointing at the wrong rows. :func:`combine` keeps
:data:`~nbagent.trace.COLUMNS`' dtypes (categories become the union of the parts') and shifts each
part's snapshot positions (``snapshots.event_row``) and log ids (``context_logs.log``,
``snapshots.log``) past those of the parts before it, so the context at any point of any part is
still found. ``load_parquet`` of a dataset and :func:`nbagent.concat` both use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from .schema import COLUMNS, CONTEXT_TABLES, TABLES, category_dtype, empty

if TYPE_CHECKING:
    import pandas as pd

ALL_TABLES = (*TABLES, *CONTEXT_TABLES)


def cast(df: pd.DataFrame, table: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """``df`` (every column of ``table``, or ``columns`` of them) with the dtypes of :data:`COLUMNS`
    (in place where a column differs)."""
    for column, (dtype, _) in COLUMNS[table].items():
        if columns is not None and column not in columns:
            continue
        if str(df[column].dtype) != dtype:
            df[column] = df[column].astype(dtype)
    return df


def stack(pieces: Sequence[pd.DataFrame], table: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The rows of ``pieces`` (frames of ``table``, or of its ``columns``) as one frame, in order, with
    :data:`COLUMNS`' dtypes (a category column's categories: the union of the pieces', sorted)."""
    import pandas as pd

    if not pieces:
        frame = empty(table)
        return frame if columns is None else frame[list(columns)]
    if len(pieces) == 1:
        return cast(pieces[0], table, columns)
    order = list(pieces[0].columns)
    categories = [column for column, (dtype, _) in COLUMNS[table].items() if dtype == "category" and column in order]
    joined = {column: _joined([piece[column] for piece in pieces]) for column in categories}
    rest = [piece.drop(columns=[column for column, values in joined.items() if values is not None]) for piece in pieces]
    through_objects = {column: "object" for column, values in joined.items() if values is None}  # pandas infers
    frame = pd.concat([piece.astype(through_objects) for piece in rest] if through_objects else rest, ignore_index=True)
    for column in categories:  # left to right, each at its place
        if (values := joined[column]) is not None:
            frame.insert(order.index(column), column, values)
    return cast(frame, table, columns)


def _joined(columns: Sequence[pd.Series]) -> pd.Categorical | None:
    """The category ``columns`` one after the other as one ``Categorical`` of the dtype ``astype("category")``
    gives their values as objects: the texts they hold, sorted (:func:`~nbagent.trace.schema.category_dtype`;
    categories no row holds left out), their codes mapped to it. ``None`` where one is not a category column
    or holds a value that is not a text."""
    import numpy as np
    import pandas as pd

    if not all(isinstance(column.dtype, pd.CategoricalDtype) for column in columns):
        return None
    codes = [column.cat.codes.to_numpy() for column in columns]
    held = {name for column, own in zip(columns, codes) for name in column.cat.categories[np.unique(own[own >= 0])]}
    if not all(type(name) is str for name in held):
        return None
    dtype = category_dtype(sorted(held))
    # each column's codes through its categories' places in the dtype's, a null (-1) to the appended -1
    lookups = [np.append(dtype.categories.get_indexer(column.cat.categories), -1) for column in columns]
    return pd.Categorical.from_codes(np.concatenate([at[own] for at, own in zip(lookups, codes)]), dtype=dtype)


def combine(parts: Sequence[Mapping[str, pd.DataFrame]]) -> dict[str, pd.DataFrame]:
    """One set of tables from ``parts`` (each: every table of :data:`ALL_TABLES`), rows in the parts'
    order, with :data:`COLUMNS`' dtypes; snapshot rows and log ids shifted to stay right."""
    pieces: dict[str, list[pd.DataFrame]] = {table: [] for table in ALL_TABLES}
    events_seen = 0
    logs_seen = 0
    for part in parts:
        snaps, logs = part["snapshots"], part["context_logs"]
        if events_seen or logs_seen:  # a snapshot's row and log are positions in its part: shift them
            snaps = snaps.assign(event_row=snaps["event_row"].astype("Int64") + events_seen)
            snaps = snaps.assign(log=snaps["log"].astype("Int64") + logs_seen)
            logs = logs.assign(log=logs["log"].astype("Int64") + logs_seen)
        tables = {**part, "snapshots": snaps, "context_logs": logs}
        events_seen += len(tables["events"])
        known = tables["context_logs"]["log"].dropna()
        logs_seen = max(logs_seen, int(known.max()) + 1) if len(known) else logs_seen
        for table in ALL_TABLES:
            pieces[table].append(tables[table])
    return {table: stack(pieces[table], table) for table in ALL_TABLES}
