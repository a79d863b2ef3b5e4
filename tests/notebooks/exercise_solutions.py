"""The walkthrough's exercises solved: the source of each exercise cell (tagged ``exercise``), in order.

A teacher's key (docs/teaching.md) and what the kernel test puts in the notebooks to run them solved.
"""

from __future__ import annotations

SOLUTIONS = [
    'second_turn = "What is my name?"  # only the new message: the context keeps the first turn',
    'exercise_memory = ListMemory(\n    memory_contents=[MemoryContent(content="The user prefers metric units.", mime_type="text/plain")]\n)',
    'def find_id(chunks):\n    """The id of the message these streamed chunks build."""\n    return chunks[0].full_message_id',
    "def make_agent(model):\n"
    '    """An agent on `model` with a system message about the weather and the tool get_weather."""\n'
    '    return AssistantAgent("assistant", model, tools=[get_weather], system_message="You answer weather questions.")',
    'script = [tool_calls(call("get_weather", \'{"city": "Paris"}\')), "It is 12 °C and cloudy in Paris."]',
    "def to_fahrenheit(celsius: float) -> float:\n"
    '    """Convert a temperature from degrees Celsius to degrees Fahrenheit."""\n'
    "    return celsius * 9 / 5 + 32",
    "def edit(fork):\n"
    '    """Change the fork so that its get_weather call gets an error result."""\n'
    '    fork.give_tool_result(fork.current.tool_calls[0].id, error="the weather service is down")',
]
