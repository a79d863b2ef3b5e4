"""The README's offline example runs as printed, and its set-up commands are the ones CI runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_ten_line_example_runs_offline() -> None:
    code = re.search(r"## Ten lines, offline\n\n```python\n(.*?)```", README, re.S)
    assert code is not None
    done = subprocess.run([sys.executable, "-c", code.group(1)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "TextMessage What is 2 + 3?",
        "ToolCallRequestEvent [FunctionCall(id='c1', name='add', arguments='{\"a\": 2, \"b\": 3}')]",
        "ToolCallExecutionEvent [FunctionExecutionResult(content='5', name='add', call_id='c1', is_error=False)]",
        "TextMessage 2 + 3 = 5",
    ]


def test_ci_runs_the_readme_test_command() -> None:
    setup = README.split("## Set-up", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    test_command = next(line for line in setup.splitlines() if "pytest" in line and not line.startswith("#"))
    assert test_command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
