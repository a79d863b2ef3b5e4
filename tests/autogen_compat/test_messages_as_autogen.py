"""Messages as AutoGen 0.7.5 defines them (issue 28.3), each checked against AutoGen's own class.

``ChatMessage``/``AgentEvent`` as pydantic field types, ``MessageFactory``, ``MultiModalMessage``
(its texts, and its images shown by the one renderer), ``StopMessage`` and the other events,
``dump()``/``load()``, the ``StructuredMessage[Content]`` type string, bytes in ``MemoryContent``
and ``Image.from_base64``.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import autogen_agentchat.messages as ag
import autogen_core
import pytest
from autogen_core.memory import MemoryContent as AgMemoryContent
from pydantic import BaseModel

import nbagent
from nbagent import (
    AgentEvent,
    AssistantAgent,
    ChatMessage,
    Image,
    MemoryContent,
    MessageFactory,
    MultiModalMessage,
    ReplayChatCompletionClient,
    StopMessage,
    StructuredMessage,
    TextMessage,
    ThoughtEvent,
    UserMessage,
)
from nbagent.records import RunStarted
from nbagent.render import to_html, to_text

# A 1x1 PNG as PIL writes it: AutoGen's Image re-encodes what it is given, this comes back the same.
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGNg+M8AAAICAQB7CYF4AAAAAElFTkSuQmCC"
JPEG_HEAD = base64.b64encode(b"\xff\xd8\xff\xe0" + bytes(60)).decode()


class Answer(BaseModel):
    city: str


def without_identity(dumped: dict[str, Any]) -> dict[str, Any]:
    """A dump without what differs between two messages made alike (id, time), an image as its data
    (nbagent's also says its type, ``mime_type``; AutoGen's are all PNG)."""
    kept = {key: value for key, value in dumped.items() if key not in ("id", "created_at")}
    if isinstance(kept.get("content"), list):
        kept["content"] = [
            {"data": part["data"]} if isinstance(part, dict) and "mime_type" in part else part
            for part in kept["content"]
        ]
    return kept


def pairs() -> list[tuple[Any, Any]]:
    """The same message made with nbagent's class and AutoGen's."""
    image, ag_image = Image(data=PIXEL), autogen_core.Image.from_base64(PIXEL)
    return [
        (TextMessage(content="hi", source="u"), ag.TextMessage(content="hi", source="u")),
        (StopMessage(content="done", source="t"), ag.StopMessage(content="done", source="t")),
        (
            nbagent.UserInputRequestedEvent(request_id="r", source="p"),
            ag.UserInputRequestedEvent(request_id="r", source="p"),
        ),
        (
            nbagent.SelectSpeakerEvent(content=["a", "b"], source="g"),
            ag.SelectSpeakerEvent(content=["a", "b"], source="g"),
        ),
        (nbagent.SelectorEvent(content="x", source="g"), ag.SelectorEvent(content="x", source="g")),
        (ThoughtEvent(content="hmm", source="a"), ag.ThoughtEvent(content="hmm", source="a")),
        (
            nbagent.CodeGenerationEvent(
                retry_attempt=0,
                content="c",
                code_blocks=[nbagent.CodeBlock(code="print(1)", language="python")],
                source="a",
            ),
            ag.CodeGenerationEvent(
                retry_attempt=0,
                content="c",
                code_blocks=[autogen_core.code_executor.CodeBlock(code="print(1)", language="python")],
                source="a",
            ),
        ),
        (
            nbagent.CodeExecutionEvent(retry_attempt=1, result=nbagent.CodeResult(exit_code=0, output="1"), source="a"),
            ag.CodeExecutionEvent(
                retry_attempt=1, result=autogen_core.code_executor.CodeResult(exit_code=0, output="1"), source="a"
            ),
        ),
        (
            MultiModalMessage(content=["look", image], source="u"),
            ag.MultiModalMessage(content=["look", ag_image], source="u"),
        ),
        (
            StructuredMessage[Answer](content=Answer(city="Paris"), source="a"),
            ag.StructuredMessage[Answer](content=Answer(city="Paris"), source="a"),
        ),
    ]


@pytest.mark.parametrize("ours,theirs", pairs(), ids=lambda message: type(message).__name__)
def test_the_dump_equals_autogens(ours: Any, theirs: Any) -> None:
    mine, autogens = without_identity(dict(ours.dump())), without_identity(dict(theirs.dump()))
    assert mine == autogens
    assert ours.type == theirs.type
    assert ours.to_text() == theirs.to_text()
    back = type(ours).load(json.loads(json.dumps(ours.dump())))
    assert back == ours


def test_structured_message_type_names_its_content_as_autogen() -> None:
    message = StructuredMessage[Answer](content=Answer(city="Oslo"), source="a")
    assert (
        message.type
        == "StructuredMessage[Answer]"
        == ag.StructuredMessage[Answer](content=message.content, source="a").type
    )
    assert message.dump()["type"] == "StructuredMessage[Answer]"
    loaded = nbagent.load_message(message.dump(), Answer)
    assert isinstance(loaded, StructuredMessage) and loaded.content == Answer(city="Oslo")


class Conversation(BaseModel):
    """A user's model with AutoGen's unions as field types."""

    messages: list[ChatMessage]
    events: list[AgentEvent] = []


def test_chat_message_and_agent_event_are_pydantic_field_types() -> None:
    conversation = Conversation(
        messages=[TextMessage(content="hi", source="u"), StopMessage(content="stop", source="t")],
        events=[ThoughtEvent(content="hmm", source="a"), nbagent.SelectSpeakerEvent(content=["b"], source="g")],
    )
    back = Conversation.model_validate_json(conversation.model_dump_json())
    assert back == conversation and isinstance(back.messages[1], StopMessage)
    autogens = ag.TextMessage(content="from autogen", source="u").dump()  # AutoGen's data validates too
    assert isinstance(Conversation(messages=[autogens]).messages[0], TextMessage)  # type: ignore[list-item]


def test_message_factory_as_autogens() -> None:
    factory, theirs = MessageFactory(), ag.MessageFactory()
    for message in (
        ag.TextMessage(content="a", source="u"),
        ag.StopMessage(content="s", source="t"),
        ag.ThoughtEvent(content="t", source="a"),
    ):
        made = factory.create(message.dump())
        assert type(made).__name__ == type(theirs.create(message.dump())).__name__
        assert without_identity(dict(made.dump())) == without_identity(dict(message.dump()))
    structured = StructuredMessage[Answer](content=Answer(city="Rome"), source="a")
    with pytest.raises(ValueError, match=r"Unknown message type: StructuredMessage\[Answer\]"):
        factory.create(structured.dump())
    assert not factory.is_registered(StructuredMessage[Answer])
    factory.register(StructuredMessage[Answer])
    assert factory.create(structured.dump()) == structured
    with pytest.raises(ValueError, match="is already registered"):
        factory.register(StructuredMessage[Answer])
    with pytest.raises(ValueError, match="Field 'type' is required"):
        factory.create({"content": "x"})


def test_multimodal_message_texts_as_autogen() -> None:
    ours = MultiModalMessage(content=["look at", Image(data=PIXEL), "this"], source="user")
    theirs = ag.MultiModalMessage(content=["look at", autogen_core.Image.from_base64(PIXEL), "this"], source="user")
    assert ours.to_model_text() == theirs.to_model_text() == "look at [image]this"
    assert ours.to_model_text(image_placeholder=None) == theirs.to_model_text(image_placeholder=None)
    assert ours.to_text() == theirs.to_text() == "look at\n<image>\nthis"
    model_message = ours.to_model_message()
    assert isinstance(model_message, UserMessage) and model_message.content == ["look at", Image(data=PIXEL), "this"]
    from_autogens = MultiModalMessage(content=["x", autogen_core.Image.from_base64(PIXEL)], source="u")
    assert from_autogens.content[1] == Image(data=PIXEL)  # AutoGen's Image taken as nbagent's


def test_multimodal_message_is_shown_with_its_images_and_a_placeholder_in_text() -> None:
    message = MultiModalMessage(content=["<b>look</b>", Image(data=PIXEL)], source="user")
    html = to_html(message)
    assert f'<img src="data:image/png;base64,{PIXEL}" alt="image" class="nba-image"' in html
    assert "&lt;b&gt;look&lt;/b&gt;" in html
    assert "<image>" not in html and "&lt;image&gt;" not in html
    assert to_text(message) == "   MultiModalMessage  <b>look</b> <image>"
    task = to_html(RunStarted("r", "a", [message]))  # the task, as the live view and the stepper show it
    assert 'class="nba-image"' in task
    svg = MultiModalMessage(
        content=[Image(data=base64.b64encode(b"<svg/>").decode(), mime_type="image/svg+xml")], source="u"
    )
    assert "<img" not in to_html(svg) and "[image image/svg+xml, 6 bytes, not shown]" in to_html(svg)


async def test_a_multimodal_task_reaches_the_model_with_its_image() -> None:
    client = ReplayChatCompletionClient(["a red pixel"], model_info={"vision": True})
    agent = AssistantAgent("a", client)
    result = await agent.run(task=MultiModalMessage(content=["What is this?", Image(data=PIXEL)], source="user"))
    assert result.messages[-1].content == "a red pixel"
    sent = client.requests[0].messages[-1]
    assert isinstance(sent, UserMessage) and sent.content == ["What is this?", Image(data=PIXEL)]


def test_bytes_memory_content_stays_bytes_as_autogens() -> None:
    data = b"\x00\x01binary"
    ours = MemoryContent(content=data, mime_type=nbagent.MemoryMimeType.BINARY)
    theirs = AgMemoryContent(content=data, mime_type=autogen_core.memory.MemoryMimeType.BINARY)
    assert ours.content == theirs.content == data and isinstance(ours.content, bytes)
    assert ours.to_text() == "\x00\x01binary"
    assert MemoryContent(content=b"\xff\xfe", mime_type="application/octet-stream").to_text() == (
        "[2 bytes application/octet-stream]"
    )


def test_image_from_base64_as_autogens() -> None:
    image = Image.from_base64(PIXEL)
    assert image.to_base64() == autogen_core.Image.from_base64(PIXEL).to_base64() == PIXEL
    assert image.mime_type == "image/png" and image.data_uri == f"data:image/png;base64,{PIXEL}"
    assert Image.from_base64(JPEG_HEAD).mime_type == "image/jpeg"
    # base64.encodebytes' line breaks are ignored, as AutoGen's decoding ignores them: the image is clean base64
    wrapped = base64.encodebytes(base64.b64decode(PIXEL)).decode()
    assert "\n" in wrapped and Image.from_base64(wrapped) == image
    assert autogen_core.Image.from_base64(wrapped).to_base64() == PIXEL
    with pytest.raises(ValueError, match="base64_str is not base64"):
        Image.from_base64('"><script>alert(1)</script>')
    assert Image.from_uri(image.data_uri) == image
    with pytest.raises(ValueError, match="Invalid URI format"):
        Image.from_uri("https://example.invalid/x.png")
