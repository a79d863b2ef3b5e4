"""The experiment's views: the comparison widget (sort, pages, a task's runs, fork at the parting, scores),
the static copies and text, and untrusted text escaped, on real runs (one real Batch, replay models)."""

from __future__ import annotations

import asyncio
import re

import pandas as pd
import pytest

from nbagent import Experiment
from nbagent.experiment.compare import compare_variants
from nbagent.notebook.compare_view import CompareView
from nbagent.notebook.experiment_view import ComparisonView, ComparisonWidget, ExperimentView

from .pairs import PairedRuns, make_agent, run_pairs, weather_tasks

HOSTILE = '\x1b[2J\u202eevil<img src=x onerror="alert(1)"><script>alert(2)</script>'


@pytest.fixture(scope="module")
def runs() -> PairedRuns:
    tasks = weather_tasks(30)
    tasks.loc[1, "task"] = HOSTILE  # the task b answers differently (t1): in the first page
    return run_pairs(tasks)


def send(widget: ComparisonWidget, **message: object) -> None:
    """What the table's front end sends: a header clicked, a row clicked (or Enter), Page Down/Up."""
    widget.table._handle_custom_msg(dict(message), [])  # noqa: SLF001 the comm's entry point


def task_ids(html: str) -> list[str]:
    return re.findall(r'<tr data-run="([^"]+)"', html)


def test_the_html_escapes_a_hostile_task_and_reads_without_the_stylesheet(runs: PairedRuns) -> None:
    comparison = compare_variants(runs, "a", "b")
    html = comparison.html()
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in html
    assert (
        "\u202e" not in html and "&lt;U+202E&gt;evil&lt;img" in html
    )  # bidi marks shown, as the one escaping path does
    text = comparison.text()
    assert "\x1b" not in text and "\\x1b[2J" in text  # shown, never obeyed
    assert "<U+202E>" in text
    bundle = comparison._repr_mimebundle_()
    assert set(bundle) == {"text/html", "text/plain"}
    assert "McNemar exact" in bundle["text/html"] and "McNemar exact" in bundle["text/plain"]
    without_style = re.sub(r"<style>.*?</style>", "", html, flags=re.DOTALL)
    assert "<table" in without_style and "the model&#x27;s answer" in without_style  # plain tables, no script


def test_a_hostile_variant_name_is_shown_never_obeyed_in_the_text_views() -> None:
    name = "v\x1b[2J\u202e<b>"  # a variant's name, as a folder written by anyone may hold it
    variants = {name: lambda row: make_agent(pd.Series({**row, "variant": "a"})), "b": lambda row: make_agent(
        pd.Series({**row, "variant": "b"})
    )}  # fmt: skip
    exp = Experiment(weather_tasks(2), variants, progress=None).run_sync()
    texts = [exp._repr_mimebundle_()["text/plain"], exp.compare(name, "b").text()]
    for text in texts:
        assert "\x1b" not in text and "\u202e" not in text and "v\\x1b[2J<U+202E><b>" in text
    assert texts[1].startswith("v\\x1b[2J<U+202E><b> vs b: 2 tasks")
    html = exp.compare(name, "b").html()
    assert "\u202e" not in html and "<b> vs" not in html and "&lt;U+202E&gt;&lt;b&gt; vs b" in html


def test_the_tasks_are_sortable_by_delta_and_paged(runs: PairedRuns) -> None:
    view = ComparisonView(compare_variants(runs, "a", "b"), page_size=10)
    widget = view.widget()
    first = task_ids(widget.table.html)
    assert len(first) == 10
    assert set(first[:3]) == {"t1", "t3", "t5"}  # correct: b's losses, the largest changes first
    send(widget, event="sort", column="tokens_delta")
    ordered = view.ordered()
    assert ordered["tokens_delta"].tolist() == sorted(ordered["tokens_delta"].tolist())
    assert task_ids(widget.table.html) == ordered["task_id"].head(10).tolist()
    send(widget, event="sort", column="tokens_delta")  # again: the other way
    assert view.ascending is False
    assert task_ids(widget.table.html)[0] == view.ordered()["task_id"].iloc[0]
    send(widget, event="turn", pages=1)
    assert view.page_number == 1 and widget.position.value.startswith("page 2 of 3")
    send(widget, event="turn", pages=5)  # clamped to one page at a time, within the last
    assert view.page_number == 2
    send(widget, event="sort", column="no such column")
    assert "column" in widget.message.value
    with pytest.raises(ValueError, match="column"):
        view.sort_by("nope")


def test_a_click_on_a_task_opens_its_two_runs(runs: PairedRuns) -> None:
    comparison = compare_variants(runs, "a", "b")
    view = ComparisonView(comparison)
    widget = view.widget()
    send(widget, event="open", run="t4", add=False)
    assert view.picked == "t4"
    assert isinstance(view.runs, CompareView)
    assert (view.runs.left[1], view.runs.right[1]) == comparison.run_ids("t4")
    assert view.runs.labels == ("a", "b")
    assert widget.runs.children == (view.runs.widget(),)
    assert view.runs.first_divergence == comparison.frame.set_index("task_id").loc["t4", "parted_at"]
    assert "a: run" in view.static_bundle()["text/html"]  # the static copy shows the runs side by side
    send(widget, event="open", run="nope", add=False)
    assert "task_id" in widget.message.value


async def test_fork_at_the_first_difference_and_score_the_walks(runs: PairedRuns) -> None:
    comparison = compare_variants(runs, "a", "b")
    view = ComparisonView(comparison)
    view.pick("t2")  # b looked up another city
    stepper = await view.fork_at_parting()
    assert stepper.upcoming is not None and stepper.upcoming.name == "call_llm"  # the call that asked for it
    fork = await stepper.fork()
    stepper.shown_forks.append(fork)  # as the stepper widget's Fork here does
    fork.give_answer("It is sunny in Lima, I think.")
    await fork.run_to_end()
    await stepper.run_to_end()
    scores = await view.score_walks()
    assert len(scores) == 4  # a's, b's, the walk's and the fork's
    walk_row = scores.loc[[i for i in scores.index if i.startswith("walk")][0]]
    fork_row = scores.loc[[i for i in scores.index if i.startswith("fork")][0]]
    assert bool(walk_row["correct"]) is True  # b's run replayed: its answer, "It is sunny in Lima."
    assert bool(fork_row["correct"]) is True
    assert fork_row["brevity"] == pytest.approx(1 / (1 + len("It is sunny in Lima, I think.")))
    assert "brevity" in scores.columns
    assert "the walks scored" in view.static_bundle()["text/html"]


async def test_a_scorer_that_raises_is_that_scores_error(runs: PairedRuns) -> None:
    def broken(output: str, row: dict[str, object]) -> bool:
        raise RuntimeError("no judge today")

    comparison = compare_variants(runs, "a", "b")
    comparison.scorers = {"broken": broken}
    run_id = comparison.run_ids("t0")[1]
    scored = await comparison.score_run(runs.trace, run_id, "t0")
    assert scored == {"broken": None, "broken_error": "RuntimeError: no judge today"}

    def leaky(output: str, row: dict[str, object]) -> bool:
        key = "-".join(["sk", "abcdefghijklmnopqrstuvwxyz012345"])  # a key's shape, made here (no key in the source)
        raise RuntimeError(f"the judge's key {key} was refused")

    comparison.scorers = {"leaky": leaky, "correct": runs.scorers["correct"]}
    scored = await comparison.score_run(runs.trace, run_id, "t0")
    assert scored == {
        "leaky": None,
        "leaky_error": "RuntimeError: the judge's key [REDACTED] was refused",
        "correct": True,
    }
    with pytest.raises(ValueError, match="run_id"):
        await comparison.score_run(runs.trace, "no-such-run", "t0")
    with pytest.raises(ValueError, match="task_id"):
        await comparison.score_run(runs.trace, run_id, "nope")


async def test_where_the_runs_part_is_read_off_the_loop_then_shown(runs: PairedRuns) -> None:
    comparison = compare_variants(runs, "a", "b")
    assert not comparison.has_partings
    view = ComparisonView(comparison)
    widget = view.widget()
    assert "reading the runs" in widget.head.value
    reading = view.reading
    assert reading is not None
    await asyncio.wait_for(reading, 60)  # a hang guard
    await asyncio.sleep(0)  # its done callback
    assert comparison.has_partings
    assert "a tool&#x27;s result" in widget.head.value
    assert "reading the runs" not in view.static_bundle()["text/html"]


def test_the_static_copy_and_text_of_the_view(runs: PairedRuns) -> None:
    view = ComparisonView(compare_variants(runs, "a", "b"), page_size=5)
    view.sort_by("task_id")
    bundle = view.static_bundle()
    assert task_ids(bundle["text/html"]) == ["t0", "t1", "t10", "t11", "t12"]
    assert "page 1 of 6" in bundle["text/html"] and "a vs b: 30 tasks" in bundle["text/html"]
    assert "nba-static-copy" in bundle["text/html"]  # the copy a connected widget after it hides
    assert "&lt;script&gt;" in bundle["text/html"] and "<script>alert" not in bundle["text/html"]
    assert bundle["text/plain"].startswith("a vs b: 30 tasks")


def test_an_experiment_shows_its_summary_and_compares_its_variants() -> None:
    tasks = weather_tasks(6)
    variants = {name: (lambda row, name=name: make_agent(pd.Series({**row, "variant": name}))) for name in ("a", "b")}

    def correct(output: str | None, row: dict[str, object]) -> bool:
        return f"sunny in {row['task']}" in (output or "")

    exp = Experiment(tasks, variants, [correct], progress=None).run_sync()
    bundle = exp._repr_mimebundle_()
    assert "exp.compare(a, b)" in bundle["text/plain"] and "<table" in bundle["text/html"]
    comparison = exp.compare("a", "b")
    assert comparison.stats.loc["correct", "a_only"] == 3
    assert comparison.frame.set_index("task_id").loc["t4", "parting"] == "tool_result"
    with pytest.raises(ValueError, match=r"\bb\b"):
        exp.compare("a", "c")
    view = exp.view()
    assert isinstance(view, ExperimentView)
    assert view.comparison is not None and (view.a, view.b) == ("a", "b")
    widget = view.widget()
    widget.a.value, widget.b.value = "b", "a"
    assert view.comparison.comparison.a == "b"
    assert "b vs a" in view.static_bundle()["text/html"]
    with pytest.raises(ValueError, match="a"):
        exp.view("x")
