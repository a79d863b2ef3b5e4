"""nbagent's excepthook (one line for an interrupt that ends a script) is installed at the first interrupt,
as docs/contract.md says: not by a run that a timeout cancelled (asyncio.timeout's TimeoutError)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import nbagent

HEAD = """
import asyncio, signal, sys
from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient

# Ctrl-C as in a terminal: a child inherits an ignored SIGINT (a background job's, as `cmd &` in a script
# leaves it), and Python then installs no handler, so the interrupt would never arrive.
signal.signal(signal.SIGINT, signal.default_int_handler)

async def wait(seconds: float) -> str:
    \"\"\"Wait.\"\"\"
    await asyncio.sleep(seconds)
    return "waited"

def agent() -> AssistantAgent:
    calls = [FunctionCall(id="c1", name="wait", arguments='{"seconds": 30}')]
    call = CreateResult(finish_reason="function_calls", content=calls)
    return AssistantAgent("a", ReplayChatCompletionClient([call, "done"]), tools=[wait])
"""


def _script(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.py"
    script.write_text(HEAD + textwrap.dedent(body), encoding="utf-8")
    src = str(Path(nbagent.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env, check=False
    )


@pytest.mark.slow
def test_a_timed_out_run_installs_no_excepthook(tmp_path: Path) -> None:
    done = _script(
        tmp_path,
        """
        async def main() -> None:
            try:
                async with asyncio.timeout(0.2):
                    await agent().run(task="go")
            except TimeoutError:
                print("timed out; excepthook is Python's:", sys.excepthook is sys.__excepthook__)

        asyncio.run(main())
        """,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "timed out; excepthook is Python's: True"


@pytest.mark.slow
def test_ctrl_c_under_asyncio_run_ends_the_script_in_one_line(tmp_path: Path) -> None:
    done = _script(
        tmp_path,
        """
        async def main() -> None:
            asyncio.get_running_loop().call_later(0.3, signal.raise_signal, signal.SIGINT)
            await agent().run(task="go")

        asyncio.run(main())
        """,
    )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("KeyboardInterrupt: "), done.stderr
    assert "interrupted" in lines[0]


@pytest.mark.slow
def test_the_one_line_shows_a_cancellers_controls(tmp_path: Path) -> None:
    done = _script(
        tmp_path,
        """
        async def main() -> None:
            main_task = asyncio.current_task()
            asyncio.get_running_loop().call_later(0.3, main_task.cancel, "stop\\x1b]52;c;aGk=\\x07 now\\u202e")
            await agent().run(task="go")

        asyncio.run(main())
        """,
    )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("CancelledError: "), done.stderr
    assert lines[0].endswith("(cancelled with: stop\\x1b]52;c;aGk=\\x07 now<U+202E>)")
