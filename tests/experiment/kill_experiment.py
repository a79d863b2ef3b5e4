"""An experiment the kill test SIGKILLs mid-run: ``python -m tests.experiment.kill_experiment ROOT``.

Runs ``Experiment(arithmetic(40), {"a": slow}, output=ROOT, part_size=4, concurrency=4)``, each run's
replay model waiting 50 ms, so parts are committed while other runs go on.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from nbagent import AssistantAgent, Experiment, ReplayChatCompletionClient, exact_match
from tests.experiment.helpers import arithmetic

TASKS = 40


def slow(row: dict[str, Any]) -> AssistantAgent:
    return AssistantAgent("slow", ReplayChatCompletionClient([str(row["expected"])], latency=0.05))


def main() -> None:
    root = Path(sys.argv[1])
    exp = Experiment(arithmetic(TASKS), {"a": slow}, [exact_match()], output=root, part_size=4, concurrency=4,
                     progress=None)  # fmt: skip
    exp.run_sync()


if __name__ == "__main__":
    main()
