"""R1-style reasoning streamed as AutoGen 0.7.5's OpenAI client streams it (issue 28.3).

Over real HTTP (``tests/models/chat_server.py``), the same answers are streamed to AutoGen's
``OpenAIChatCompletionClient`` and to nbagent's, and the streamed pieces compared: a
``reasoning_content`` field is streamed as ``<think>`` + its pieces + ``</think>`` before the text; a
``<think>...</think>`` block in the text of an R1-family model is streamed as it comes. The final
result carries the reasoning as its ``thought`` and the text without it, in both.
"""

from __future__ import annotations

from typing import Any

import pytest
from autogen_core.models import UserMessage as AgUserMessage
from autogen_ext.models.openai import OpenAIChatCompletionClient as AgOpenAI

from nbagent import CreateResult, ModelFamily, OpenAIChatCompletionClient, UserMessage
from tests.models.chat_server import ChatServer, Reply

FAKE_KEY = "sk-" + "test-0123456789"  # a fake key, made at run time
R1_INFO: dict[str, Any] = {
    "vision": False,
    "function_calling": False,
    "json_output": False,
    "family": ModelFamily.R1,
    "structured_output": False,
}


async def both(reply: Reply) -> tuple[list[Any], list[Any]]:
    """The items AutoGen's client and nbagent's stream for ``reply`` (sent to each in turn)."""
    with ChatServer() as server:
        server.script(reply, reply)
        theirs = AgOpenAI(model="deepseek-r1", base_url=server.base_url, api_key=FAKE_KEY, model_info=R1_INFO)  # type: ignore[arg-type]
        autogens = [item async for item in theirs.create_stream([AgUserMessage(content="2+3?", source="user")])]
        await theirs.close()
        ours = OpenAIChatCompletionClient("deepseek-r1", base_url=server.base_url, api_key=FAKE_KEY, model_info=R1_INFO)  # type: ignore[arg-type]
        mine = [item async for item in ours.create_stream([UserMessage(content="2+3?", source="user")])]
        await ours.close()
    return autogens, mine


@pytest.mark.parametrize("pieces", [1, 4])
async def test_a_reasoning_field_streams_inside_think_tags_as_autogens(pieces: int) -> None:
    autogens, mine = await both(Reply.text("The answer is 5.", reasoning="2 plus 3 is 5", pieces=pieces))
    assert [item for item in mine if isinstance(item, str)] == [item for item in autogens if isinstance(item, str)]
    text = "".join(item for item in mine if isinstance(item, str))
    assert text == "<think>2 plus 3 is 5</think>The answer is 5."
    result = mine[-1]
    assert isinstance(result, CreateResult)
    assert (
        (result.content, result.thought)
        == (autogens[-1].content, autogens[-1].thought)
        == ("The answer is 5.", "2 plus 3 is 5")
    )


@pytest.mark.parametrize("pieces", [1, 5])
async def test_a_think_block_in_the_text_streams_as_it_comes_as_autogens(pieces: int) -> None:
    autogens, mine = await both(Reply.text("<think>add them</think>The answer is 5.", pieces=pieces))
    assert [item for item in mine if isinstance(item, str)] == [item for item in autogens if isinstance(item, str)]
    assert "".join(item for item in mine if isinstance(item, str)) == "<think>add them</think>The answer is 5."
    assert (
        (mine[-1].content, mine[-1].thought)
        == (autogens[-1].content, autogens[-1].thought)
        == (
            "The answer is 5.",
            "add them",
        )
    )
