"""Hostile text stays text: terminal controls, bidi and zero-width marks from a model, a tool, a server or
a task are shown, never obeyed, in every terminal text (Console over nbagent's and AutoGen's streams,
show()/start() in a script, to_text, ModelError) and the bidi/zero-width marks in every HTML view."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import nbagent
from nbagent import (
    AssistantAgent,
    CreateResult,
    FunctionCall,
    ModelError,
    OpenAIChatCompletionClient,
    ReplayChatCompletionClient,
    RequestUsage,
    TextMessage,
    ToolCallRequestEvent,
)
from nbagent.printable import printable, visible_marks
from nbagent.records import RunFinished
from nbagent.render import el, escape, markdown, to_html, to_text
from nbagent.render.textlog import TextLog
from tests.models.chat_server import ChatServer, Reply

OSC52 = "\x1b]52;c;aGVsbG8=\x07"  # writes the clipboard
CLEAR = "\x1b[2J"  # clears the screen
OSC8 = "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\"  # a forged link
CSI8 = "\x9b31m"  # the 8-bit CSI
RLO = "read\u202etxt.exe"  # reads "readexe.txt"
HOSTILE = f"A{OSC52}B{CLEAR}C{OSC8}D{CSI8}E\rF{RLO}G\u200bH\u2066I\u2069J\x00K\x7fL\x85M"

# What a terminal would obey, left in a text that reaches it: C0 controls but \t and \n (and the \r of
# a CRLF), DEL, C1 controls, bidi controls and zero-width marks.
_RAW = re.compile("[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]|\r(?!\n)")


def assert_inert(text: str) -> None:
    assert _RAW.search(text) is None, repr(_RAW.search(text))


def test_printable_shows_every_control_and_mark_and_keeps_lines() -> None:
    shown = printable(HOSTILE)
    assert_inert(shown)
    assert shown == (
        "A\\x1b]52;c;aGVsbG8=\\x07B\\x1b[2JC\\x1b]8;;http://evil.example/\\x1b\\click\\x1b]8;;\\x1b\\D\\x9b31mE"
        "\\rFread<U+202E>txt.exeG<U+200B>H<U+2066>I<U+2069>J\\x00K\\x7fL\\x85M"
    )
    assert printable(shown) == shown  # idempotent: a text shown twice reads the same
    assert printable("line 1\r\nline 2\n\tindented") == "line 1\r\nline 2\n\tindented"
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # an emoji sequence keeps its joiners
    assert printable(family) == family and printable("a\u200db") == "a<U+200D>b"
    for emoji in ("\U0001f3f3\ufe0f\u200d\U0001f308", "\u2764\ufe0f\u200d\U0001f525", "\U0001f3c3\u200d\u2640\ufe0f"):
        assert printable(emoji) == emoji
    # Between letters of any script a joiner hides (kana, CJK, arrows are no emoji it could join).
    assert printable("\u3042\u200d\u3044") == "\u3042<U+200D>\u3044"
    assert printable("\u4e2d\u200d\u6587") == "\u4e2d<U+200D>\u6587"
    assert printable("naïve café — 日本語 ✓") == "naïve café — 日本語 ✓"


def test_visible_marks_shows_only_the_marks() -> None:
    assert visible_marks(RLO) == "read<U+202E>txt.exe"
    assert visible_marks("a\u200bb\ufeffc") == "a<U+200B>b<U+FEFF>c"
    assert visible_marks("plain\ttext\n") == "plain\ttext\n"


def test_html_escaping_path_makes_bidi_and_zero_width_marks_visible() -> None:
    assert escape(RLO) == "read&lt;U+202E&gt;txt.exe"
    assert "\u202e" not in el("span", RLO, title=RLO)
    assert el("span", RLO, title=RLO).count("read&lt;U+202E&gt;txt.exe") == 2
    assert "read&lt;U+202E&gt;txt.exe" in markdown(f"**{RLO}**") and "\u202e" not in markdown(RLO)
    event = ToolCallRequestEvent(content=[FunctionCall(id="c1", name=RLO, arguments='{"p": "a\u200bb"}')], source="a")
    html = to_html(event)
    assert "\u202e" not in html and "\u200b" not in html and "read&lt;U+202E&gt;txt.exe" in html


def test_to_text_of_every_item_shows_controls() -> None:
    items: list[object] = [
        TextMessage(content=HOSTILE, source=f"user{CLEAR}"),
        ToolCallRequestEvent(content=[FunctionCall(id="c1", name=RLO, arguments=HOSTILE)], source="a"),
        RunFinished(run_id="r", agent="a", status="error", error=HOSTILE),
    ]
    for item in items:
        for full in (False, True):
            text = to_text(item, full)
            assert text is not None
            assert_inert(text)


def _hostile_agent(stream: bool) -> AssistantAgent:
    async def lookup(query: str) -> str:
        """Look something up."""
        return f"found {HOSTILE}"

    call = CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id="c1", name="lookup", arguments='{"query": "' + HOSTILE.replace("\x00", "") + '"}')],
        usage=RequestUsage(prompt_tokens=1, completion_tokens=1),
        thought=f"thinking {HOSTILE}",
    )
    model = ReplayChatCompletionClient([call, f"the answer {HOSTILE}\r\nsecond line"])
    return AssistantAgent("a", model, tools=[lookup], reflect_on_tool_use=True, model_client_stream=stream)


@pytest.mark.parametrize("stream", [False, True])
async def test_console_over_nbagents_stream_prints_no_control(stream: bool) -> None:
    out = io.StringIO()
    await nbagent.Console(_hostile_agent(stream).run_stream(task=f"task {HOSTILE}"), output=out, output_stats=True)
    text = out.getvalue()
    assert_inert(text)
    assert text.count("read<U+202E>txt.exe") >= 4  # task, thought, arguments, result, answer
    assert "the answer A\\x1b]52;c;aGVsbG8=\\x07B" in text and "\r\nsecond line" in text


def test_streamed_crlf_split_at_the_hold_stays_a_line_end() -> None:
    log = TextLog()
    pieces = [log.text("x" * 200 + "\r"), log.text("\n" + "y" * 300), log.close()]
    assert "\\r" not in "".join(pieces) and "x" * 200 + "\r\n" + "y" * 300 in "".join(pieces)


async def test_console_over_autogens_stream_prints_no_control() -> None:
    from autogen_agentchat.agents import AssistantAgent as AgAssistant
    from autogen_ext.models.replay import ReplayChatCompletionClient as AgReplay

    out = io.StringIO()
    agent = AgAssistant("a", AgReplay([f"hello {HOSTILE}"]))
    await nbagent.Console(agent.run_stream(task=f"hi {HOSTILE}"), output=out)
    assert_inert(out.getvalue())
    assert out.getvalue().count("read<U+202E>txt.exe") == 2


def test_model_error_shows_a_servers_controls() -> None:
    assert_inert(str(ModelError(HOSTILE)))
    with ChatServer() as server:
        server.script(Reply.error(500, f"overloaded {HOSTILE}"))
        client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key="sk-test", max_retries=0)
        agent = AssistantAgent("a", client)
        with pytest.raises(ModelError) as raised:
            agent.run_sync("hi")
    assert "overloaded A\\x1b]52;c;aGVsbG8=\\x07B" in str(raised.value)
    assert_inert(str(raised.value))


@pytest.mark.slow
def test_show_and_start_in_a_script_print_no_control(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import asyncio
            import nbagent
            from nbagent import AssistantAgent, ReplayChatCompletionClient

            HOSTILE = {HOSTILE!r}

            async def main() -> None:
                model = ReplayChatCompletionClient(["one " + HOSTILE, "two " + HOSTILE])
                agent = AssistantAgent("a", model)
                print(await nbagent.show(agent, "task " + HOSTILE))
                await nbagent.start(agent, "again " + HOSTILE).wait()

            asyncio.run(main())
            """
        ),
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, timeout=120, cwd=tmp_path, env=_env(), check=False
    )
    out = done.stdout.decode("utf-8")
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    assert_inert(out)
    assert "task A\\x1b]52;c;aGVsbG8=\\x07B" in out and "one A\\x1b]52" in out and "two A\\x1b]52" in out


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    src = str(Path(nbagent.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
    return env


class _FailingModel:
    """A duck-typed model client whose every call fails with a server's words in its error (as a bridged
    AutoGen client's SDK error carries them)."""

    model_info = {"vision": False, "function_calling": True, "json_output": False, "family": "unknown"}

    async def create(self, *args: object, **kwargs: object) -> object:
        raise RuntimeError(f"Error code: 500 - {HOSTILE}")


def test_the_repeated_task_warning_shows_a_failed_runs_error_inert() -> None:
    agent = AssistantAgent("a", _FailingModel())
    with pytest.raises(RuntimeError):
        agent.run_sync("same task")
    with pytest.warns(nbagent.RepeatedTaskWarning) as warned, pytest.raises(RuntimeError):
        agent.run_sync("same task")
    # the warning of the repeated task (another test's socket collected meanwhile may warn first)
    message = next(str(w.message) for w in warned if issubclass(w.category, nbagent.RepeatedTaskWarning))
    assert "Error code: 500 - A\\x1b]52;c;aGVsbG8=\\x07B" in message
    assert_inert(message)


def test_a_loaded_files_column_type_is_named_inert(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from nbagent.trace.parquet import read_table_file

    path = tmp_path / "part-0.parquet"
    hostile = pa.array([{f"k{CLEAR}{RLO}": 1}])  # a struct column whose field name is the file's
    pq.write_table(pa.table({"trace_id": hostile}), path)
    with pytest.raises(ValueError, match="column 'trace_id' is struct") as raised:
        read_table_file(path, "runs")
    assert_inert(str(raised.value))


def test_an_explained_cancellation_shows_the_cancellers_controls_in_ipython_too() -> None:
    """IPython (a terminal IPython too) prints ``_render_traceback_``'s lines as they are; a thread's
    exception goes through Python's own hook, which prints the error's text."""
    import asyncio

    from nbagent.interrupts import explain_cancellation, one_line

    error = asyncio.CancelledError(f"stop {OSC52}{RLO}")
    explain_cancellation(error, "the run was cancelled")
    shown = [*error._render_traceback_(), str(error), one_line(error) or ""]  # type: ignore[attr-defined]
    for text in shown:
        assert_inert(text)
        assert text.endswith("(cancelled with: stop \\x1b]52;c;aGVsbG8=\\x07read<U+202E>txt.exe)")


async def test_the_consoles_summary_shows_a_finish_reasons_controls() -> None:
    """A team's finish reason is its termination condition's words, which may quote a message."""
    from nbagent.messages import TaskResult

    async def stream() -> object:
        yield TaskResult(messages=[], stop_reason=f"'{RLO}' said {CLEAR}stop")

    out = io.StringIO()
    await nbagent.Console(stream(), output=out, output_stats=True)
    assert_inert(out.getvalue())
    assert "Finish reason: 'read<U+202E>txt.exe' said \\x1b[2Jstop" in out.getvalue()
