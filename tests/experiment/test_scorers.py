"""Scorers: the built-ins, how a function is given its arguments, the LLM judge (its trace, its cache, its failures)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

import nbagent
from nbagent import CancellationToken, Experiment, ReplayChatCompletionClient
from nbagent.experiment import FunctionScorer, Judge, scorer
from nbagent.models.base import ModelServerError
from tests.experiment.helpers import arithmetic, constant, right


async def score(found: Any, output: str | None, row: dict[str, Any]) -> bool | float:
    def no_run() -> Any:
        raise AssertionError("this scorer reads no run")

    value: bool | float = await found.score(output, row, no_run, CancellationToken())
    return value


async def test_exact_match_strips_and_can_ignore_case() -> None:
    row = {"expected": "Paris"}
    assert await score(nbagent.exact_match(), " Paris\n", row) is True
    assert await score(nbagent.exact_match(), "paris", row) is False
    assert await score(nbagent.exact_match(case=False), "paris", row) is True
    assert await score(nbagent.exact_match(strip=False), " Paris", row) is False
    assert await score(nbagent.exact_match(field="city"), "Rome", {"city": "Rome"}) is True


async def test_contains_regex_numeric() -> None:
    row = {"expected": "42", "pattern": r"^\d+$"}
    assert await score(nbagent.contains(), "The answer is 42.", row) is True
    assert await score(nbagent.contains(), "forty-two", row) is False
    assert await score(nbagent.contains(case=True), "PARIS", {"expected": "Paris"}) is False
    assert await score(nbagent.regex(r"\b42\b"), "it is 42", row) is True
    assert await score(nbagent.regex(field="pattern"), "42", row) is True
    assert await score(nbagent.regex(field="pattern"), "it is 42", row) is False
    assert await score(nbagent.numeric(), "Total: 41.9999999", row) is True
    assert await score(nbagent.numeric(), "first 7, then 1,042", {"expected": 1042}) is True  # the last number
    assert await score(nbagent.numeric(tolerance=0.5), "42.6", row) is False
    assert await score(nbagent.numeric(relative=0.02), "42.6", row) is True
    assert await score(nbagent.numeric(), "no number", row) is False


async def test_a_missing_field_is_a_clear_error() -> None:
    with pytest.raises(KeyError, match="the task has no field 'expected'"):
        await score(nbagent.exact_match(), "x", {"task": "t"})


def test_built_in_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="pattern must be a regular expression"):
        nbagent.regex("(")
    with pytest.raises(ValueError, match="give pattern"):
        nbagent.regex()
    with pytest.raises(ValueError, match="tolerance must be a number greater than or equal to 0"):
        nbagent.numeric(tolerance=-1)
    with pytest.raises(TypeError, match="model_client must be an nbagent model client"):
        nbagent.llm_judge("gpt-4o")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rubric must be a non-empty str"):
        nbagent.llm_judge(ReplayChatCompletionClient(["x"]), " ")
    with pytest.raises(ValueError, match="kind must be one of"):
        scorer(lambda output, row: 1.0, name="x", kind="percent")  # type: ignore[arg-type]


async def test_arguments_by_name_and_kinds() -> None:
    def only_output(output: str) -> bool:
        return output == "x"

    def by_row_first(row: dict[str, Any], output: str) -> bool:
        return row["expected"] == output

    def positional(a: str, b: dict[str, Any]) -> float:
        return 0.5

    assert FunctionScorer(only_output).by_name == ("output",)
    assert await score(FunctionScorer(by_row_first), "x", {"expected": "x"}) is True
    number = FunctionScorer(positional)
    assert number.kind == "number" and await score(number, "x", {}) == 0.5

    unannotated = scorer(lambda output, row: 3, name="three")
    assert unannotated.kind is None
    assert await score(unannotated, "x", {}) == 3.0 and unannotated.kind == "number"
    echo = scorer(lambda output, row: row["value"], name="echo")
    assert await score(echo, "x", {"value": True}) is True and echo.kind == "pass/fail"
    with pytest.raises(TypeError, match="returned float 0.5: a scorer returns True or False"):
        await score(echo, "x", {"value": 0.5})
    with pytest.raises(TypeError, match="returned str 'yes'"):
        await score(scorer(lambda output, row: "yes", name="s"), "x", {})


# ---------------------------------------------------------------------- the judge


def verdicts(*texts: str) -> ReplayChatCompletionClient:
    return ReplayChatCompletionClient(list(texts))


def test_the_judge_scores_each_run_in_a_trace_of_its_own(tmp_path: Path) -> None:
    judge = nbagent.llm_judge(verdicts(*["Fine.\nVERDICT: PASS", "No.\nVERDICT: FAIL"] * 4), "Is it right?")
    exp = Experiment(arithmetic(4), {"zero": constant("0")}, [judge], progress=None, concurrency=1).run_sync()
    results = exp.results
    assert results["llm_judge"].dtype == "boolean"
    assert results["llm_judge"].tolist() == [True, False, True, False]
    runs = judge.trace.runs_df()
    assert len(runs) == 4  # one judge run per answer graded...
    assert not set(runs["run_id"].astype(str)) & set(exp.trace.runs_df()["run_id"].astype(str))  # ...apart
    prompt = "\n".join(judge.trace.events_df()["text"].dropna().astype(str))
    assert "Is it right?" in prompt and "0+0?" in prompt and "Expected answer (expected)" in prompt


def test_a_failing_judge_is_that_scores_error_and_the_run_is_kept() -> None:
    class Failing(ReplayChatCompletionClient):
        async def create(self, *args: Any, **kwargs: Any) -> Any:
            raise ModelServerError("judge down", status=503, model="judge")

    judge = nbagent.llm_judge(Failing(["unused"]), "ok?")
    garbled = nbagent.llm_judge(verdicts("I think so."), "ok?", name="garbled")
    exp = Experiment(arithmetic(1), {"right": right}, [judge, garbled, nbagent.exact_match()], progress=None)
    results = exp.run_sync().results
    assert results["status"].tolist() == ["ok"]
    assert results["llm_judge"].isna().all()
    assert "judge down" in str(results["llm_judge_error"].iloc[0])
    assert "has no line 'VERDICT: PASS'" in str(results["garbled_error"].iloc[0])
    assert results["exact_match"].tolist() == [True]


def test_a_numeric_judge_reads_its_score() -> None:
    judge = nbagent.llm_judge(verdicts("Decent.\nSCORE: 0.75"), "How good?", kind="number", name="quality 0-1")
    results = Experiment(arithmetic(1), {"right": right}, [judge], progress=None).run_sync().results
    assert results["quality 0-1"].dtype == "float64" and results["quality 0-1"].tolist() == [0.75]


def test_the_judges_cache_makes_rescoring_offline(tmp_path: Path) -> None:
    answers = ["VERDICT: PASS", "VERDICT: FAIL", "VERDICT: PASS"]
    judge = nbagent.llm_judge(verdicts(*answers), "ok?")
    folder = tmp_path / "exp"
    exp = Experiment(arithmetic(3), {"right": right}, [judge], progress=None, concurrency=1, output=folder)
    first = exp.run_sync().results["llm_judge"].tolist()
    assert first == [True, False, True]
    assert len(judge.cache) == 3
    assert (folder / "judges" / "llm_judge.cache.parquet").is_file()
    assert len(nbagent.load_parquet(folder / "judges").runs_df()) == 3  # the judge's runs, in the folder

    loaded = nbagent.load_experiment(folder)
    # the same model (a replay client), rubric and prompts: served from the cache, the script never read
    again = nbagent.llm_judge(verdicts("VERDICT: FAIL", "VERDICT: FAIL", "VERDICT: FAIL"), "ok?")
    rescored = loaded.rescore(again)
    assert rescored["llm_judge"].tolist() == first
    assert rescored["llm_judge_error"].isna().all()
    assert len(again.trace.runs_df()) == 0


def test_a_judge_with_another_rubric_is_not_served_from_the_cache(tmp_path: Path) -> None:
    judge = nbagent.llm_judge(verdicts("VERDICT: PASS"), "ok?")
    folder = tmp_path / "exp"
    Experiment(arithmetic(1), {"right": right}, [judge], progress=None, output=folder).run_sync()
    other = nbagent.llm_judge(verdicts("VERDICT: FAIL"), "Is it short?")
    assert Judge.key(other, other.prompt("2", {"task": "t"})) != judge.key(judge.prompt("2", {"task": "t"}))
    results = nbagent.load_experiment(folder).rescore(other)
    assert results["llm_judge"].tolist() == [False]
    assert len(other.trace.runs_df()) == 1
    assert isinstance(results, pd.DataFrame)


def test_secrets_reach_no_score_error_and_no_judges_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "-".join(["sk", "proj", "experimentsecret0123456789abcdef"])  # a key's shape (none in the source)
    monkeypatch.setenv("OPENAI_API_KEY", secret)

    def leaky(output: str, row: dict[str, Any]) -> bool:
        raise ValueError(f"the key was {secret}")

    judge = nbagent.llm_judge(verdicts(f"I saw {secret}.\nVERDICT: PASS"), "ok?")
    folder = tmp_path / "exp"
    exp = Experiment(arithmetic(1), {"right": right}, [leaky, judge], output=folder, progress=None).run_sync()
    error = str(exp.results["leaky_error"].iloc[0])
    assert error.startswith("ValueError: the key was") and secret not in error
    assert exp.results["llm_judge"].tolist() == [True]
    for path in folder.rglob("*.parquet"):  # every cell of every file: the runs', the scores', the judge's cache
        cells = [str(value) for column in pq.read_table(path).to_pylist() for value in column.values()]
        assert not [cell for cell in cells if secret in cell], path


async def test_stopping_the_experiment_cancels_a_judges_call_and_records_it() -> None:
    import asyncio

    judge = nbagent.llm_judge(ReplayChatCompletionClient(["VERDICT: PASS"], latency=60), "ok?")
    exp = Experiment(arithmetic(1), {"right": right}, [judge, nbagent.exact_match()], progress=None)
    running = asyncio.ensure_future(exp.run())
    async with asyncio.timeout(60):  # a hang guard
        while not len(judge.trace.runs_df()):
            await asyncio.sleep(0.01)
        exp.stop()
        await running
    results = exp.results
    assert results["status"].tolist() == ["ok"]  # the run had ended: it is kept, and scored by the others
    assert results["exact_match"].tolist() == [True]
    assert results["llm_judge"].isna().all()
    assert results["llm_judge_error"].tolist() == ["CancelledError: the experiment was stopped"]
