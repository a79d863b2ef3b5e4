"""Agent factories for the Spark tests: picklable (module-level), run on the executors."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from nbagent import AssistantAgent, ReplayChatCompletionClient
from tests.batch.helpers import LOOKUP, tool_script


def weather(row: dict[str, Any]) -> AssistantAgent:
    """A replay agent for the task's city: a tool call, then an answer naming the city."""
    client = ReplayChatCompletionClient(tool_script(str(row["task"])))
    return AssistantAgent("weather", client, tools=[LOOKUP], reflect_on_tool_use=True)


def local_weather(task: Any) -> AssistantAgent:
    """The same agent for a local Batch of the same DataFrame (given the row as a pandas Series)."""
    return weather(task.to_dict())


def first_time(marker: Path) -> bool:
    """True the first time any process asks about ``marker`` (it is made then)."""
    try:
        marker.touch(exist_ok=False)
    except FileExistsError:
        return False
    return True


def raises_once(row: dict[str, Any]) -> AssistantAgent:
    """``weather``, but the factory raises on the task whose ``fail`` column is a marker path, the first time."""
    if row["fail"] and first_time(Path(row["fail"])):
        raise RuntimeError(f"the factory failed on {row['task_id']} (first attempt)")
    return weather(row)


def dies_once(row: dict[str, Any]) -> AssistantAgent:
    """``weather``, but on the task whose ``die`` column names a marker, the first time, the executor's Python
    worker dies: at once (``die_at=factory``: the part in memory is lost), or while it writes its next part,
    once the part's events file is in place (``die_at=rename``: the part is left half moved into place)."""
    if row["die"] and first_time(Path(row["die"])):
        if row["die_at"] == "factory":
            os._exit(17)
        import nbagent.trace.parquet as parquet

        move = parquet._move_into_place  # noqa: SLF001 (the writer killed between two renames)

        def killed(pending: Path, root: Path, table: str, session: str, number: int) -> None:
            move(pending, root, table, session, number)
            if table == "events":
                os._exit(18)

        parquet._move_into_place = killed  # noqa: SLF001
    return weather(row)


def served(row: dict[str, Any]) -> AssistantAgent:
    """An agent of the OpenAI client against the test's server at the row's ``base_url`` (one request a task)."""
    from nbagent import OpenAIChatCompletionClient

    client = OpenAIChatCompletionClient("gpt-4o", base_url=row["base_url"], api_key="local-test", max_retries=0)
    return AssistantAgent("served", client)
