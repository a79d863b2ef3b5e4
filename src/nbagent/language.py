"""The language of the texts that explain the loop: English, or Chinese in the design description's terms.

``nbagent.set_language("zh")`` puts each move of :data:`nbagent.records.MOVES` (its title, its label,
its explanation and the labels of its edges) in Chinese, as the design description
(``docs/design.zh.md``) writes the STEPs and their terms; the stepper, its diagram, the live view's
STEP headings and the terminal's lines read them from there. ``set_language("en")`` puts English
back. Names of methods, classes and parameters (``_call_llm``, ``HandoffMessage``,
``max_tool_iterations``) stay as the code spells them, in both languages.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from . import _check as check
from .records import MOVES, MoveName

__all__ = ["LANGUAGES", "Language", "get_language", "set_language", "words"]

Language = Literal["en", "zh"]
LANGUAGES: tuple[Language, ...] = ("en", "zh")

# title, label, explanation of each move, in the design description's words.
_ZH: dict[MoveName, tuple[str, str, str]] = {
    "add_messages": (
        "新消息进 model_context",
        "新消息进上下文",
        "这次调用的新消息被加进 model_context,也就是 agent 的\u201c短期记忆\u201d。model_context 跨多次调用持续存在,"
        "所以每次只把新消息传进来,别把整段历史重复喂进去:那样每条消息都会进去两次。失败的运行的任务也留在上下文里:"
        "agent.retry() 从那里接着跑,不会再加一次。",
    ),
    "memory": (
        "查记忆、把命中的塞进上下文",
        "查记忆",
        "用上下文查询每个记忆库。上下文里还没有的命中内容作为一条 system message 塞进上下文;每个有命中的记忆库"
        "吐一个 MemoryQueryEvent,在任何 LLM 事件之前。",
    ),
    "message_id": (
        "生成 message_id",
        "生成 message_id",
        "调 LLM 之前先生成 message_id(用于关联流式分片):流式分片在它们组成的消息存在之前,就能用 full_message_id "
        "指向那条消息。",
    ),
    "call_llm": (
        "第一次调 LLM",
        "调 LLM",
        "把 system message + 上下文拼成 llm_messages,收集所有 workbench 的工具 + handoff 工具(每个 handoff 一个),"
        "按 model_client_stream 走流式或一次性 create。模型回文本或工具调用;流式文本以分片到达,带着 message_id。",
    ),
    "text_exit": (
        "纯文本:直接当最终答案返回",
        "纯文本 → 答案",
        "content 是 str:模型不再要工具、给了文本,直接当最终答案返回(TextMessage,设了 output_content_type 时是 "
        "StructuredMessage),结束。这是循环唯一的\u201c正常出口\u201d,不管还剩几轮。",
    ),
    "tool_request": (
        "有工具调用:吐 ToolCallRequestEvent",
        "工具调用",
        "content 是 [FunctionCall]:模型要调工具,进入\u201c工具循环\u201d。带工具调用的 assistant 消息进上下文,"
        "吐 ToolCallRequestEvent(模型先思考过的话,在 ThoughtEvent 之后)。",
    ),
    "tool_execution": (
        "并发执行所有工具",
        "执行工具",
        "所有工具用 asyncio.gather 并发执行,工具执行期间的流式事件实时吐出。一个 ToolCallExecutionEvent 按调用顺序"
        "带着所有结果,结果进上下文。工具出错、工具不存在或参数不对都给出错误结果,循环继续。",
    ),
    "handoff_check": (
        "是 handoff 调用?",
        "handoff?",
        "_check_and_handle_handoff 在工具执行后检查:若有 handoff 调用,产出一个 HandoffMessage(带 target 和上下文)"
        "并结束,上下文里留着其他调用和结果。多个 handoff 只执行第一个,会告警。",
    ),
    "next_llm_call": (
        "再调一次 LLM,带着工具结果",
        "再调 LLM",
        "还没到最后一轮(max_tool_iterations):带着工具结果再调一次 LLM,回到循环顶处理新的结果。",
    ),
    "reflect": (
        "再调一次 LLM 生成自然语言总结 (reflect)",
        "反思 (LLM)",
        "循环结束,reflect_on_tool_use 为 True:带着工具结果再调一次 LLM(不给工具,tool_choice='none'),"
        "产出自然语言/结构化最终答案。",
    ),
    "summarize": (
        "把工具结果格式化成 ToolCallSummaryMessage",
        "总结",
        "循环结束,reflect_on_tool_use 为 False:最后一批工具结果按 tool_call_summary_format 直接格式化成 "
        "ToolCallSummaryMessage 当答案返回。",
    ),
}
# The labels of the edges between moves (an edge whose English label is not here keeps it).
_ZH_EDGES = {
    "text": "纯文本",
    "tool calls": "工具调用",
    "tool calls again": "又是工具调用",
    "answer": "答案",
    "summary": "总结",
    "handoff": "HandoffMessage",
    "iterations left": "还没到最后一轮",
    "iterations used up": "循环结束",
    "memory": "有记忆",
    "no memory": "没有记忆",
}

# The words of the stepper's headings, buttons and notes ({name}: filled in after the lookup).
_ZH_WORDS = {
    "Ready to walk the loop": "准备走一遍循环",
    "Task for {name}:": "{name} 的任务:",
    "Model context": "上下文(model_context)",
    "Events of this move": "这一步的事件",
    "no events in this move": "这一步没有事件",
    "the model context is empty": "上下文是空的",
    "Model context after this move (+{added} added, {changed} changed)": (
        "这一步之后的上下文(新增 {added} 条,改动 {changed} 条)"
    ),
    "Request sent to {model} ({purpose} call)": "发给 {model} 的请求({purpose} 调用)",
    "Raw CreateResult": "模型返回的原始 CreateResult",
    "not returned (the call failed)": "没有返回(调用失败)",
    "tools ({count})": "工具({count} 个)",
    "parameters": "参数",
    "Next: STEP {step} · {title}": "下一步:STEP {step} · {title}",
    "The run is over ({status}). Reset to walk it again.": "运行已结束({status})。点“重来”再走一遍。",
    "{status} · {moves} moves": "{status} · 已走 {moves} 步",
    "(a saved copy: run the cell to step it)": "(保存的副本:运行这个单元格才能单步走)",
    "Fork of run {run} at move {move}: {change}": "从运行 {run} 的第 {move} 步分叉:{change}",
    "no change yet": "还没有改动",
    "this move was forked: make the change in the fork below (or fork here again)": (
        "这一步已经分叉:请在下面的分叉里改(或在这里再分叉一次)"
    ),
    "Fork here": "从这里分叉",
    "Fork the walk here": "在这一步把这次单步走分叉",
    "Give result": "给出结果",
    "Give error": "给出错误",
    "Timeout": "超时",
    "Give answer": "给出回答",
    "Compare with parent": "和父分支比较",
    "Next": "下一步",
    "Run to end": "跑到底",
    "Pause": "暂停",
    "Reset": "重来",
    "working…": "正在走…",
    "pausing…": "正在暂停…",
    # predict mode (nbagent.predict, the stepper widget's Predict)
    "Predict": "预测",
    "Predict mode": "预测模式",
    "Predict each move before it is made": "每一步走之前先预测",
    "Predict move {number}:": "预测第 {number} 步:",
    "After {move}, what comes next?": "{move} 之后,接下来是哪一步?",
    "{move}: what will the model answer?": "{move}:模型会怎么回答?",
    "text: the final answer": "纯文本:直接当最终答案",
    "a call of the tool {name}": "调用工具 {name}",
    "hand off to {target} ({name})": "handoff 给 {target}({name})",
    "the run ends": "运行结束",
    "(skipped)": "(跳过)",
    "Right: {what}.": "对了:{what}。",
    "Not quite: you said {picked}; the loop went to {what}.": "不对:你选的是 {picked};循环走向了 {what}。",
    "Skipped: the loop went to {what}.": "跳过了:循环走向了 {what}。",
    "The model answered with text.": "模型回了文本。",
    "The model asked for {tools}.": "模型要调用 {tools}。",
    "The run failed: {error}": "运行失败:{error}",
    "(tool-loop iteration {number} of max_tool_iterations={limit}; reflect_on_tool_use={reflect})": (
        "(工具循环第 {number} 轮,max_tool_iterations={limit};reflect_on_tool_use={reflect})"
    ),
    "{right} of {answered} predictions right": "{answered} 个预测里对了 {right} 个",
    "({skipped} skipped)": "(跳过 {skipped} 个)",
    "Score: {score}": "得分:{score}",
    "move {number}": "第 {number} 步",
    "you said: {picked}": "你选:{picked}",
    "the loop: {what}": "循环:{what}",
    "Enter picks it": "按 Enter 选它",
    # what-if forks and the comparison's sentences (nbagent.whatif, trace.compare)
    "the model has not asked for a tool yet: walk on to STEP 5's tool request": (
        "模型还没请求过工具:先走到 STEP 5 的工具请求"
    ),
    "make a first move": "先走一步",
    "the model asked only for a handoff and no other tool takes its arguments: a second call would be "
    "a second handoff": "模型只请求了 handoff,也没有别的工具能接受它的参数:再调一次就成了第二个 handoff",
    "the model asked for no tool in this walk: the iteration limit never came into play": (
        "这次运行里模型没请求过工具:轮数上限根本没起作用"
    ),
    "this walk handed off after its first tool batch: the iteration limit never came into play": (
        "这次运行在第一批工具之后就移交(handoff)了:轮数上限根本没起作用"
    ),
    "this walk ended before its tool loop was used up: reflect_on_tool_use never came into play": (
        "这次运行在工具循环用完之前就结束了:reflect_on_tool_use 根本没起作用"
    ),
    "What if the tool fails?": "如果工具失败了?",
    "What if the model calls a second tool?": "如果模型再调一个工具?",
    "this fork makes its first {moves} moves as its parent did: ask its parent walk": (
        "这个分叉的前 {moves} 步和父分支一样:去问父分支"
    ),
    "What if reflection is off?": "如果关掉反思(reflect)?",
    "What if reflection is on?": "如果打开反思(reflect)?",
    "What if the iteration limit is {limit}?": "如果轮数上限是 {limit}?",
    "the model also calls {name}": "模型还调用了 {name}",
    "At move {position} ({move}) the runs differ in: {what}.": "第 {position} 步({move}),两次运行的不同之处:{what}。",
    "At move {position} only {side} goes on: {move}.": "第 {position} 步只有 {side} 继续:{move}。",
    "At move {position}, {a} goes to {left} and {b} to {right}.": "第 {position} 步,{a} 走向 {left},{b} 走向 {right}。",
    "At move {position}, {a} asks for {left} and {b} for {right}.": (
        "第 {position} 步,{a} 请求 {left},{b} 请求 {right}。"
    ),
    "an error {text}": "错误 {text}",
    "the result {text}": "结果 {text}",
    "At move {position}, {name} gives {a} {left} and {b} {right}.": (
        "第 {position} 步,{name} 给 {a} 的是{left},给 {b} 的是{right}。"
    ),
    "{a} and {b} make the same moves with the same results.": "{a} 和 {b} 走的步一样,结果也一样。",
    # the comparison's table (trace.compare.Comparison.html)
    "the runs never diverge": "两次运行从未分开",
    "the runs diverge at aligned move {position}": "两次运行在对齐后的第 {position} 步分开",
    "{side}: move": "{side}:这一步",
    "{side}: what it did": "{side}:做了什么",
    "tokens": "token 数",
    "model + tool seconds": "模型 + 工具秒数",
    "each move's own time: its model calls and its tool calls": "每一步自己的用时:它的模型调用和工具调用",
    "(no move)": "(没有这一步)",
    "context diff": "上下文差异",
    "{side}: run ": "{side}:运行 ",
    "At move {position} ({move}) a change was made: {change}.": "第 {position} 步({move})做了改动:{change}。",
    "Model calls: {a} {n}, {b} {m}; tool calls: {a} {t}, {b} {u}.": (
        "模型调用:{a} {n} 次,{b} {m} 次;工具调用:{a} {t} 次,{b} {u} 次。"
    ),
    "At move {position}, {side} also runs {call}.": "第 {position} 步,{side} 还执行了 {call}。",
    "{side} has not answered yet.": "{side} 还没给出答案。",
    "Both end with the same answer: {answer}": "两边的答案一样:{answer}",
    "{a} answers {left}; {b} answers {right}": "{a} 的答案是 {left};{b} 的答案是 {right}",
    "Fork the walk where this first matters and walk the fork to its end": (
        "在这个改动第一次起作用的地方分叉,并把分叉走到底"
    ),
    # the walkthrough's exercises (nbagent.exercises)
    "done": "完成",
    "not done yet": "还没做",
    "not right yet": "还不对",
    "Exercise 1 · STEP 1, the context": "练习 1 · STEP 1,上下文",
    "Exercise 2 · STEP 2, memory": "练习 2 · STEP 2,记忆",
    "Exercise 3 · STEP 3, the message id": "练习 3 · STEP 3,message_id",
    "Exercise 4 · STEP 4, the request": "练习 4 · STEP 4,请求",
    "Exercise 5 · STEP 5, the branches": "练习 5 · STEP 5,分支",
    "Exercise 6 · the tool loop, a tool": "练习 6 · 工具循环,写一个工具",
    "Exercise 7 · the tool loop, what if the tool fails": "练习 7 · 工具循环,如果工具失败了会怎样",
    "{what} raised {error}": "{what} 抛出了 {error}",
    "the run failed: {error}": "运行失败:{error}",
    "set second_turn to the task of the second call: only the new message": (
        "把 second_turn 设成第二次调用的 task:只放新消息"
    ),
    "the new question is in the context once": "新问题在上下文里出现一次",
    "the first turn is in the context once: the context remembers it": "第一轮的消息在上下文里只有一次:上下文记得它",
    "the context does not hold {text!r} once: pass it as the task": (
        "上下文里 {text!r} 不是正好一次:把它作为 task 传进去"
    ),
    "{text!r} is in the context {count} times: pass only the new message": (
        "{text!r} 在上下文里出现了 {count} 次:只传新消息"
    ),
    "set memory to a ListMemory holding the fact 'The user prefers metric units.'": (
        "把 memory 设成一个 ListMemory,里面放上事实 'The user prefers metric units.'"
    ),
    "STEP 2 queried your memory and it answered (a MemoryQueryEvent)": (
        "STEP 2 查了你的记忆,并且有命中(MemoryQueryEvent)"
    ),
    "your memory gave no hit: add a MemoryContent to it": "你的记忆没有命中:往里加一条 MemoryContent",
    "the model's request holds the fact about metric units": "发给模型的请求里有关于公制单位的事实",
    "no system message of the request mentions metric units: the fact is not in your memory": (
        "请求里没有哪条 system message 提到公制单位(metric):这个事实不在你的记忆里"
    ),
    "define find_id(chunks) returning the id of the message the chunks build": (
        "定义 find_id(chunks),返回这些分片组成的那条消息的 id"
    ),
    "the id is the answer's: every chunk named it before the answer existed": (
        "这正是答案的 id:答案还不存在时,每个分片就已经指向它了"
    ),
    "find_id returned {got!r}, not the answer's id: read a chunk's full_message_id": (
        "find_id 返回了 {got!r},不是答案的 id:读分片的 full_message_id"
    ),
    "define make_agent(model) returning an AssistantAgent on that model": (
        "定义 make_agent(model),用这个 model 返回一个 AssistantAgent"
    ),
    "make_agent(model) returned {got}, not an AssistantAgent": "make_agent(model) 返回的是 {got},不是 AssistantAgent",
    "the agent calls the model it was given": "agent 调用的是传给它的那个 model",
    "the model given to make_agent was never called: build the agent on it": (
        "传给 make_agent 的 model 一次都没被调用:用它来建 agent"
    ),
    "the request starts with your system message about the weather": "请求以你写的、关于天气的 system message 开头",
    "the request's system message does not mention the weather: give system_message=": (
        "请求的 system message 没提到天气(weather):给出 system_message="
    ),
    "the model is offered get_weather": "模型拿到了 get_weather 工具",
    "the model is offered {names}, not get_weather: give tools=[get_weather]": (
        "模型拿到的工具是 {names},没有 get_weather:给出 tools=[get_weather]"
    ),
    "none": "无",
    "it did not finish within {seconds:g} s": "它在 {seconds:g} 秒内没有结束",
    "set script to the model's answers: a tool call of get_weather, then a text": (
        "把 script 设成模型的回答:先调用 get_weather,再回一段文本"
    ),
    "the first answer takes the tool branch: get_weather runs": "第一个回答走工具分支:get_weather 执行了",
    "no get_weather call: the first answer must be tool calls, not a text": (
        "没有调用 get_weather:第一个回答得是工具调用,不是文本"
    ),
    'get_weather got an error result: {text}: its arguments are JSON such as {{"city": "Paris"}}': (
        'get_weather 得到的是错误结果:{text}:它的参数是 JSON,比如 {{"city": "Paris"}}'
    ),
    "the model called {names}, not get_weather: call the agent's tool by its name": (
        "模型调用的是 {names},不是 get_weather:按名字调用 agent 的工具"
    ),
    "then the model answers with text: the text exit, with an iteration left": (
        "然后模型回文本:从纯文本出口结束,还剩一轮没用"
    ),
    "the moves were {moves}; expected {expected}": "实际走的是 {moves};应该是 {expected}",
    "define to_fahrenheit(celsius: float) -> float with a docstring": (
        "定义带 docstring 的 to_fahrenheit(celsius: float) -> float"
    ),
    "to_fahrenheit still raises NotImplementedError: write its body": (
        "to_fahrenheit 还在抛 NotImplementedError:把函数体写出来"
    ),
    "its docstring is the description the model reads": "它的 docstring 就是模型读到的工具描述",
    "it has no docstring: the model would read no description of it": "它没有 docstring:模型读不到任何描述",
    "its parameter celsius is a number in the schema the model is sent": "发给模型的 schema 里,参数 celsius 是 number",
    "the schema has no number parameter celsius: type it celsius: float": (
        "schema 里没有 number 类型的参数 celsius:写成 celsius: float"
    ),
    "called with celsius=21 it returns 69.8: the answer (a ToolCallSummaryMessage)": (
        "用 celsius=21 调用返回 69.8:这就是答案(ToolCallSummaryMessage)"
    ),
    "called with celsius=21 it returned {got!r}, not 69.8 (F = C × 9/5 + 32)": (
        "用 celsius=21 调用返回了 {got!r},不是 69.8(F = C × 9/5 + 32)"
    ),
    "the tool gave an error result: {text}": "工具给出了错误结果:{text}",
    "define edit(fork) giving the fork's tool call an error": "定义 edit(fork),让分叉里的工具调用得到一个错误",
    "the fork was not changed: call fork.give_tool_result(call_id, error=...)": (
        "分叉没被改动:调用 fork.give_tool_result(call_id, error=...)"
    ),
    "your edit changed the fork: {changes}": "你的改动改了分叉:{changes}",
    "the fork's tool call got an error result; the loop went on to reflect on it": (
        "分叉里的工具调用得到了错误结果;循环接着带着它去 reflect"
    ),
    "the fork's tool call got a result, not an error: give error= (the tool fails)": (
        "分叉里的工具调用得到的是结果,不是错误:用 error=(工具失败)"
    ),
    "the walk forked from is untouched: its tool ran": "被分叉的那次单步走没被动过:它的工具照常执行",
    "the walk forked from changed too: edit the fork, not the walk": "被分叉的那次单步走也变了:改分叉,别改原来的",
    # The stepper's move headings, context table, tool results, diagram end and give row.
    "tool-loop iteration={iteration} ({ordinal})": "工具循环第 {number} 轮(loop_iteration={iteration})",
    "tool results": "工具结果",
    "The run ends: its Response holds the final message": "运行结束:它的 Response 里是最终消息",
    "(run ends)": "(运行结束)",
    "kind": "类型",
    "source": "来源",
    "text": "文本",
    "tool calls": "工具调用",
    "thought": "思考",
    "added by": "由哪一步加入",
    "change": "改动",
    "added": "新增",
    "changed": "改了",
    "tool call": "工具调用",
    "the tool's result or error": "工具的结果或错误",
    "the model's answer": "模型的回答",
    "Next move: {done}": "下一步:{done}",
    "the model's answer will be {text}": "模型的回答将是 {text}",
    "tool call {call_id} will get: result {text}": "工具调用 {call_id} 将得到结果 {text}",
    "tool call {call_id} will get: error {text}": "工具调用 {call_id} 将得到错误 {text}",
    "{call_id} times out": "{call_id} 将超时",
    # A tool card and a fork's change, as the stepper shows them.
    "tool": "工具",
    "{count} tool calls, run in parallel": "{count} 个工具调用,并行执行",
    "cancelled": "已取消",
    "running…": "正在执行…",
    "requested: runs at the next move": "已请求:下一步执行",
    "result": "结果",
    "error": "错误",
    "Changed before move {move} ({kind}): ": "第 {move} 步之前改动({kind}):",
    "Refresh": "刷新",
}

_ENGLISH = dict(MOVES)
_current: list[Language] = ["en"]


def set_language(language: Language) -> None:
    """Explain the loop in ``language``: ``"en"`` (English, the default) or ``"zh"`` (Chinese, in the
    design description's terms). Views drawn after the call use it."""
    chosen = check.choice("nbagent.set_language", "language", language, LANGUAGES)
    for name, english in _ENGLISH.items():
        if chosen == "en":
            MOVES[name] = english
            continue
        title, label, explanation = _ZH[name]
        edges = tuple(replace(edge, label=_ZH_EDGES.get(edge.label, edge.label)) for edge in english.edges)
        MOVES[name] = replace(english, title=title, label=label, explanation=explanation, edges=edges)
    _current[0] = "zh" if chosen == "zh" else "en"


def words(english: str) -> str:
    """``english`` (a heading, a button's label or a note of the stepper, as the code writes it) in the
    current language; a text with no translation stays as it is. Placeholders (``{name}``) stay, to be
    filled in after."""
    return _ZH_WORDS.get(english, english) if _current[0] == "zh" else english


def get_language() -> Language:
    """The language the loop is explained in (``"en"`` unless :func:`set_language` said otherwise)."""
    return _current[0]
