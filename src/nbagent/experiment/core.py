"""``Experiment``: variants of an agent over a dataset of tasks, repeated, scored as each run ends.

::

    exp = nbagent.Experiment(
        tasks,                                        # a DataFrame: task_id, task, and fields (expected...)
        variants={"short": agent_a, "careful": make_b},   # an agent (copied per run) or row -> agent
        scorers=[nbagent.exact_match(), few_tools],   # (output, row) -> bool | float, or (run) -> ...
        repeats=3,
        output="runs/exp1",                           # optional: one dataset, resumed by a second run()
    )
    await exp.run()        # or exp.run_sync()
    exp.results            # one row per variant x task x repeat: status, scores, tokens, latency
    exp.summary()          # per variant: each score's mean and 95% interval, pass@k, pass^k, tokens
    exp.rescore(scorer)    # add or replace a score on the recorded runs, no agent's model called

Every variant x task x repeat is one task of ONE :class:`~nbagent.Batch` (bounded concurrency, retries,
timeouts, progress, resume; its key ``variant/task_id/repeat``), so the runs are the loop's runs and
``exp.trace`` is the batch's trace. The scores are computed as each run ends (a run not ok is not
scored: its scores are null) and kept in the batch's :class:`~nbagent.batch.TaskTable` (with
``output=``, in each part of the dataset: :mod:`nbagent.experiment.folder`).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _check as check
from ..agent import AssistantAgent
from ..batch import Batch, BatchProgress, TaskEnd, agent_copier
from ..render.experiment import summary_html, summary_text
from ..sync import entry_point, run_coroutine
from ..trace import committed_files
from ..trace.dataset import committed_tables, read_whole, write_whole
from ..trace.loaded import LazyTrace
from .compare import VariantComparison, compare_variants, view_of
from .folder import (
    FAILED,
    JUDGES,
    META,
    RESCORED,
    TABLE,
    TASKS_FILE,
    arrow_schema,
    counting_failed,
    grid_frame,
    read_manifest,
    rescored,
    results_frame,
    score_names,
    stored_rows,
)
from .scorers import Judge, Scorer, as_scorer, score_into

if TYPE_CHECKING:
    import pandas as pd

    from ..trace.base import TraceFrames

__all__ = ["Experiment"]

Variant = AssistantAgent | Callable[[Mapping[str, Any]], AssistantAgent]
WHERE = "Experiment"


class _Scoring:
    """The experiment's :class:`~nbagent.batch.TaskTable`: each run's row (its variant, task, repeat,
    status, figures) with its scores, computed as the run ends."""

    name = TABLE

    def __init__(
        self, keys: Mapping[str, tuple[str, int, int]], rows: list[dict[str, Any]], variants: list[str], keep: bool
    ) -> None:
        self.keys = keys  # task key -> (variant, task position, repeat)
        self.task_rows = rows  # the tasks' fields, by position
        self.task_ids = [str(row["task_id"]) for row in rows]
        self.variants = variants
        self.scorers: dict[str, Scorer] = {}
        self.keep = keep  # without output=: the rows are kept here (with output=, in the folder's parts)
        self.memory: dict[str, dict[str, Any]] = {}  # the last row of each task key, when kept

    async def row(self, end: TaskEnd) -> dict[str, Any]:
        variant, position, repeat = self.keys[end.key]
        status = "tool_error" if end.status == "ok" and end.tool_errors else end.status
        record: dict[str, Any] = {
            "task_key": end.key,
            "task_index": position,
            "variant": variant,
            "task_id": self.task_ids[position],
            "repeat": repeat,
            "run_id": end.run_id,
            "status": status,
            "tokens": end.tokens,
            "latency_s": end.duration_s,
            "tool_calls": end.tool_calls,
            "tool_errors": end.tool_errors,
            "error": end.error,
            "ended_at": datetime.now(UTC),
            "answer": end.answer,  # kept in memory for rescoring (the batch's results hold it in the folder)
        }
        if end.status == "ok" and end.run_id is not None:
            frames: list[TraceFrames] = []

            def run() -> TraceFrames:
                if not frames:
                    frames.append(end.trace.run(str(end.run_id)))
                return frames[0]

            await score_into(record, self.scorers.values(), end.answer, self.task_rows[position], run, end.token)
        if self.keep:
            self.memory[end.key] = record
        return record

    def table(self, rows: list[dict[str, Any]]) -> Any:
        import pyarrow as pa

        schema = arrow_schema(list(self.scorers), {n: s.kind for n, s in self.scorers.items()}, self.variants)
        return pa.Table.from_pylist(rows, schema=schema)


class Experiment:
    """Variants of an agent over the same tasks, repeated, scored as each run ends (see the module).

    ``tasks``: a DataFrame with a ``task_id`` column (unique) and a ``task`` column (a str, a chat
    message or a list of them); its other columns are the task's fields, given to the scorers and to a
    variant that is a function. ``variants``: ``{name: variant}``, a variant an ``AssistantAgent`` (each
    run gets a copy, with a fresh context) or a function given the task's row (a dict of its fields)
    that returns a new agent. ``scorers``: functions ``(output, row) -> bool | float`` or
    :class:`~nbagent.experiment.Scorer` objects (built in: :func:`~nbagent.exact_match`,
    :func:`~nbagent.contains`, :func:`~nbagent.regex`, :func:`~nbagent.numeric`,
    :func:`~nbagent.llm_judge`). ``repeats``: runs of each variant on each task (for pass@k, pass^k).
    ``output``: a folder to write the runs and scores to as they end; running again on it runs only
    what is not done. ``concurrency``, ``timeout``, ``retries``, ``progress``, ``part_size`` and
    ``title`` are the :class:`~nbagent.Batch`'s.
    """

    _batch: Batch | None

    def __init__(
        self,
        tasks: pd.DataFrame,
        variants: Mapping[str, Variant],
        scorers: Sequence[Scorer | Callable[..., Any]] = (),
        *,
        repeats: int = 1,
        output: str | os.PathLike[str] | None = None,
        concurrency: int = 16,
        timeout: float | None = 60.0,
        retries: int = 3,
        progress: str | Callable[[BatchProgress], object] | None = "auto",
        part_size: int = 1000,
        title: str | None = None,
    ) -> None:
        repeats = check.integer(WHERE, "repeats", repeats, minimum=1) or 1
        if output is not None:
            check.instance(WHERE, "output", output, (str, os.PathLike), "a folder (str or Path) or None")
        names, makers = _checked_variants(variants)
        self._setup(_checked_tasks(tasks), repeats, None if output is None else Path(output), names, makers)
        self.variants.update((name, variants[name]) for name in names)
        for index, value in enumerate(check.sequence(WHERE, "scorers", scorers, "a list of scorers")):
            self._add_scorer(as_scorer(value, WHERE, f"scorers[{index}]"), f"scorers[{index}]")
        if self.output is not None:
            self._adopt_folder()
        if makers:
            self._batch = self._batch_of(
                self._grid_tasks(),
                concurrency=concurrency,
                timeout=timeout,
                retries=retries,
                progress=progress,
                part_size=part_size,
                title=title or f"experiment: {len(names)} variants × {len(self.tasks):,} tasks × {self.repeats}",
            )

    def _batch_of(self, frame: pd.DataFrame, **options: Any) -> Batch:
        """The Batch of the runs of ``frame`` (rows of :meth:`_grid_tasks`): this experiment's agents and
        scoring table, into its folder; ``options`` are the Batch's (concurrency, timeout, title...)."""
        return Batch(
            self._make_agent,
            frame,
            output=self.output,
            key="task_key",
            group="variant",
            task_table=self._scoring,
            **options,
        )

    # ------------------------------------------------------------------ building

    def _setup(
        self,
        tasks: pd.DataFrame,
        repeats: int,
        output: Path | None,
        names: list[str],
        makers: dict[str, Callable[[Mapping[str, Any]], AssistantAgent]],
    ) -> None:
        """What a new experiment and one read from its folder share: the tasks, the grid of runs, the
        scoring table (no scorer yet), no batch."""
        #: The tasks (``task_id`` as text, the index reset).
        self.tasks = tasks
        self.repeats = repeats
        self.output = output
        #: The variants, by name (agents or functions; ``None`` for an experiment read by ``load_experiment``).
        self.variants: dict[str, Variant | None] = dict.fromkeys(names)
        self._makers = makers
        self._grid = grid_frame(tasks["task_id"].tolist(), names, repeats)
        grid = self._grid
        positions = zip(grid["variant"].tolist(), grid["task_index"].tolist(), grid["repeat"].tolist())
        keys = dict(zip(grid["task_key"].tolist(), positions))
        self._scoring = _Scoring(keys, tasks.to_dict("records"), names, keep=output is None)
        self._batch = None

    def _grid_tasks(self) -> pd.DataFrame:
        import numpy as np
        import pandas as pd

        positions = self._grid["task_index"].to_numpy()
        task_values = np.asarray(self.tasks["task"].to_numpy(dtype=object))[positions] if len(positions) else []
        return pd.DataFrame(
            {
                "task": list(task_values),
                "task_key": self._grid["task_key"].tolist(),
                "variant": self._grid["variant"].tolist(),
            }
        )

    def _make_agent(self, row: Any) -> AssistantAgent:
        variant, position, _ = self._scoring.keys[str(row["task_key"])]
        return self._makers[variant](dict(self._scoring.task_rows[position]))

    def _add_scorer(self, scorer: Scorer, param: str) -> None:
        if scorer.name in self._scoring.scorers:
            raise check.wrong_value(
                WHERE, param, "a scorer of a name no other scorer has", scorer.name, "pass name=..."
            )
        self._scoring.scorers[scorer.name] = scorer

    def _adopt_folder(self) -> None:
        """An output folder holding this experiment already: the same tasks and repeats (else a
        ValueError naming ``output``); its variants and scorers' kinds are kept beside these."""
        assert self.output is not None
        found = read_manifest(self.output)
        if found is None:
            return
        tasks, manifest = found
        if (
            tasks["task_id"].astype(str).tolist() != self.tasks["task_id"].tolist()
            or manifest["repeats"] != self.repeats
        ):
            raise check.wrong_value(
                WHERE,
                "output",
                "a new folder, or one of an experiment of the same tasks (task_id, in order) and repeats",
                str(self.output),
                "the folder holds another experiment's runs: give another output folder",
            )
        for name, kind in manifest.get("kinds", {}).items():
            scorer = self._scoring.scorers.get(name)
            if scorer is not None and scorer.kind is None:
                scorer.kind = kind

    @classmethod
    def open(cls, folder: Path) -> Experiment:
        """The experiment written to ``folder``, read offline (:func:`~nbagent.load_experiment`)."""
        found = read_manifest(folder)
        if found is None:
            raise check.wrong_value(
                "load_experiment", "folder", f"the output folder of an Experiment (with {TASKS_FILE})", str(folder)
            )
        tasks, manifest = found
        exp = cls.__new__(cls)
        cls._setup(exp, _checked_tasks(tasks), int(manifest["repeats"]), folder, list(manifest["variants"]), {})
        return exp

    # ------------------------------------------------------------------ running

    @entry_point("exp.run()", "exp.run_sync()")
    async def run(self) -> Experiment:
        """Run every variant x task x repeat not done yet (with ``output=``: not committed to the folder by
        an earlier run), scoring each run as it ends; returns the experiment."""
        await self._run_batch(self._running_batch())
        return self

    async def _run_batch(self, batch: Batch) -> None:
        if self.output is not None:  # the folder's files, read and written off the event loop
            await asyncio.to_thread(self._open_folder)
        try:
            await batch.run()
        finally:
            if self.output is not None:
                await asyncio.to_thread(self._close_folder)

    async def run_part(self, keys: Collection[str], session: str) -> Batch:
        """Run the runs of the grid whose task keys (``variant/task_id/repeat``) are in ``keys`` alone, as a
        :class:`~nbagent.Batch` of their own (this experiment's agents, scorers and options) writing session
        ``session`` of the output folder: one partition of the experiment, run where
        :func:`nbagent.spark.run_experiment` sends it. Returns that batch."""
        batch = self._running_batch()
        if self.output is None:
            raise RuntimeError("Experiment.run_part: the experiment has no output folder to write its part to")
        frame = self._grid_tasks()
        part = self._batch_of(
            frame[frame["task_key"].isin(set(keys))].reset_index(drop=True),
            concurrency=batch.concurrency,
            timeout=batch.timeout,
            retries=batch.retries,
            progress=None,
            part_size=batch.part_size,
            title=f"{batch.title} (session {session})",
            session=session,
        )
        await self._run_batch(part)
        return part

    def _open_folder(self) -> None:
        """Before a run: the manifest written (the tasks, variants, scorers), the judges' caches read."""
        self._write_manifest()
        for judge in self._judges():
            self._load_judge(judge)

    def _close_folder(self) -> None:
        """After a run: the scorers' kinds in the manifest, the judges' caches and runs written."""
        self._write_manifest()
        for judge in self._judges():
            self._save_judge(judge)

    def run_sync(self) -> Experiment:
        """:meth:`run` without ``await``: in a script, and inside a notebook cell."""
        return run_coroutine(
            self.run,
            "the experiment was interrupted (Ctrl-C or a kernel interrupt); the runs that ended are in exp.results, "
            "and exp.run_sync() again runs the others",
        )

    def stop(self) -> None:
        """Stop the running experiment: its batch's runs are cancelled, the ended ones kept."""
        if self._batch is not None:
            self._batch.stop()

    def _running_batch(self) -> Batch:
        if self._batch is None:
            raise RuntimeError(
                "this experiment was read from its folder (load_experiment): it has no agents to run; "
                "build Experiment(tasks, variants, ..., output=folder) again to run what is not done"
            )
        return self._batch

    @property
    def batch(self) -> Batch | None:
        """The :class:`~nbagent.Batch` every run goes through (``None`` for a loaded experiment)."""
        return self._batch

    @property
    def scorers(self) -> dict[str, Scorer]:
        """The scorers, by name (those of a loaded experiment: by :meth:`rescore` only)."""
        return dict(self._scoring.scorers)

    def progress(self) -> BatchProgress | None:
        """Where the experiment's batch is now (``None`` for a loaded experiment)."""
        return None if self._batch is None else self._batch.progress()

    # ------------------------------------------------------------------ results

    def _scores_known(self, found: tuple[pd.DataFrame, dict[str, Any]] | None) -> tuple[list[str], dict[str, Any]]:
        """The scorers' names (the folder's manifest's, ``found``, first) and their kinds."""
        names: list[str] = [] if found is None else list(found[1].get("scorers", []))
        names += [n for n in self._scoring.scorers if n not in names]
        kinds: dict[str, Any] = {} if found is None else dict(found[1].get("kinds", {}))
        kinds.update((n, s.kind) for n, s in self._scoring.scorers.items() if s.kind is not None)
        return names, kinds

    @property
    def results(self) -> pd.DataFrame:
        """One row per variant x task x repeat, in the order of ``variants``, then of the tasks, then the
        repeats: ``variant``, ``task_id``, ``repeat``, ``run_id``, ``status``, each score (and its
        ``<name>_error``), ``tokens``, ``latency_s``, ``tool_calls``, ``tool_errors``, ``error``
        (:func:`~nbagent.experiment.folder.results_frame`). A task not run yet is ``cancelled``."""
        if self._batch is not None and self._batch.state == "running" and self.output is not None:
            raise RuntimeError("Experiment.results: with output= it is read from the folder once the run has ended")
        stored, kinds = self._stored()
        names, known = self._scores_known(None if self.output is None else read_manifest(self.output))
        kinds.update(known)
        overlays = {} if self.output is None else rescored(self.output)
        for name, (_, kind) in overlays.items():
            if kind is not None:
                kinds.setdefault(name, kind)
        names += [n for n in overlays if n not in names]
        return results_frame(self._grid, stored, names, kinds, list(self.variants), overlays)

    def _stored(self) -> tuple[pd.DataFrame | None, dict[str, str | None]]:
        import pandas as pd

        if self.output is not None:
            stored, kinds = stored_rows(self.output)
            return stored, dict(kinds)
        rows = list(self._scoring.memory.values())
        return (pd.DataFrame.from_records(rows) if rows else None), {}

    def summary(self, k: int | None = None, confidence: float = 0.95, *, failed: str = "fail") -> pd.DataFrame:
        """Per variant: runs, ok runs, each score's mean with its ``confidence`` interval (Wilson's for a
        pass/fail score, a percentile bootstrap of the mean for a number), pass@k and pass^k of each
        pass/fail score over the repeats (``k``: default the repeats), mean tokens and latency
        (:func:`summarize`). ``failed``: ``"fail"`` (a run that failed, error or timeout, fails each
        pass/fail score, so a variant that crashes more looks worse) or ``"missing"`` (it is left out)."""
        return summarize(self.results, self.repeats, k, confidence, failed=failed)

    @property
    def trace(self) -> TraceFrames:
        """Every run of the experiment: the batch's trace (with ``output=``, the folder read lazily: every
        session's runs, those of earlier runs of the same folder too)."""
        if self.output is not None and committed_files(self.output, "runs"):
            return LazyTrace(self.output)
        if self._batch is None:
            raise RuntimeError(f"the experiment's folder {str(self.output)!r} holds no run yet")
        return self._batch.trace

    # ------------------------------------------------------------------ rescoring

    def rescore(self, scorer: Scorer | Callable[..., Any], *, variants: Sequence[str] | None = None) -> pd.DataFrame:
        """Score the recorded runs (every ok run, or those of ``variants``) with ``scorer``, adding its
        column or replacing the one of its name, without calling any agent's model (an LLM judge calls
        its own model for a prompt not in its cache); with ``output=`` the scores are written to the
        folder whole (``rescored/<name>.parquet``). Returns the results."""
        return run_coroutine(
            lambda: self.arescore(scorer, variants=variants),
            "rescoring was interrupted: no score of it was written",
        )

    @entry_point("exp.arescore(scorer)", "exp.rescore(scorer)")
    async def arescore(
        self, scorer: Scorer | Callable[..., Any], *, variants: Sequence[str] | None = None
    ) -> pd.DataFrame:
        """:meth:`rescore`, awaited (an ``async`` scorer or an LLM judge)."""
        where = "Experiment.rescore"
        found = as_scorer(scorer, where, "scorer")
        chosen = list(self.variants)
        if variants is not None:
            chosen = check.sequence(where, "variants", variants, "a list of variant names")
            for name in chosen:
                check.choice(where, "variants", name, list(self.variants), "names of variants among")
        if self._batch is not None and self._batch.state == "running":
            raise RuntimeError("Experiment.rescore: the experiment is running: rescore once it has ended")
        results = await asyncio.to_thread(lambda: self.results)  # the folder's files: off the event loop
        picked = results[results["status"].isin(["ok", "tool_error"]) & results["variant"].isin(chosen)]
        trace = self.trace if found.wants_run else None
        rows = self._scoring.task_rows
        positions = dict(zip(self.tasks["task_id"].tolist(), range(len(self.tasks))))
        answers = await asyncio.to_thread(self._answers, picked["run_id"].tolist())
        from ..cancellation import CancellationToken

        token = CancellationToken()
        scored: list[dict[str, Any]] = []
        if isinstance(found, Judge) and self.output is not None:
            await asyncio.to_thread(self._load_judge, found)
        for run_id, task_id in zip(picked["run_id"].tolist(), picked["task_id"].tolist()):
            record: dict[str, Any] = {"run_id": run_id}
            frames: list[TraceFrames] = []

            def run(run_id: str = run_id, frames: list[TraceFrames] = frames) -> TraceFrames:
                if not frames:
                    assert trace is not None
                    frames.append(trace.run(run_id))
                return frames[0]

            await score_into(record, [found], answers.get(run_id), rows[positions[task_id]], run, token)
            scored.append({"run_id": run_id, "value": record[found.name], "error": record[f"{found.name}_error"]})
        self._scoring.scorers[found.name] = found
        if self.output is not None:
            await asyncio.to_thread(self._save_rescored, found, scored)
        else:
            by_run = {record["run_id"]: record for record in self._scoring.memory.values()}
            for item in scored:
                record = by_run[item["run_id"]]
                record[found.name], record[f"{found.name}_error"] = item["value"], item["error"]
        return _with_score(results, found, scored)

    def _answers(self, run_ids: Sequence[str]) -> dict[str, str | None]:
        """The final answers of ``run_ids`` (the last message of each run)."""
        if not run_ids:
            return {}
        if self.output is None:
            answers = {record["run_id"]: record["answer"] for record in self._scoring.memory.values()}
        else:
            answers = {}
            for table in committed_tables(self.output, "results", ["run_id", "answer"]):
                data = table.to_pydict()
                answers.update(zip(data["run_id"], data["answer"]))
        return {run: (None if answers.get(run) is None else str(answers[run])) for run in run_ids}

    # ------------------------------------------------------------------ the folder's files

    def _write_manifest(self) -> None:
        assert self.output is not None
        found = read_manifest(self.output)
        variants = list(self.variants)
        scorers, kinds = self._scores_known(found)
        if found is not None:
            variants = [*found[1]["variants"], *(v for v in variants if v not in found[1]["variants"])]
        manifest = {"variants": variants, "repeats": self.repeats, "scorers": scorers, "kinds": kinds}
        table = _storable(self.tasks)
        write_whole(self.output / TASKS_FILE, table.replace_schema_metadata({META: json.dumps(manifest).encode()}))

    def _save_rescored(self, scorer: Scorer, scored: list[dict[str, Any]]) -> None:
        """After a rescoring: its scores, the manifest (the scorer's name and kind), a judge's cache and runs."""
        self._write_rescored(scorer, scored)
        self._write_manifest()
        if isinstance(scorer, Judge):
            self._save_judge(scorer)

    def _write_rescored(self, scorer: Scorer, scored: list[dict[str, Any]]) -> None:
        """The scores of ``scorer`` in ``rescored/<name>.parquet``, written whole: these, and those an
        earlier rescoring of the same name gave the runs not rescored now (another variant's)."""
        import pyarrow as pa

        assert self.output is not None
        path = self.output / RESCORED / f"{_file_name(scorer.name)}.parquet"
        before = read_whole(path, ["run_id", "value", "error"])
        if before is not None:
            now = {item["run_id"] for item in scored}
            scored = [item for item in before.to_pylist() if item["run_id"] not in now] + scored
        schema = pa.schema(
            [("run_id", pa.string()), ("value", pa.float64()), ("error", pa.string())],
            metadata={META: json.dumps({"name": scorer.name, "kind": scorer.kind}).encode()},
        )
        write_whole(path, pa.Table.from_pylist(scored, schema=schema))

    def _judges(self) -> list[Judge]:
        return [s for s in self._scoring.scorers.values() if isinstance(s, Judge)]

    def _load_judge(self, judge: Judge) -> None:
        assert self.output is not None
        table = read_whole(self.output / JUDGES / f"{_file_name(judge.name)}.cache.parquet")
        if table is not None:
            data = table.to_pydict()
            for key, answer, score in zip(data["key"], data["answer"], data["score"]):
                judge.cache.setdefault(key, (answer, score))

    def _save_judge(self, judge: Judge) -> None:
        """Its cache, whole, and its runs (a trace dataset: each run written once) in ``judges/``."""
        import pyarrow as pa

        assert self.output is not None
        self._load_judge(judge)  # what another process added meanwhile
        keys = list(judge.cache)
        table = pa.table(
            {
                "key": pa.array(keys, pa.string()),
                "answer": pa.array([judge.cache[k][0] for k in keys], pa.string()),
                "score": pa.array([judge.cache[k][1] for k in keys], pa.float64()),
            }
        )
        write_whole(self.output / JUDGES / f"{_file_name(judge.name)}.cache.parquet", table)
        if len(judge.trace):
            judge.trace.to_parquet(self.output / JUDGES)

    def __repr__(self) -> str:
        where = "" if self.output is None else f", output={str(self.output)!r}"
        return (
            f"Experiment({len(self.variants)} variants × {len(self.tasks):,} tasks × {self.repeats} repeats, "
            f"scorers {list(self._scoring.scorers)}{where})"
        )

    # ------------------------------------------------------------------ comparing and showing (issue 38 4, 5)

    def compare(
        self,
        a: str,
        b: str,
        *,
        confidence: float = 0.95,
        resamples: int = 2000,
        seed: int | None = 0,
        failed: str = "fail",
    ) -> VariantComparison:
        """Variants ``a`` and ``b`` compared task by task (:func:`~nbagent.experiment.compare.compare_variants`):
        ``.frame`` one row per task, ``.stats`` the paired statistics per score, ``.parting`` where the runs
        of each pair first part, counted; display it, or ``.view()`` for the widget. ``failed``: how a run
        that failed (error, timeout) counts: ``"fail"`` of each pass/fail score, or ``"missing"``."""
        return compare_variants(self, a, b, confidence=confidence, resamples=resamples, seed=seed, failed=failed)

    def view(self, a: str | None = None, b: str | None = None) -> Any:
        """The experiment as a widget (display it): the summary per variant, and variants ``a`` and ``b``
        (default the first two) compared task by task (:mod:`nbagent.notebook.experiment_view`)."""
        for param, name in (("a", a), ("b", b)):
            if name is not None and name not in self.variants:
                raise check.wrong_value(
                    f"{WHERE}.view", param, f"a variant ({', '.join(map(repr, self.variants))})", name
                )
        return view_of("experiment", self, a, b)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        """The summary per variant (HTML through the one renderer, and text); ``view()`` for the widget."""
        note = "exp.compare(a, b) compares two variants task by task; exp.view() is the widget"
        summary = self.summary()
        return {
            "text/html": str(summary_html(summary, title=repr(self), note=note)),
            "text/plain": summary_text(summary, title=repr(self), note=note),
        }


def _with_score(results: pd.DataFrame, scorer: Scorer, scored: list[dict[str, Any]]) -> pd.DataFrame:
    """``results`` with ``scorer``'s column (and its error's) set to ``scored`` (run_id, value, error) for
    those runs, kept for the others (null for a new column, put after the other scores): what reading
    the results again gives, without reading them again."""
    import pandas as pd

    name, error = scorer.name, f"{scorer.name}_error"
    by_run = {item["run_id"]: item for item in scored}
    runs = results["run_id"].astype(object).tolist()
    old = results[name].astype(object).tolist() if name in results else [None] * len(runs)
    old_errors = results[error].astype(object).tolist() if error in results else [None] * len(runs)
    values = [by_run[r]["value"] if r in by_run else v for r, v in zip(runs, old)]
    errors = [by_run[r]["error"] if r in by_run else e for r, e in zip(runs, old_errors)]
    out = results.copy()
    if name not in out:
        at = list(out.columns).index("tokens")
        out.insert(at, error, pd.array([None] * len(out), dtype="string"))
        out.insert(at, name, pd.array([None] * len(out), dtype="Float64"))
    column = pd.array([None if v is None or v is pd.NA else float(v) for v in values], dtype="Float64")
    out[name] = column.astype("boolean") if scorer.kind == "pass/fail" else column.astype("float64")
    out[error] = pd.array(errors, dtype="string")
    return out


def _file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def _storable(tasks: pd.DataFrame) -> Any:
    """The tasks as a pyarrow Table: the ``task`` column as text, a field pyarrow cannot store as text."""
    import pyarrow as pa

    from ..batch import task_text

    frame = tasks.copy()
    frame["task"] = [task_text(value) for value in frame["task"]]
    columns = {}
    for name in frame.columns:
        try:
            columns[str(name)] = pa.array(frame[name].tolist())
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
            columns[str(name)] = pa.array([None if v is None else str(v) for v in frame[name].tolist()], pa.string())
    return pa.table(columns)


def _checked_tasks(tasks: object) -> pd.DataFrame:
    """The tasks, checked: a DataFrame with ``task_id`` (unique, no null: as text) and ``task`` columns."""
    kind = type(tasks).__module__.split(".")[0] + "." + type(tasks).__name__
    if kind != "pandas.DataFrame":
        raise check.wrong_type(
            WHERE, "tasks", "a pandas DataFrame with a task_id and a task column", tasks,
            "pd.DataFrame({'task_id': [...], 'task': [...], 'expected': [...]})",
        )  # fmt: skip
    frame: Any = tasks
    missing = [name for name in ("task_id", "task") if name not in frame.columns]
    if missing:
        columns = ", ".join(map(str, frame.columns)) or "none"
        got = f"a DataFrame without {' and '.join(missing)} (its columns: {columns})"
        raise ValueError(check.message(WHERE, "tasks", "a DataFrame with a task_id and a task column", got))
    if frame["task_id"].isna().any():
        raise check.wrong_value(WHERE, "tasks", "tasks whose task_id is never null", "a null task_id")
    out = frame.reset_index(drop=True).copy()
    out["task_id"] = out["task_id"].astype(str)
    duplicated = out["task_id"][out["task_id"].duplicated()].unique().tolist()
    if duplicated:
        raise check.wrong_value(
            WHERE, "tasks", "tasks of distinct task_ids", f"task_id repeated: {', '.join(map(repr, duplicated[:5]))}"
        )
    return out


def _checked_variants(variants: object) -> tuple[list[str], dict[str, Callable[[Mapping[str, Any]], AssistantAgent]]]:
    """The variants' names (in order) and a maker of a fresh agent per run for each."""
    found = check.mapping(WHERE, "variants", variants, "a dict {name: agent or function(row) -> agent}")
    if not found:
        raise check.wrong_value(WHERE, "variants", "a dict of at least one variant {name: agent}", variants)
    makers: dict[str, Callable[[Mapping[str, Any]], AssistantAgent]] = {}
    for name, variant in found.items():
        param = f"variants[{name!r}]"
        if not isinstance(name, str) or not name or "/" in name:
            raise check.wrong_value(WHERE, "variants", "names that are non-empty str without '/'", name)
        if isinstance(variant, AssistantAgent):
            makers[name] = agent_copier(variant, f"{WHERE}: {param}")
        elif callable(variant) and not isinstance(variant, type):
            makers[name] = variant
        else:
            raise check.wrong_type(
                WHERE, param, "an AssistantAgent or a function (task row -> AssistantAgent)", variant
            )
    return list(found), makers


def summarize(
    results: pd.DataFrame, repeats: int, k: int | None = None, confidence: float = 0.95, *, failed: str = "fail"
) -> pd.DataFrame:
    """Per variant (the index, in the results' order) of ``results`` (:attr:`Experiment.results`):

    - ``runs``, ``ok`` (runs that answered: status ok or tool_error) and ``ok_rate``;
    - for each score ``s``: ``s_n`` (runs counted), ``s_mean`` and its ``confidence`` interval
      ``s_low``..``s_high``: Wilson's score interval for a pass/fail score, a percentile bootstrap of the
      mean (2,000 resamples, seed 0) for a number. ``failed`` says how a run that failed (error,
      timeout) counts (:data:`~nbagent.experiment.folder.FAILED`): ``"fail"``, a fail of each pass/fail
      score; ``"missing"``, left out. A run not run (cancelled) or whose scorer raised is left out;
    - for a pass/fail score, ``s_pass@k`` and ``s_pass^k`` (``k``: default the repeats): the unbiased
      estimates over each task's counted runs (a task with fewer than ``k`` is left out), averaged over
      the tasks;
    - ``tokens_mean``, ``tokens_total``, ``latency_s_mean`` and ``latency_s_p95`` of the runs.

    ``summary.attrs["intervals"]`` names the interval of each kind, ``summary.attrs["failed"]`` how a run
    that failed was counted."""
    import numpy as np
    import pandas as pd

    from .stats import bootstrap_ci, pass_at_k, pass_hat_k, wilson_ci

    where = "Experiment.summary"
    depth: int = check.integer(where, "k", k, minimum=1, maximum=repeats, none=True) or repeats
    level = float(check.number(where, "confidence", confidence) or 0.0)
    if not 0 < level < 1:
        raise check.wrong_value(where, "confidence", "a number between 0 and 1 (0.95: a 95% interval)", confidence)
    results = counting_failed(results, failed, where)
    scores = score_names(results)
    variants = list(results["variant"].cat.categories)
    rows: list[dict[str, Any]] = []
    for variant in variants:
        mine = results[results["variant"] == variant]
        ok = int(mine["status"].isin(["ok", "tool_error"]).sum())
        row: dict[str, Any] = {"runs": len(mine), "ok": ok, "ok_rate": ok / len(mine) if len(mine) else np.nan}
        for name in scores:
            column = mine[name]
            values = column.dropna().to_numpy(dtype="float64")
            row[f"{name}_n"] = len(values)
            row[f"{name}_mean"] = float(values.mean()) if len(values) else np.nan
            if str(column.dtype) == "boolean":
                row[f"{name}_low"], row[f"{name}_high"] = wilson_ci(int(values.sum()), len(values), confidence=level)
                counted = column.notna().to_numpy()
                passed = column[counted].astype(bool).groupby(mine["task_id"].to_numpy()[counted], sort=False)
                counts = passed.agg(["size", "sum"])
                full = counts[counts["size"] >= depth]
                at = [pass_at_k(int(n), int(c), depth) for n, c in zip(full["size"], full["sum"])]
                hat = [pass_hat_k(int(n), int(c), depth) for n, c in zip(full["size"], full["sum"])]
                row[f"{name}_pass@{depth}"] = float(np.mean(at)) if at else np.nan
                row[f"{name}_pass^{depth}"] = float(np.mean(hat)) if hat else np.nan
            else:
                row[f"{name}_low"], row[f"{name}_high"] = bootstrap_ci(values, confidence=level)
        tokens = mine["tokens"].dropna().to_numpy(dtype="float64")
        latency = mine["latency_s"].dropna().to_numpy(dtype="float64")
        row["tokens_mean"] = float(tokens.mean()) if len(tokens) else np.nan
        row["tokens_total"] = int(tokens.sum())
        row["latency_s_mean"] = float(latency.mean()) if len(latency) else np.nan
        row["latency_s_p95"] = float(np.quantile(latency, 0.95)) if len(latency) else np.nan
        rows.append(row)
    frame = pd.DataFrame(rows, index=pd.CategoricalIndex(variants, categories=variants, name="variant"))
    for name in ("runs", "ok", "tokens_total", *(f"{s}_n" for s in scores)):
        frame[name] = frame[name].astype("Int64")
    frame.attrs["failed"] = FAILED[failed]
    frame.attrs["intervals"] = {
        "pass/fail": f"Wilson score interval, {level:.0%}",
        "number": f"percentile bootstrap of the mean, {level:.0%} (2,000 resamples, seed 0)",
    }
    return frame
