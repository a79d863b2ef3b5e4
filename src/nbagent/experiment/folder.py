"""An experiment's folder: its files (the manifest, each run's row and scores, rescored scores), read back as results.

An experiment with ``output=folder`` is a Batch dataset (:mod:`nbagent.batch`) whose parts hold one more
table, ``experiment`` (a row per run: its variant, task, repeat, status, figures and scores), and three
kinds of files beside the parts, each written whole (:func:`~nbagent.trace.dataset.write_whole`)::

    folder/tasks.parquet               # the tasks; its metadata: variants, repeats, scorers' kinds
    folder/rescored/<scorer>.parquet   # exp.rescore(scorer): run_id, the score, its error
    folder/judges/...                  # LLM judges: their runs (a trace dataset) and <name>.cache.parquet

:func:`results_frame` makes the results from these (one row per variant x task x repeat, the task's
best run: an ok one, else the latest), whether the runs are in memory or in the folder, so a live
experiment and :func:`~nbagent.load_experiment` give the same frame.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _check as check
from ..trace.dataset import committed_tables, read_whole

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FAILED",
    "STATUSES",
    "TABLE",
    "counting_failed",
    "grid_frame",
    "read_manifest",
    "rescored",
    "results_frame",
    "score_names",
    "stored_rows",
]

TABLE = "experiment"
"""The table of the experiment's rows in each part of its dataset."""
STATUSES = ("ok", "tool_error", "error", "timeout", "cancelled")
"""How a run ended: ok; ok but a tool call gave an error (``tool_error``, as the explorer says); error;
timeout; cancelled (or never run)."""
FAILED: dict[str, str] = {
    "fail": "a run that failed (error, timeout) counts as a fail of each pass/fail score (a number: missing)",
    "missing": "a run that failed (error, timeout) has no score: it is left out, counted as missing",
}
"""How the statistics count a run that failed (``failed=`` of ``summary`` and ``compare``), in plain words."""
META = b"nbagent.experiment"
"""The key of the manifest in ``tasks.parquet``'s metadata (and of the kinds in each part's table)."""
TASKS_FILE = "tasks.parquet"
RESCORED = "rescored"
JUDGES = "judges"

FIXED: dict[str, str] = {
    "task_key": "string",
    "task_index": "int64",
    "variant": "string",
    "task_id": "string",
    "repeat": "int64",
    "run_id": "string",
    "status": "string",
    "tokens": "int64",
    "latency_s": "float64",
    "tool_calls": "int64",
    "tool_errors": "int64",
    "error": "string",
    "ended_at": "timestamp",
}
"""The stored row's columns before the scores (arrow types by name); each score is stored as a float64
(a pass as 1.0) with its ``<name>_error`` text."""


def arrow_schema(scorers: Sequence[str], kinds: Mapping[str, str | None], variants: Sequence[str]) -> Any:
    """The schema of a part's ``experiment`` table: :data:`FIXED`, then each scorer's value and error,
    with the kinds and variants in its metadata."""
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "timestamp": pa.timestamp("us", tz="UTC"),
    }
    fields = [(name, types[kind]) for name, kind in FIXED.items()]
    for name in scorers:
        fields += [(name, pa.float64()), (f"{name}_error", pa.string())]
    meta = {"kinds": dict(kinds), "variants": list(variants)}
    return pa.schema(fields, metadata={META: json.dumps(meta).encode()})


def read_manifest(folder: Path) -> tuple[pd.DataFrame, dict[str, Any]] | None:
    """The tasks and the manifest (``variants``, ``repeats``, ``scorers``, ``kinds``) of the experiment
    in ``folder``; ``None`` where there is none."""
    table = read_whole(folder / TASKS_FILE)
    if table is None:
        return None
    meta = (table.schema.metadata or {}).get(META)
    if meta is None:
        raise ValueError(f"{folder / TASKS_FILE}: not an experiment's tasks file (no manifest in its metadata)")
    return table.to_pandas(), json.loads(meta)


def stored_rows(folder: Path) -> tuple[pd.DataFrame | None, dict[str, str]]:
    """Every committed part's ``experiment`` rows (of every session), and the scorers' kinds their
    metadata names; ``None`` when no part is committed."""
    import pyarrow as pa

    tables = []
    kinds: dict[str, str] = {}
    for table in committed_tables(folder, TABLE):
        meta = (table.schema.metadata or {}).get(META)
        if meta is not None:
            kinds.update((k, v) for k, v in json.loads(meta)["kinds"].items() if v is not None)
        tables.append(table.replace_schema_metadata(None))
    if not tables:
        return None, kinds
    return pa.concat_tables(tables, promote_options="default").to_pandas(), kinds


def rescored(folder: Path) -> dict[str, tuple[pd.DataFrame, str | None]]:
    """The scores :meth:`Experiment.rescore` wrote, by scorer: (run_id, value, error) rows and the kind."""
    found: dict[str, tuple[pd.DataFrame, str | None]] = {}
    root = folder / RESCORED
    if not root.is_dir():
        return found
    for path in sorted(root.glob("*.parquet")):
        table = read_whole(path)
        meta = json.loads((table.schema.metadata or {}).get(META, b"{}"))
        found[str(meta.get("name", path.stem))] = (table.replace_schema_metadata(None).to_pandas(), meta.get("kind"))
    return found


def grid_frame(task_ids: Sequence[str], variants: Sequence[str], repeats: int) -> pd.DataFrame:
    """One row per variant x task x repeat (``task_key``, ``variant``, ``task_id``, ``repeat``,
    ``task_index``), variants first, then tasks, then repeats."""
    import numpy as np
    import pandas as pd

    n, v = len(task_ids), len(variants)
    positions = np.tile(np.repeat(np.arange(n), repeats), v)
    repeat = np.tile(np.arange(repeats), n * v)
    names = np.repeat(np.asarray(variants, dtype=object), n * repeats)
    ids = np.asarray(task_ids, dtype=object)[positions] if n else np.asarray([], dtype=object)
    keys = [f"{a}/{b}/{c}" for a, b, c in zip(names.tolist(), ids.tolist(), repeat.tolist())]
    return pd.DataFrame({"task_key": keys, "variant": names, "task_id": ids, "repeat": repeat, "task_index": positions})


def results_frame(
    grid: pd.DataFrame,
    stored: pd.DataFrame | None,
    scorers: Sequence[str],
    kinds: Mapping[str, str | None],
    variants: Sequence[str],
    overlays: Mapping[str, tuple[pd.DataFrame, str | None]] = {},  # noqa: B006  (read only)
) -> pd.DataFrame:
    """The results: one row per row of ``grid`` (:func:`grid_frame`), from its best ``stored`` row (an ok
    or tool_error one, else the latest ended), the scores of ``overlays`` (rescored) over the stored
    ones; a task with no row is ``cancelled`` (never run). Columns: ``variant`` (category, in the order
    of ``variants``), ``task_id`` (string), ``repeat`` (Int64), ``run_id`` (string), ``status``
    (category, :data:`STATUSES`), each scorer (``boolean`` for pass/fail, else ``float64``) and its
    ``<name>_error`` (string), ``tokens`` (Int64), ``latency_s`` (float64), ``tool_calls`` (Int64),
    ``tool_errors`` (Int64), ``error`` (string)."""
    import numpy as np
    import pandas as pd

    keys = grid["task_key"]
    if stored is not None and len(stored):
        good = stored["status"].isin(["ok", "tool_error"]).astype("int8")
        ranked = stored.assign(_good=good).sort_values(["_good", "ended_at"], na_position="first", kind="stable")
        best = ranked.drop_duplicates("task_key", keep="last").set_index("task_key")
        found = best.reindex(keys.tolist())
    else:
        found = pd.DataFrame(index=pd.Index(keys.tolist()))

    def column(name: str) -> Any:
        return found[name].to_numpy(dtype=object) if name in found else np.full(len(grid), None, dtype=object)

    run_ids = pd.array(column("run_id"), dtype="string")
    out: dict[str, Any] = {
        "variant": pd.Categorical(grid["variant"].tolist(), categories=list(variants)),
        "task_id": pd.array(grid["task_id"].tolist(), dtype="string"),
        "repeat": pd.array(grid["repeat"].tolist(), dtype="Int64"),
        "run_id": run_ids,
        "status": pd.Categorical(
            [s if isinstance(s, str) else "cancelled" for s in column("status")], categories=list(STATUSES)
        ),
    }
    runs = column("run_id").tolist()
    for name in scorers:
        value_list, error_list = column(name).tolist(), column(f"{name}_error").tolist()
        overlay = overlays.get(name)
        if overlay is not None:  # rescored: its rows (the last of a run) over the stored scores
            given = overlay[0]
            by_run = dict(zip(given["run_id"].tolist(), zip(given["value"].tolist(), given["error"].tolist())))
            for at, run in enumerate(runs):
                hit = by_run.get(run)
                if hit is not None:
                    value_list[at], error_list[at] = hit
        values = pd.array(value_list, dtype="Float64")
        errors = pd.array(error_list, dtype="string")
        if kinds.get(name) == "pass/fail":
            out[name] = values.astype("boolean")
        else:
            out[name] = values.astype("float64")
        out[f"{name}_error"] = errors
    out["tokens"] = pd.array(column("tokens"), dtype="Int64")
    out["latency_s"] = pd.array(column("latency_s"), dtype="Float64").astype("float64")
    out["tool_calls"] = pd.array(column("tool_calls"), dtype="Int64")
    out["tool_errors"] = pd.array(column("tool_errors"), dtype="Int64")
    out["error"] = pd.array(column("error"), dtype="string")
    return pd.DataFrame(out)


def score_names(results: pd.DataFrame) -> list[str]:
    """The score columns of ``results`` (:func:`results_frame`): those with a ``<name>_error`` beside them."""
    return [str(name) for name in results.columns if f"{name}_error" in results.columns]


def counting_failed(results: pd.DataFrame, failed: str, where: str) -> pd.DataFrame:
    """``results`` as the statistics count them (``failed``, a key of :data:`FAILED`): with ``"fail"``, each
    pass/fail score of a run that failed (status error or timeout) is a fail; with ``"missing"``, as they
    are (no score). A run never run (cancelled) and a scorer that raised stay missing either way."""
    import pandas as pd

    check.choice(where, "failed", failed, list(FAILED))
    if failed == "missing":
        return results
    lost = results["status"].isin(["error", "timeout"]).to_numpy()
    out = results.copy()
    for name in score_names(results):
        if pd.api.types.is_bool_dtype(out[name].dtype):
            out[name] = out[name].mask(lost, False)
    return out
