"""nbagent.set_language("zh"): the loop explained in the design description's terms; "en" puts English back."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import nbagent
from nbagent import MOVES, AssistantAgent, ReplayChatCompletionClient
from nbagent.records import Intervention, LoopSettings, Move
from nbagent.render import pipeline, to_html, to_text

DESIGN = (Path(__file__).resolve().parents[2] / "docs" / "design.zh.md").read_text(encoding="utf-8")
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture
def chinese() -> Iterator[None]:
    english = dict(MOVES)
    nbagent.set_language("zh")
    try:
        yield
    finally:
        nbagent.set_language("en")
        assert MOVES == english


def test_every_move_is_explained_in_chinese_in_the_design_descriptions_terms(chinese: None) -> None:
    assert nbagent.get_language() == "zh"
    for name, info in MOVES.items():
        assert CJK.search(info.explanation) and CJK.search(info.label + info.title), name
        for part in filter(None, (p.strip() for p in re.split("[:,]", info.title))):
            assert part in DESIGN, f"{name}: {part!r} is not how the design description says it"
    assert MOVES["add_messages"].title == "新消息进 model_context"
    assert MOVES["message_id"].title == "生成 message_id" and MOVES["call_llm"].title == "第一次调 LLM"
    assert MOVES["call_llm"].method == "_call_llm"  # names of the code stay as the code spells them
    assert {edge.label for info in MOVES.values() for edge in info.edges} <= {
        "",
        "纯文本",
        "工具调用",
        "又是工具调用",
        "答案",
        "总结",
        "HandoffMessage",
        "还没到最后一轮",
        "循环结束",
        "有记忆",
        "没有记忆",
    }


def test_views_and_lines_read_the_language(chinese: None) -> None:
    move = Move("run", "reflect")
    assert to_text(move) == "-- STEP 5: 再调一次 LLM 生成自然语言总结 (reflect)  [_reflect_on_tool_use_flow]"
    html = str(to_html(move))
    assert "带着工具结果再调一次 LLM" in html and "STEP 5" in html
    diagram = str(pipeline([LoopSettings(reflect_on_tool_use=True)]))
    assert "反思 (LLM)" in diagram and "reflect (LLM)" not in diagram


async def test_the_stepper_explains_in_chinese(chinese: None) -> None:
    agent = AssistantAgent("assistant", ReplayChatCompletionClient(["你好"]))
    stepper = nbagent.Stepper(agent, "hi")
    first = await stepper.next()
    assert first.title == "新消息进 model_context"
    await stepper.run_to_end()


def test_english_is_back_and_a_wrong_language_is_refused() -> None:
    nbagent.set_language("en")
    assert MOVES["call_llm"].title == "Call the LLM" and nbagent.get_language() == "en"
    with pytest.raises(ValueError, match=r"nbagent\.set_language: language must be one of 'en', 'zh', got 'fr'"):
        nbagent.set_language("fr")  # type: ignore[arg-type]
    assert nbagent.get_language() == "en"


async def test_the_stepper_speaks_the_language(chinese: None) -> None:
    """Issue 43.7: in the Chinese notebook the stepper's headings, notes and buttons stayed in English."""
    from nbagent.notebook.stepper_widget import stepper_html

    agent = AssistantAgent("bot", ReplayChatCompletionClient(["done"]))
    stepper = nbagent.step(agent, "hi")
    ready = stepper_html(stepper)
    assert "准备走一遍循环" in ready and "bot 的任务:" in ready and "下一步:STEP 1 · 新消息进 model_context" in ready
    widget = stepper.widget()
    assert [widget.next_button.description, widget.run_button.description, widget.reset_button.description] == [
        "下一步",
        "跑到底",
        "重来",
    ]
    panel = widget.fork_panel
    assert panel.fork_button.description == "从这里分叉"
    await stepper.next()
    await stepper.next()
    assert panel.give_answer is not None and panel.give_answer.description == "给出回答"  # paused before call_llm
    fork = await stepper.fork()
    compare_button = fork.widget().fork_panel.compare_button
    assert compare_button is not None and compare_button.description == "和父分支比较"
    assert nbagent.compare(stepper, fork).widget().refresh_button.description == "刷新"
    moved = stepper_html(stepper)
    assert "这一步的事件" in moved and "这一步之后的上下文(新增" in moved and "已走 2 步" in moved
    for english in ("Ready to walk the loop", "Events of this move", "Model context after this move", " moves"):
        assert english not in moved + ready, english
    await stepper.run_to_end()
    assert "运行已结束" in stepper_html(stepper)


async def test_a_walk_with_tool_calls_speaks_the_language(chinese: None) -> None:
    """Issue 43.7 (review): past the first moves of a text answer the Chinese stepper still spoke English: the
    tool results' title, a move's "tool-loop iteration" line, the context table's columns and its "added"
    rows, the diagram's end node and the give row's placeholders."""
    from nbagent.demo import SCRIPTED_TASK, scripted_agent
    from nbagent.notebook.stepper_widget import stepper_html

    stepper = nbagent.step(scripted_agent(), SCRIPTED_TASK)
    panel = stepper.widget().fork_panel
    await stepper.run_until(move="tool_request")  # paused before the tools run: the give row for a tool
    assert panel.value is not None and panel.value.placeholder == "工具的结果或错误"
    assert panel.call_id is not None and panel.call_id.description == "工具调用"
    assert "2 个工具调用,并行执行" in stepper_html(stepper) and "已请求:下一步执行" in stepper_html(stepper)
    panel.value.value = "no network"
    assert panel.give_error is not None
    panel.give_error.click()
    assert "下一步:工具调用 call_1 将得到错误 &#x27;no network&#x27;" in panel.note.value
    await stepper.run_until(move="tool_execution")  # before the reflection: the give row for the answer
    assert panel.answer is not None and panel.answer.placeholder == "模型的回答"
    page = str(stepper_html(stepper))
    shown = re.sub(r"<[^>]+>", "\n", re.sub(r"<style>.*?</style>", "", page, flags=re.DOTALL))
    for chinese_text in ("工具结果", "工具循环第 1 轮(loop_iteration=0)", "由哪一步加入", "(运行结束)", ">新增<"):
        assert chinese_text in page, chinese_text
    english_texts = ("tool results", "tool-loop iteration", "added by", "(run ends)", "The run ends", "\nadded\n")
    for english in (*english_texts, "run in parallel", "\nresult\n", "\nerror\n"):
        assert english not in shown, english
    assert 'data-change="added"' in page  # the rows' data stay as the code spells them (styles, tests)
    change = Intervention("r", 5, "tool_result", "call_1 (get_weather): error 'boom'")
    assert "第 5 步之前改动(tool_result):" in str(to_html(change))  # a fork's change, in its run's view
    await stepper.run_to_end()
