"""Two variants of a weather agent run over the same tasks through one real Batch (replay models), and
the experiment a comparison reads of them (``results``, ``trace``, ``scorers``, ``tasks``).

Variant ``a`` looks the city up and answers "It is sunny in <city>."; variant ``b`` does the same except
on the tasks of :data:`PARTS`, where it parts from ``a`` at a known move.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from nbagent import AssistantAgent, Batch, CreateResult, FunctionCall, FunctionTool, ReplayChatCompletionClient
from nbagent.trace import TraceFrames


def lookup(city: str) -> str:
    """The weather of a city."""
    return f"sunny in {city}"


def lookup_wrong(city: str) -> str:
    """The weather of a city, as a broken service tells it."""
    return f"rain in {city}"


def forecast(city: str) -> str:
    """Tomorrow's weather of a city."""
    return f"cloudy in {city}"


PARTS = {
    "t1": "llm_answer",  # b answers differently
    "t2": "tool_arguments",  # b looks up another city
    "t3": "tool_choice",  # b calls another tool
    "t4": "tool_result",  # b's tool answers otherwise
    "t5": "tool_choice",  # b answers without calling a tool
}


def _call(name: str, city: str) -> CreateResult:
    call = FunctionCall(id="c1", name=name, arguments=f'{{"city": "{city}"}}')
    return CreateResult(finish_reason="function_calls", content=[call])


def make_agent(row: pd.Series) -> AssistantAgent:
    """The agent of one batch task: its variant (``row.variant``) on its task."""
    city, variant, task_id = str(row["task"]), str(row["variant"]), str(row["task_id"])
    part = PARTS.get(task_id) if variant == "b" else None
    tool = FunctionTool(lookup)
    script: list[str | CreateResult] = [_call("lookup", city), f"It is sunny in {city}."]
    if part == "llm_answer":
        script = [_call("lookup", city), "No idea."]
    elif part == "tool_arguments":
        script = [_call("lookup", "Atlantis"), f"It is sunny in {city}."]
    elif part == "tool_choice" and task_id == "t3":
        script = [_call("forecast", city), f"It is cloudy in {city}."]
    elif part == "tool_choice":
        script = [f"I guess {city} is sunny."]
    elif part == "tool_result":
        tool = FunctionTool(lookup_wrong, name="lookup")
    tools = [tool, FunctionTool(forecast)]
    client = ReplayChatCompletionClient(script)
    return AssistantAgent("weather", client, tools=tools, reflect_on_tool_use=True)


@dataclass
class PairedRuns:
    """What a comparison reads of an experiment."""

    results: pd.DataFrame
    trace: TraceFrames
    tasks: pd.DataFrame
    scorers: dict[str, Any] = field(default_factory=dict)


def correct(answer: str, row: dict[str, Any]) -> bool:
    return f"sunny in {row['task']}" in answer


def brevity(answer: str, row: dict[str, Any]) -> float:
    return 1.0 / (1 + len(answer))


def run_pairs(tasks: pd.DataFrame, repeats: int = 1, **batch: Any) -> PairedRuns:
    """Both variants over ``tasks`` (``task_id``, ``task``), ``repeats`` times, through one Batch, scored."""
    grid = [
        {"variant": variant, "repeat": repeat, **row}
        for variant in ("a", "b")
        for row in tasks.to_dict("records")
        for repeat in range(repeats)
    ]
    frame = pd.DataFrame(grid)
    done = Batch(make_agent, frame, progress=None, **batch).run_sync()
    raw = done.results
    results = pd.DataFrame(
        {
            "variant": pd.Categorical(frame["variant"]),
            "task_id": frame["task_id"].astype("string"),
            "repeat": frame["repeat"].astype("Int64"),
            "run_id": raw["run_id"].astype("string"),
            "status": raw["status"],
            "correct": pd.array(
                [correct(str(answer), row) for answer, row in zip(raw["answer"], frame.to_dict("records"))],
                dtype="boolean",
            ),
            "brevity": [brevity(str(answer), row) for answer, row in zip(raw["answer"], frame.to_dict("records"))],
            "tokens": (raw["prompt_tokens"].fillna(0) + raw["completion_tokens"].fillna(0)).astype("Int64"),
            "latency_s": raw["duration_s"].astype("float64"),
        }
    )
    return PairedRuns(results, done.trace, tasks, {"correct": correct, "brevity": brevity})


def weather_tasks(n: int) -> pd.DataFrame:
    """``n`` tasks ``t0``..: a city each."""
    cities = ["Paris", "Oslo", "Lima", "Pune", "Kyiv", "Rome", "Bern", "Doha", "Riga", "Oulu"]
    return pd.DataFrame(
        {
            "task_id": [f"t{i}" for i in range(n)],
            "task": [cities[i % len(cities)] + str(i // 10 or "") for i in range(n)],
        }
    )
