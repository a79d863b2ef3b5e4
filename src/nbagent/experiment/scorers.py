"""Scorers of an :class:`~nbagent.Experiment`: a function of a run's answer and its task's row, named.

A scorer is a function ``(output, row) -> bool | float``: ``output`` the run's final answer as text,
``row`` the task's fields (a dict: ``task_id``, ``task``, ``expected``...). A ``bool`` is a pass/fail
score, a number a numeric one (the return annotation says which, else the first value returned). A
scorer whose parameters are named among ``output``, ``row`` and ``run`` is given those by name:
``run`` is the run's frames (a trace holding that run alone: ``run.tool_calls_df()``,
``run.llm_calls_df()``, ``run.runs_df()``), for scores of the trajectory::

    def few_tools(run) -> bool:
        return len(run.tool_calls_df()) <= 2

A scorer may be ``async``. It is named by its ``__name__``, or by :func:`scorer`'s ``name=``. Built in:
:func:`exact_match`, :func:`contains`, :func:`regex`, :func:`numeric` and :func:`llm_judge` (a model
grades the answer; its calls are recorded in a trace of their own and cached by prompt and model, so
rescoring with it again makes no call).
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import math
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from .. import _check as check
from ..agent import AssistantAgent
from ..cancellation import CancellationToken, guarded
from ..models.base import ChatCompletionClient
from ..redact import mask, process_secrets
from ..trace import Trace

if TYPE_CHECKING:
    from ..trace.base import TraceFrames

__all__ = [
    "FunctionScorer",
    "Judge",
    "Scorer",
    "contains",
    "exact_match",
    "llm_judge",
    "numeric",
    "regex",
    "score_into",
    "scorer",
]

Kind = Literal["pass/fail", "number"]
"""A pass/fail score (a ``bool``, stored in a ``boolean`` column) or a number (``float64``)."""
KINDS = ("pass/fail", "number")
ARGUMENTS = ("output", "row", "run")
"""The parameters a scorer may be given by name."""
SCORE_TIMEOUT = 120.0
"""Seconds an ``async`` scorer function has for one run (a judge: its own ``timeout``)."""
RESERVED = frozenset(
    {"variant", "task_id", "repeat", "run_id", "status", "tokens", "latency_s", "tool_calls", "tool_errors", "error"}
)
"""Names no scorer can take: the results' own columns."""


class Scorer:
    """A named score of a run, of kind ``"pass/fail"`` (a bool) or ``"number"`` (``None``: not known until the
    first value): what an experiment's ``scorers`` hold (a function is made a :class:`FunctionScorer`)."""

    wants_run = False
    """Whether it reads the run's frames (then ``run()`` in :meth:`score` reads them)."""

    def __init__(self, name: str, kind: Kind | None) -> None:
        self.name = name
        if kind is not None:
            check.choice("scorer", "kind", kind, KINDS)
        self.kind: Kind | None = kind

    async def score(
        self, output: str | None, row: Mapping[str, Any], run: Callable[[], TraceFrames], token: CancellationToken
    ) -> bool | float:
        """The score of one run (``run()`` gives its frames; ``token`` is cancelled when the experiment is
        stopped): what it raises is that run's score error."""
        raise NotImplementedError

    def checked(self, value: object) -> bool | float:
        """``value`` as this scorer's kind (the first value sets an unknown kind); a TypeError otherwise."""
        import numpy as np

        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, bool):
            if self.kind is None:
                self.kind = "pass/fail"
            return value if self.kind == "pass/fail" else float(value)
        if isinstance(value, (int, float)) and self.kind != "pass/fail":
            self.kind = "number"
            number = float(value)
            if math.isnan(number):
                raise ValueError(f"scorer {self.name!r} returned NaN")
            return number
        expected = "True or False (a pass/fail scorer)" if self.kind == "pass/fail" else "a bool or a number"
        raise TypeError(f"scorer {self.name!r} returned {check.given(value)}: a scorer returns {expected}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, kind={self.kind!r})"


class FunctionScorer(Scorer):
    """``fn(output, row)`` (or its parameters among ``output``, ``row``, ``run`` given by name) as a
    scorer named ``name`` (default its ``__name__``), of ``kind`` (default: its return annotation, else
    the first value returned)."""

    def __init__(self, fn: Callable[..., Any], *, name: str | None = None, kind: Kind | None = None) -> None:
        where = "scorer"
        check.function(where, "fn", fn, "a function (output, row) -> bool | float")
        self.fn = fn
        named = check.string(where, "name", name, none=True, empty=False) or _name_of(fn)
        super().__init__(named, kind or _annotated_kind(fn))
        try:
            parameters = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):  # a builtin without a signature: (output, row)
            parameters = []
        names = [p.name for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        #: The parameters given by name (``None``: ``(output, row)`` by position).
        self.by_name: tuple[str, ...] | None = tuple(names) if names and set(names) <= set(ARGUMENTS) else None
        if self.by_name is None and len(names) < 2 and not any(p.kind == p.VAR_POSITIONAL for p in parameters):
            raise check.wrong_value(
                where, "fn", "a function of (output, row), or of parameters named among output, row and run", fn
            )
        self.wants_run = self.by_name is not None and "run" in self.by_name

    async def score(
        self, output: str | None, row: Mapping[str, Any], run: Callable[[], TraceFrames], token: CancellationToken
    ) -> bool | float:
        if self.by_name is None:
            value = self.fn(output, row)
        else:
            given = {"output": output, "row": row}
            value = self.fn(**{name: run() if name == "run" else given[name] for name in self.by_name})
        if inspect.isawaitable(value):
            async with asyncio.timeout(SCORE_TIMEOUT):
                value = await guarded(_awaited(value), token)
        return self.checked(value)


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


def _name_of(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(
            f"scorer: the function {check.short_repr(fn)} has no name (a lambda): name it with "
            "nbagent.experiment.scorer(fn, name='...')"
        )
    return name


def _annotated_kind(fn: Callable[..., Any]) -> Kind | None:
    try:
        annotation = inspect.signature(fn).return_annotation
    except (TypeError, ValueError):
        return None
    if annotation in (bool, "bool"):
        return "pass/fail"
    if annotation in (float, int, "float", "int"):
        return "number"
    return None


def scorer(fn: Callable[..., Any] | None = None, *, name: str | None = None, kind: Kind | None = None) -> Any:
    """A :class:`Scorer` of ``fn``, named ``name`` (default its ``__name__``); as a decorator too:
    ``@scorer(name="short")``."""
    if fn is None:
        return lambda f: FunctionScorer(f, name=name, kind=kind)
    return FunctionScorer(fn, name=name, kind=kind)


def as_scorer(value: object, where: str, param: str) -> Scorer:
    """``value`` as a :class:`Scorer` (a function is wrapped), its name not one of the results' columns."""
    if isinstance(value, Scorer):
        found = value
    elif callable(value):
        found = FunctionScorer(value)
    else:
        raise check.wrong_type(where, param, "a scorer: a function (output, row) -> bool | float, or a Scorer", value)
    if found.name in RESERVED or found.name.endswith("_error"):
        raise check.wrong_value(
            where, param, "a scorer named neither a results column nor '<name>_error'", found.name, "pass name=..."
        )
    return found


# ---------------------------------------------------------------------- built-ins


def _error_text(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


async def score_into(
    record: dict[str, Any],
    scorers: Iterable[Scorer],
    output: str | None,
    row: Mapping[str, Any],
    run: Callable[[], TraceFrames],
    token: CancellationToken,
) -> None:
    """Put each scorer's score of one run in ``record`` (a pass as 1.0), or its error in ``<name>_error``."""
    for scorer in scorers:
        try:
            value = await scorer.score(output, row, run, token)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            record[scorer.name], record[f"{scorer.name}_error"] = None, "CancelledError: the experiment was stopped"
            continue
        except Exception as error:  # the scorer's error is this run's score error: the experiment goes on
            record[scorer.name], record[f"{scorer.name}_error"] = None, mask(_error_text(error))
            continue
        record[scorer.name], record[f"{scorer.name}_error"] = float(value), None


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _field(row: Mapping[str, Any], field: str, name: str) -> Any:
    if field not in row:
        raise KeyError(f"{name}: the task has no field {field!r} (a column of the tasks DataFrame)")
    return row[field]


def exact_match(field: str = "expected", *, strip: bool = True, case: bool = True, name: str = "exact_match") -> Scorer:
    """Pass when the answer equals the task's ``field`` (after stripping white space unless ``strip=False``;
    ignoring case when ``case=False``)."""
    check.string("exact_match", "field", field, empty=False)

    def match(output: str | None, row: Mapping[str, Any]) -> bool:
        got, want = _text(output), _text(_field(row, field, name))
        if strip:
            got, want = got.strip(), want.strip()
        return got == want if case else got.casefold() == want.casefold()

    return FunctionScorer(match, name=name, kind="pass/fail")


def contains(field: str = "expected", *, case: bool = False, name: str = "contains") -> Scorer:
    """Pass when the answer contains the task's ``field`` (ignoring case unless ``case=True``)."""
    check.string("contains", "field", field, empty=False)

    def found(output: str | None, row: Mapping[str, Any]) -> bool:
        got, want = _text(output), _text(_field(row, field, name))
        return want in got if case else want.casefold() in got.casefold()

    return FunctionScorer(found, name=name, kind="pass/fail")


def regex(pattern: str | None = None, *, field: str | None = None, flags: int = 0, name: str = "regex") -> Scorer:
    """Pass when ``pattern`` (or the task's ``field``, a pattern per task) is found in the answer
    (``re.search``)."""
    where = "regex"
    if (pattern is None) == (field is None):
        raise ValueError("regex: give pattern (one for every task) or field (the column holding each task's), not both")
    compiled = None
    if pattern is not None:
        check.string(where, "pattern", pattern)
        try:
            compiled = re.compile(pattern, flags)
        except re.error as error:
            raise check.wrong_value(where, "pattern", f"a regular expression ({error})", pattern) from None

    def search(output: str | None, row: Mapping[str, Any]) -> bool:
        found = compiled if compiled is not None else re.compile(_text(_field(row, str(field), name)), flags)
        return found.search(_text(output)) is not None

    return FunctionScorer(search, name=name, kind="pass/fail")


_NUMBER = re.compile(r"[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def numeric(
    field: str = "expected", *, tolerance: float = 1e-6, relative: float = 0.0, name: str = "numeric"
) -> Scorer:
    """Pass when the last number in the answer is within ``tolerance`` (absolute) or ``relative`` (a
    fraction of the expected) of the task's ``field``; an answer with no number fails."""
    where = "numeric"
    check.string(where, "field", field, empty=False)
    absolute = check.number(where, "tolerance", tolerance, minimum=0) or 0.0
    fraction = check.number(where, "relative", relative, minimum=0) or 0.0

    def close(output: str | None, row: Mapping[str, Any]) -> bool:
        want = float(_field(row, field, name))
        found = _NUMBER.findall(_text(output))
        if not found:
            return False
        got = float(found[-1].replace(",", ""))
        return abs(got - want) <= max(absolute, fraction * abs(want))

    return FunctionScorer(close, name=name, kind="pass/fail")


# ---------------------------------------------------------------------- the LLM judge

JUDGE_SYSTEM = (
    "You grade an AI assistant's answer to a task against a rubric. Think briefly, then end with one line "
    "that is exactly {verdict}."
)
JUDGE_PROMPT = "Rubric:\n{rubric}\n\nTask:\n{task}\n{expected}\nAnswer to grade:\n{output}\n"
_VERDICT = re.compile(r"VERDICT:\s*(PASS|FAIL)\b", re.IGNORECASE)
_SCORE = re.compile(r"SCORE:\s*([-+]?\d+(?:\.\d+)?)", re.IGNORECASE)


class Judge(Scorer):
    """A model that grades each answer (:func:`llm_judge`): its calls are recorded in :attr:`trace`, apart
    from the runs under test, and its verdicts kept in :attr:`cache` by (prompt, model): a prompt seen
    before makes no call (an experiment with ``output=`` keeps the cache in its folder, so rescoring is
    offline). A call that fails, or an answer with no verdict line, is that run's score error."""

    def __init__(
        self,
        model_client: ChatCompletionClient,
        rubric: str,
        *,
        name: str = "llm_judge",
        kind: Kind = "pass/fail",
        field: str | None = "expected",
        timeout: float = 120.0,
    ) -> None:
        where = "llm_judge"
        check.instance(where, "model_client", model_client, ChatCompletionClient, "an nbagent model client")
        self.rubric = check.string(where, "rubric", rubric, empty=False) or ""
        self.field = check.string(where, "field", field, none=True, empty=False)
        self.timeout = check.number(where, "timeout", timeout, positive=True) or 120.0
        self.model_client = model_client
        self.model = _model_name(model_client)
        #: The judge's own runs (one per call made, none for a cached verdict).
        self.trace = Trace()
        #: key -> (the judge's answer, the score): the verdicts by (prompt, model).
        self.cache: dict[str, tuple[str, float]] = {}
        super().__init__(check.string(where, "name", name, empty=False) or "llm_judge", kind)

    def prompt(self, output: str | None, row: Mapping[str, Any]) -> str:
        """What the judge is asked about one answer."""
        expected = ""
        if self.field is not None and row.get(self.field) is not None:
            expected = f"\nExpected answer ({self.field}):\n{row[self.field]}\n"
        return JUDGE_PROMPT.format(
            rubric=self.rubric, task=_text(row.get("task")), expected=expected, output=_text(output)
        )

    def key(self, prompt: str) -> str:
        """The cache key of a prompt: a hash of the model, the kind and the prompt."""
        return hashlib.sha256(f"{self.model}\0{self.kind}\0{prompt}".encode()).hexdigest()

    async def score(
        self, output: str | None, row: Mapping[str, Any], run: Callable[[], TraceFrames], token: CancellationToken
    ) -> bool | float:
        prompt = self.prompt(output, row)
        key = self.key(prompt)
        cached = self.cache.get(key)
        if cached is None:
            answer = await self._ask(prompt, token)
            cached = (answer, self._verdict(answer))
            self.cache[key] = cached
        return self.checked(cached[1] == 1.0 if self.kind == "pass/fail" else cached[1])

    async def _ask(self, prompt: str, token: CancellationToken) -> str:
        verdict = "VERDICT: PASS or VERDICT: FAIL" if self.kind == "pass/fail" else "SCORE: <a number from 0 to 1>"
        agent = AssistantAgent(  # named "judge" whatever the score's name (an agent's name is an identifier)
            "judge", self.model_client, system_message=JUDGE_SYSTEM.format(verdict=verdict), description="a judge"
        )
        agent.recorders[:] = [r for r in agent.recorders if r is not agent.trace]
        self.trace.attach(agent)
        try:
            async with asyncio.timeout(self.timeout):
                result = await agent.run(task=prompt, cancellation_token=token)
        finally:
            self.trace.detach(agent)
        return mask(result.messages[-1].to_text(), process_secrets(agent.secrets))  # kept in the cache

    def _verdict(self, answer: str) -> float:
        if self.kind == "pass/fail":
            found = _VERDICT.findall(answer)
            if not found:
                raise ValueError(
                    f"the judge's answer has no line 'VERDICT: PASS' or 'VERDICT: FAIL': {answer[-200:]!r}"
                )
            return 1.0 if found[-1].upper() == "PASS" else 0.0
        numbers = _SCORE.findall(answer)
        if not numbers:
            raise ValueError(f"the judge's answer has no line 'SCORE: <number>': {answer[-200:]!r}")
        return float(numbers[-1])


def _model_name(client: ChatCompletionClient) -> str:
    """The model a client calls (its config's ``model``), else its class: part of the judge's cache key."""
    try:
        config = client.dump_component().config
    except Exception:  # a client that cannot describe itself
        config = {}
    model = config.get("model") if isinstance(config, Mapping) else None
    return str(model) if model else type(client).__name__


def llm_judge(
    model_client: ChatCompletionClient,
    rubric: str = "Does the answer complete the task correctly?",
    *,
    name: str = "llm_judge",
    kind: Kind = "pass/fail",
    field: str | None = "expected",
    timeout: float = 120.0,
) -> Judge:
    """A :class:`Judge`: ``model_client`` (any nbagent model client) grades each answer by ``rubric``, given
    the task, the task's ``field`` (the expected answer, when the task has it) and the answer; ``kind``
    ``"pass/fail"`` (it ends with ``VERDICT: PASS`` or ``FAIL``) or ``"number"`` (``SCORE: x``). Each call has
    ``timeout`` seconds."""
    return Judge(model_client, rubric, name=name, kind=kind, field=field, timeout=timeout)
