"""The walkthrough's exercises solved: the source of each exercise cell (tagged ``exercise``), in order.

A teacher's key (docs/teaching.md) and what the kernel test puts in the notebooks to run them solved.
"""

from __future__ import annotations

SOLUTIONS = [
    # 1, STEP 1: only the new message; the context keeps the first turn
    """second_turn = "What is my name?\"""",
    # 2, STEP 2: a memory whose hit STEP 2 puts into the request
    """exercise_memory = ListMemory(
    memory_contents=[MemoryContent(content="The user prefers metric units.", mime_type="text/plain")]
)""",
    # 3, STEP 3: every chunk names the message it builds
    '''def find_id(chunks):
    """The id of the message these streamed chunks build."""
    return chunks[0].full_message_id''',
    # 4, STEP 4: the system message comes first in the request, the tools beside it
    '''def make_agent(model):
    """An agent on `model` with a system message about the weather and the tool get_weather."""
    return AssistantAgent("assistant", model, tools=[get_weather], system_message="You answer weather questions.")''',
    # 5, STEP 5: a tool call answer, then a text answer (an iteration is left: the text exit ends the run)
    """script = [tool_calls(call("get_weather", '{"city": "Paris"}')), "It is 12 °C and cloudy in Paris."]""",
    # 6, the tool loop: the signature is the schema, the docstring the description
    '''def to_fahrenheit(celsius: float) -> float:
    """Convert a temperature from degrees Celsius to degrees Fahrenheit."""
    return celsius * 9 / 5 + 32''',
    # 7, the tool loop: a fork's edit, given where the fork is paused (before its tools run)
    '''def edit(fork):
    """Change the fork so that its get_weather call gets an error result."""
    fork.give_tool_result(fork.current.tool_calls[0].id, error="the weather service is down")''',
]
