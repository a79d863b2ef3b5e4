"""Two variants of an experiment compared task by task: :func:`compare_variants` (``exp.compare(a, b)``).

The runs of the two variants over the same task are *paired*: repeat ``r`` of ``a`` with repeat ``r`` of
``b`` (a repeat one variant lacks leaves its pair's scores missing). Per task:

- :attr:`VariantComparison.pairs`: one row per pair: each score of ``a`` and ``b`` and its ``delta``
  (``b - a``; a pass/fail score counts 1 and 0), tokens, latency and their deltas, and where the pair's
  runs first part (``parted_at``: the aligned move's position, ``parting_move`` its name, ``parting``
  what differed there, see :data:`PARTINGS`).
- :attr:`VariantComparison.frame`: one row per task: the means over its pairs (with one repeat, the
  pair itself; a pass/fail score becomes a pass rate), and its first pair's runs and parting.
- :attr:`VariantComparison.stats`: per score, the paired statistics over the tasks
  (:func:`nbagent.experiment.stats.paired`): the mean delta, a bootstrap confidence interval (tasks
  resampled, ``seed`` fixed) and a p-value. A pass/fail score with one repeat: McNemar's exact test on
  the pairs; with repeats, the tasks are the independent units (a task's repeats are not), so each
  task's pass-rate delta is a number and the Wilcoxon signed-rank test judges them. A number: the
  Wilcoxon signed-rank test, the paired t-test beside it. ``tokens`` and ``latency_s`` are compared the
  same way.
- :attr:`VariantComparison.parting`: over every pair, how many first part at each kind of move.

Where the runs of a pair part is read from the runs' moves in bulk (:func:`~nbagent.trace.compare.moves_of_runs`:
one read of each table for all the runs) and found as :class:`~nbagent.trace.compare.Comparison` finds
its first divergence (:func:`~nbagent.trace.compare.first_parting`), comparing what each move did (its
events, tool calls and results); :meth:`VariantComparison.runs` gives the full comparison of one task's
two runs, which also compares the context after each move.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .. import _check as check
from ..render.experiment import STATIC_ROWS, comparison_html, comparison_text
from ..stepper import LLM_MOVES
from ..sync import entry_point
from ..trace.compare import Comparison, MoveView, Row, first_parting, moves_of_runs
from .folder import FAILED, counting_failed, score_names
from .stats import Kind, paired

if TYPE_CHECKING:
    import pandas as pd

    from ..stepper import Stepper
    from ..trace import TraceFrames
    from ..trace.replay import Replay

__all__ = [
    "PARTINGS",
    "ComparedExperiment",
    "VariantComparison",
    "compare_variants",
    "parting_of",
    "register_view",
    "view_of",
    "walk_to",
]

PARTINGS: dict[str, str] = {
    "llm_answer": "the model's answer",
    "tool_choice": "the tools called (or none)",
    "tool_arguments": "a tool call's arguments",
    "tool_result": "a tool's result",
    "run_end": "one run ended, the other went on",
    "other": "another move (memory, a handoff...)",
    "never": "the runs never part",
}
"""What differs where the runs of a pair first part (the ``parting`` column), in plain words."""

_VIEWS: dict[str, Callable[..., Any]] = {}
"""The notebook side's widgets, by what they show (``"comparison"``, ``"experiment"``): registered by ``nbagent``."""


def register_view(kind: str, factory: Callable[..., Any]) -> None:
    """Set the widget :meth:`VariantComparison.view` (``kind="comparison"``) or ``Experiment.view``
    (``"experiment"``) makes: the notebook layer registers its own, this layer imports no widget."""
    _VIEWS[kind] = factory


def view_of(kind: str, *args: Any, **kwargs: Any) -> Any:
    """The registered widget of ``kind`` made of ``args``; a RuntimeError when the notebook side is absent."""
    if kind not in _VIEWS:
        raise RuntimeError(f"the {kind} view needs the notebook side: import nbagent (and ipywidgets) first")
    return _VIEWS[kind](*args, **kwargs)


_LLM_MOVES = {"call_llm", "next_llm_call", "reflect", "summarize", "text_exit"}
_NUMBERS = ("tokens", "latency_s")


class ComparedExperiment(Protocol):
    """What a comparison reads of an experiment (:class:`nbagent.Experiment`, or one loaded)."""

    @property
    def results(self) -> pd.DataFrame:
        """One row per variant x task x repeat (``variant``, ``task_id``, ``repeat``, ``run_id``, the scores...)."""

    @property
    def trace(self) -> TraceFrames:
        """The trace holding every run."""

    @property
    def scorers(self) -> Mapping[str, Any]:
        """The scorers by name (their names are the score columns of ``results``)."""


def parting_of(left: Sequence[MoveView], right: Sequence[MoveView]) -> tuple[int, Row, str] | None:
    """Where two runs' moves first part: the aligned position (from 1), its row and what differed there
    (a key of :data:`PARTINGS`); ``None``: they never do."""
    found = first_parting(left, right)
    if found is None:
        return None
    position, row = found
    return position, row, _what_differs(position, row, left, right)


def _what_differs(position: int, row: Row, left: Sequence[MoveView], right: Sequence[MoveView]) -> str:
    a, b = row.left, row.right
    if a is None or b is None:  # one run made a move the other did not
        alone, other = (a, right) if b is None else (b, left)
        if alone is None or len(other) < position:  # the other made no move from here on: it ended
            return "run_end"
        if alone.name in ("tool_request", "tool_execution"):
            return "tool_choice"  # tools called where the other called none
        return "llm_answer" if alone.name in _LLM_MOVES else "other"
    names = {a.name, b.name}
    if a.name != b.name:
        if "tool_request" in names and names & _LLM_MOVES:
            return "tool_choice"  # one side called tools where the other answered
        return "llm_answer" if names <= _LLM_MOVES else "other"
    if a.name in _LLM_MOVES:
        return "llm_answer"
    if a.name == "tool_request":  # the calls requested differ: their tools, or only their arguments
        tools_a, tools_b = _tools_after(a, left), _tools_after(b, right)
        return "tool_arguments" if tools_a == tools_b else "tool_choice"
    if a.name == "tool_execution":
        calls_a = [(name, arguments) for name, arguments, _, _ in a.tool_calls]
        calls_b = [(name, arguments) for name, arguments, _, _ in b.tool_calls]
        if calls_a == calls_b:
            return "tool_result"
        return "tool_arguments" if [c[0] for c in calls_a] == [c[0] for c in calls_b] else "tool_choice"
    return "other"


def _tools_after(move: MoveView, moves: Sequence[MoveView]) -> list[str]:
    """The names of the tools a ``tool_request`` move asked for: those its ``tool_execution`` ran."""
    following = moves[move.index :]  # MoveView.index counts from 1: the moves after this one
    execution = next((m for m in following if m.name == "tool_execution"), None)
    return [] if execution is None else [name for name, _, _, _ in execution.tool_calls]


class VariantComparison:
    """Variants ``a`` and ``b`` of an experiment compared task by task (see the module's text).

    The scores, deltas and :attr:`stats` come from the results alone, at once. Where the runs part
    (:attr:`parting`, and the parting columns of :attr:`pairs` and :attr:`frame`) is read from the runs'
    moves in bulk the first time one of these is asked for, then kept (:attr:`has_partings`).
    """

    def __init__(
        self,
        a: str,
        b: str,
        pairs: pd.DataFrame,
        stats: pd.DataFrame,
        trace: TraceFrames,
        scores: dict[str, Kind],
        scorers: Mapping[str, Any],
        tasks: pd.DataFrame | None = None,
    ) -> None:
        self.a, self.b = a, b
        self.stats = stats
        """Per score (then ``tokens`` and ``latency_s``): the paired statistics over the tasks."""
        self.trace = trace
        self.scores = scores
        """Each score's kind (``pass/fail`` or ``number``), in the experiment's order."""
        self.scorers = scorers
        """The experiment's scorers by name (:meth:`score_run` scores a fork's run with them)."""
        self.tasks = tasks
        self._pairs = pairs
        self._frame = _per_task(pairs, scores, tasks)  # without the partings until they are read
        self._parted = False

    @property
    def has_partings(self) -> bool:
        """Whether where the runs part has been read (reading it costs a read of every run's moves)."""
        return self._parted

    def _parting_read(self) -> None:
        if not self._parted:  # on a copy, put in place whole (a view may read it from a worker thread)
            pairs = self._pairs.copy()
            _add_partings(pairs, self.trace)
            self._pairs, self._frame = pairs, _per_task(pairs, self.scores, self.tasks)
            self._parted = True

    @property
    def pairs(self) -> pd.DataFrame:
        """One row per pair (task x repeat): each side's run, scores, figures, deltas and where they part."""
        self._parting_read()
        return self._pairs

    @property
    def frame(self) -> pd.DataFrame:
        """One row per task: the means over its pairs, its first pair's runs and where they part."""
        self._parting_read()
        return self._frame

    @property
    def scored(self) -> pd.DataFrame:
        """:attr:`frame` as far as it is known without reading the runs: where the runs part only once read."""
        return self._frame

    @property
    def parting(self) -> pd.DataFrame:
        """Over every pair both variants ran: how many first part at each kind of move (:data:`PARTINGS`)."""
        self._parting_read()
        return _parting_counts(self._pairs)

    def runs(self, task_id: str, repeat: int = 0) -> Comparison:
        """The two runs of task ``task_id`` (its repeat ``repeat``) side by side, aligned move by move."""
        pair = self._pair("VariantComparison.runs", task_id, repeat)
        run_a, run_b = str(pair["run_id_a"]), str(pair["run_id_b"])
        return Comparison((self.trace.run(run_a), run_a), (self.trace.run(run_b), run_b), (self.a, self.b))

    def run_ids(self, task_id: str, repeat: int = 0) -> tuple[str, str]:
        """The ids of the two runs of task ``task_id`` (its repeat ``repeat``): ``a``'s, ``b``'s."""
        pair = self._pair("VariantComparison.run_ids", task_id, repeat)
        return str(pair["run_id_a"]), str(pair["run_id_b"])

    def parting_replay(self, task_id: str, repeat: int = 0, *, side: str | None = None) -> tuple[Replay, int | None]:
        """The replay of variant ``side``'s run (default ``b``) on task ``task_id`` and how many moves it makes
        before the one to fork at (``None``: the runs never part, walk to the end): the move where the two
        runs part, or, where what differs is a model's answer (its text, the tools it called or their
        arguments), the model call that gave it, so that the fork can be given another answer."""
        where = "VariantComparison.parting_replay"
        side = self.b if side is None else check.choice(where, "side", side, (self.a, self.b))
        pair = self._pair(where, task_id, repeat)
        run_a, run_b = str(pair["run_id_a"]), str(pair["run_id_b"])
        left = moves_of_runs(self.trace.run(run_a), [run_a], figures=False)[run_a]
        right = moves_of_runs(self.trace.run(run_b), [run_b], figures=False)[run_b]
        found = parting_of(left, right)
        moves = left if side == self.a else right
        move = None if found is None else found[1].left if side == self.a else found[1].right
        replay = self.trace.replay(run_a if side == self.a else run_b)
        if found is None or move is None:
            return replay, None
        if found[2] in ("llm_answer", "tool_choice", "tool_arguments"):
            calls = [m for m in moves[: move.index] if m.name in LLM_MOVES]
            move = calls[-1] if calls else move
        return replay, move.index - 1

    @entry_point("comparison.walk_to_parting(task_id)")
    async def walk_to_parting(self, task_id: str, repeat: int = 0, *, side: str | None = None) -> Stepper:
        """A stepper replaying the run of variant ``side`` (default ``b``) on task ``task_id``, walked to
        just before the move to fork at (:meth:`parting_replay`): ``await stepper.fork()`` there (or
        change the next move: another answer, another tool result) to try another way. Runs that never
        part: walked to the end."""
        from ..stepper import Stepper

        replay, before = self.parting_replay(task_id, repeat, side=side)
        stepper = Stepper(replay)
        await walk_to(stepper, before)
        return stepper

    @entry_point("comparison.score_run(trace, run_id, task_id)")
    async def score_run(self, trace: TraceFrames, run_id: str, task_id: str) -> dict[str, bool | float | str | None]:
        """Run ``run_id`` of ``trace`` (a fork's, a walk's) scored by the experiment's scorers as the run of
        task ``task_id``: each score (``None`` where the scorer raised, its text in ``<name>_error``)."""
        from ..cancellation import CancellationToken
        from .scorers import as_scorer, score_into

        where = "VariantComparison.score_run"
        check.string(where, "run_id", run_id)
        row = self._task_row(where, task_id)
        runs = trace.table("runs", ["run_id", "final_text"], [run_id])
        if not len(runs):
            raise check.wrong_value(where, "run_id", "the id of a run of that trace", run_id)
        output = runs["final_text"].iloc[0]
        output = None if _missing(output) else str(output)
        scored: dict[str, bool | float | str | None] = {}
        token = CancellationToken()
        for name, value in self.scorers.items():
            scorer = as_scorer(value, where, f"scorers[{name!r}]")
            record: dict[str, Any] = {}  # scored as a run of the experiment is: an error masked, kept
            await score_into(record, [scorer], output, row, lambda: trace.run(run_id), token)
            score, error = record[scorer.name], record[f"{scorer.name}_error"]
            if error is not None:
                scored[name], scored[f"{name}_error"] = None, error
            else:
                scored[name] = bool(score) if scorer.kind == "pass/fail" else score
        return scored

    def _task_row(self, where: str, task_id: str) -> dict[str, Any]:
        check.string(where, "task_id", task_id)
        if self.tasks is None:
            return {"task_id": task_id}
        found = self.tasks[self.tasks["task_id"].astype("string") == task_id]
        if not len(found):
            raise check.wrong_value(where, "task_id", "the id of a task of the experiment", task_id)
        row: dict[str, Any] = found.iloc[0].to_dict()
        return row

    def _pair(self, where: str, task_id: str, repeat: int) -> dict[str, Any]:
        check.string(where, "task_id", task_id)
        check.integer(where, "repeat", repeat, minimum=0)
        pairs = self._pairs
        rows = pairs[(pairs["task_id"] == task_id) & (pairs["repeat"] == repeat)]
        if not len(rows):
            known = pairs["task_id"].drop_duplicates()
            if task_id not in set(known):
                raise check.wrong_value(where, "task_id", "the id of a task of the experiment", task_id)
            raise check.wrong_value(where, "repeat", f"a repeat of task {task_id!r} run by both variants", repeat)
        pair: dict[str, Any] = rows.iloc[0].to_dict()
        if _missing(pair["run_id_a"]) or _missing(pair["run_id_b"]):
            raise check.wrong_value(where, "task_id", "a task both variants ran", task_id)
        return pair

    def html(self, *, sort: str | None = None, ascending: bool = True, rows: int = STATIC_ROWS) -> str:
        """The comparison as HTML through the one renderer (light and dark, untrusted text escaped): the
        statistics, where the pairs part, and ``rows`` tasks by ``sort`` (a column of :attr:`frame`;
        default the first score's delta, the largest changes first)."""
        return str(
            comparison_html(
                self.a,
                self.b,
                self.stats,
                self.parting,
                self.frame,
                list(self.scores),
                sort=sort,
                ascending=ascending,
                rows=rows,
            )
        )

    def text(self, *, rows: int = STATIC_ROWS) -> str:
        """The comparison as plain text (a terminal's view): the same rows as :meth:`html`."""
        return comparison_text(self.a, self.b, self.stats, self.parting, self.frame, list(self.scores), rows=rows)

    def _repr_html_(self) -> str:
        return self.html()

    def view(self, *, page_size: int = 20) -> Any:
        """The comparison as a widget (display it): the tasks sortable and paged, a click opens a task's two
        runs in ``nbagent.compare``, a fork at the first difference (:mod:`nbagent.notebook.experiment_view`)."""
        return view_of("comparison", self, page_size=page_size)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        return {"text/html": self.html(), "text/plain": self.text()}

    def __repr__(self) -> str:
        return f"<VariantComparison {self.a!r} vs {self.b!r}: {len(self.frame)} tasks, scores {list(self.scores)}>"


def compare_variants(
    exp: ComparedExperiment,
    a: str,
    b: str,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int | None = 0,
    failed: str = "fail",
) -> VariantComparison:
    """Variants ``a`` and ``b`` of experiment ``exp`` compared task by task: ``.frame`` (one row per task),
    ``.stats`` (per score: mean delta, bootstrap interval at ``confidence`` from ``resamples`` resamples
    drawn with ``seed``, p-value), ``.pairs`` and ``.parting`` (see the module's text). ``failed``: how
    a run that failed (error, timeout) counts (:data:`~nbagent.experiment.folder.FAILED`): ``"fail"``, a
    fail of each pass/fail score (a variant that crashes more looks worse); ``"missing"``, its pair left
    out; ``.stats.attrs["failed"]`` says which."""
    import pandas as pd

    where = "compare"
    results = counting_failed(exp.results, failed, where)
    variants = [str(v) for v in pd.unique(results["variant"].astype("object"))]
    for param, name in (("a", a), ("b", b)):
        check.string(where, param, name)
        if name not in variants:
            raise check.wrong_value(where, param, f"the name of a variant ({', '.join(map(repr, variants))})", name)
    if a == b:
        raise check.wrong_value(where, "b", f"a variant other than a ({a!r})", b)
    level = check.number(where, "confidence", confidence)
    if level is None or not 0 < level < 1:
        raise check.wrong_value(where, "confidence", "a number between 0 and 1 (0.95: a 95% interval)", confidence)
    check.integer(where, "resamples", resamples, minimum=1)
    check.integer(where, "seed", seed, minimum=0, none=True)
    scores = _score_kinds(results, list(exp.scorers))
    pairs = _pairs(results, a, b, scores)
    tasks = getattr(exp, "tasks", None)
    tasks = tasks if isinstance(tasks, pd.DataFrame) and {"task_id", "task"} <= set(tasks.columns) else None
    frame = _per_task(pairs, scores, tasks)
    one_repeat = bool((frame["pairs"] <= 1).all())
    rows = []
    for score, kind in [*scores.items(), *((name, "number") for name in _NUMBERS)]:
        unit = pairs if one_repeat else frame  # the tasks are the units (a task's repeats are not independent)
        if kind == "pass/fail" and not one_repeat:  # pass rates per task: numbers
            result = paired(
                score,
                unit[f"{score}_a"],
                unit[f"{score}_b"],
                kind="number",
                confidence=confidence,
                resamples=resamples,
                seed=seed,
            )
            result = dataclasses.replace(result, kind="pass/fail")
        else:
            result = paired(
                score,
                unit[f"{score}_a"],
                unit[f"{score}_b"],
                kind=kind,
                confidence=confidence,
                resamples=resamples,
                seed=seed,
            )
        rows.append(result.row())
    stats = pd.DataFrame(rows).set_index("score")
    stats = stats.astype({"a_only": "Int64", "b_only": "Int64", "kind": "category", "test": "category"})
    stats.attrs["failed"] = FAILED[failed]
    return VariantComparison(a, b, pairs, stats, exp.trace, scores, dict(exp.scorers), tasks)


async def walk_to(stepper: Stepper, before: int | None) -> None:
    """Walk ``stepper`` until it has made ``before`` moves (``None``: to its end)."""
    if before is None:
        await stepper.run_to_end()
    elif before > 0 and len(stepper.history) < before:
        await stepper.run_until(lambda result: result.index >= before)


def _score_kinds(results: pd.DataFrame, names: Sequence[str]) -> dict[str, Kind]:
    """Each score column of ``results``, the scorers' ``names`` first (a loaded experiment has none: its
    scores are the columns its folder holds), and its kind: ``pass/fail`` for a boolean column, else
    ``number``."""
    import pandas as pd

    kinds: dict[str, Kind] = {}
    for name in [*names, *score_names(results)]:
        if name not in results.columns or name in kinds:
            continue  # a scorer not run yet (rescore adds it)
        column = results[name]
        kinds[name] = "pass/fail" if pd.api.types.is_bool_dtype(column.dtype) else "number"
    return kinds


def _pairs(results: pd.DataFrame, a: str, b: str, scores: Mapping[str, Kind]) -> pd.DataFrame:
    """One row per task x repeat run by either variant: each side's run, scores, tokens and latency."""
    import pandas as pd

    columns = ["task_id", "repeat", "run_id", "status", *scores, *_NUMBERS]
    variant = results["variant"].astype("object")
    sides = []
    for name in (a, b):
        side = results.loc[variant == name, [c for c in columns if c in results.columns]].copy()
        side["task_id"] = side["task_id"].astype("string")
        side["repeat"] = side["repeat"].astype("Int64")
        for score in scores:
            side[score] = side[score].astype("Float64")
        sides.append(side)
    pairs = pd.merge(sides[0], sides[1], on=["task_id", "repeat"], how="outer", suffixes=("_a", "_b"), sort=False)
    order = results[["task_id"]].astype({"task_id": "string"}).drop_duplicates()
    order["position"] = range(len(order))
    pairs = pairs.merge(order, on="task_id", how="left").sort_values(["position", "repeat"], kind="stable")
    pairs = pairs.drop(columns="position").reset_index(drop=True)
    for name in [*scores, *_NUMBERS]:
        if f"{name}_a" not in pairs.columns:
            pairs[f"{name}_a"] = pairs[f"{name}_b"] = pd.NA
        pairs[f"{name}_a"] = pairs[f"{name}_a"].astype("Float64")
        pairs[f"{name}_b"] = pairs[f"{name}_b"].astype("Float64")
        pairs[f"{name}_delta"] = pairs[f"{name}_b"] - pairs[f"{name}_a"]
    return pairs


def _add_partings(pairs: pd.DataFrame, trace: TraceFrames) -> None:
    """Where each pair's runs first part: ``parted_at``, ``parting_move``, ``parting``."""
    import pandas as pd

    both = pairs["run_id_a"].notna() & pairs["run_id_b"].notna()
    run_a = pairs["run_id_a"].astype("object").where(both, None).tolist()
    run_b = pairs["run_id_b"].astype("object").where(both, None).tolist()
    moves = moves_of_runs(trace, [r for r in run_a + run_b if r is not None], figures=False)
    at: list[int | None] = []
    move: list[str | None] = []
    what: list[str | None] = []
    for left, right in zip(run_a, run_b):
        found = None if left is None else parting_of(moves[left], moves[str(right)])
        if left is None or found is None:
            at.append(None)
            move.append(None)
            what.append(None if left is None else "never")
            continue
        position, row, differs = found
        at.append(position)
        side = row.right if row.right is not None else row.left
        move.append(None if side is None else side.name)  # b's move there (a's where b made none)
        what.append(differs)
    pairs["parted_at"] = pd.array(at, dtype="Int64")
    pairs["parting_move"] = pd.array(move, dtype="string")
    pairs["parting"] = pd.Categorical(what, categories=list(PARTINGS))


def _per_task(pairs: pd.DataFrame, scores: Mapping[str, Kind], tasks: pd.DataFrame | None) -> pd.DataFrame:
    """One row per task: the means over its pairs, its first pair's runs and parting (when read), its text."""
    means = [f"{name}_{side}" for name in [*scores, *_NUMBERS] for side in ("a", "b", "delta")]
    grouped = pairs.groupby("task_id", sort=False, observed=True)
    kept = ["run_id_a", "run_id_b", "status_a", "status_b", "parted_at", "parting_move", "parting"]
    if bool((grouped.size() <= 1).all()):  # one repeat: the pairs are the tasks
        frame = pairs.copy()
        frame.insert(1, "pairs", 1)
    else:
        frame = grouped[means].mean()
        first = grouped.first()
        frame = frame.join(first[[c for c in kept if c in first.columns]]).reset_index()
        frame.insert(1, "pairs", grouped.size().to_numpy())
        if "parting" in frame.columns:
            frame["parting"] = frame["parting"].astype(pairs["parting"].dtype)
    frame = frame[[c for c in ["task_id", "pairs", *means, *kept] if c in frame.columns]]
    frame = frame.astype({"pairs": "Int64"}).reset_index(drop=True)
    if tasks is not None:
        texts = tasks.assign(task_id=tasks["task_id"].astype("string")).set_index("task_id")["task"]
        frame.insert(1, "task", frame["task_id"].map(texts).astype("string"))
    return frame


def _parting_counts(pairs: pd.DataFrame) -> pd.DataFrame:
    """How many pairs first part at each kind of move (the pairs both variants ran)."""
    import pandas as pd

    counts = pairs["parting"].value_counts(sort=False).reindex(list(PARTINGS), fill_value=0)
    total = int(counts.sum())
    frame = pd.DataFrame({"what": list(PARTINGS.values()), "pairs": counts.to_numpy()}, index=list(PARTINGS))
    frame["share"] = frame["pairs"] / total if total else 0.0
    frame.index.name = "parting"
    return frame


def _missing(value: object) -> bool:
    import pandas as pd

    return value is None or value is pd.NA or (isinstance(value, float) and pd.isna(value))
