"""The data that flows through the loop.

Three families, as in the design description:

* LLM-side messages (what the model sees): ``SystemMessage``, ``UserMessage``, ``AssistantMessage``,
  ``FunctionExecutionResultMessage``, with ``FunctionCall``, ``FunctionExecutionResult``,
  ``CreateResult`` and ``RequestUsage``;
* chat messages (what agents say to each other): ``TextMessage``, ``StructuredMessage``,
  ``ToolCallSummaryMessage``, ``HandoffMessage``;
* events (what happens on the way): ``ToolCallRequestEvent``, ``ToolCallExecutionEvent``,
  ``ThoughtEvent``, ``MemoryQueryEvent``, ``ModelClientStreamingChunkEvent``.

Every chat message and event carries ``id`` (uuid4), ``source``, ``models_usage``, ``metadata``,
``created_at`` (UTC) and a ``type`` string, and round-trips through JSON with
:func:`dump_message` / :func:`load_message`.
"""

from __future__ import annotations

import base64
import json
import mimetypes
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Generic, Literal, Self, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    computed_field,
    model_validator,
)

from ._ids import ids_pool, new_id, utc_now
from .hooks import Hook
from .redact import mask

_ZERO = timedelta(0)


class _Masked(BaseModel):
    """A model whose repr (and ``str()``) masks secrets in its text (:func:`nbagent.redact.mask`): a
    message echoing a key shows ``[REDACTED]`` when a notebook cell displays it; its fields hold the
    text as it came."""

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for name, value in super().__repr_args__():
            yield name, _masked(value)


def _masked(value: Any) -> Any:
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, list) and any(isinstance(item, str) for item in value):
        return [mask(item) if isinstance(item, str) else item for item in value]
    if isinstance(value, dict) and any(isinstance(item, str) for item in value.values()):
        return {key: mask(item) if isinstance(item, str) else item for key, item in value.items()}
    return value


# --------------------------------------------------------------------------- LLM side


class RequestUsage(BaseModel):
    """Tokens spent by one model call."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: RequestUsage) -> RequestUsage:
        return usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens)


TWIN: Hook[[object, str], Any] = Hook("twin")
"""Another library's twin of nbagent's type called ``name`` (AutoGen's ``FunctionCall``, ``Image``,
``MemoryContent``, an LLM message for ``"LLMMessage"``...) as what nbagent's type validates (its
fields, or nbagent's object); ``None`` for anything else (registered by :mod:`nbagent.autogen`)."""


def _twin(value: Any, name: str) -> Any:
    """``value`` as nbagent's type ``name`` validates it: another library's twin converted, else as it is."""
    twin = TWIN(value, name)
    return value if twin is None else twin


class FunctionCall(_Masked):
    """A tool call requested by the model; ``arguments`` is the raw JSON string it produced."""

    id: str
    name: str
    arguments: str

    @model_validator(mode="before")
    @classmethod
    def _from_autogen(cls, value: Any) -> Any:
        """Another library's ``FunctionCall`` (AutoGen's dataclass of the same fields) taken field by field."""
        return value if type(value) is dict else _twin(value, "FunctionCall")

    def to_text(self) -> str:
        """``name(arguments)``: how nbagent shows a call in text."""
        return f"{self.name}({self.arguments})"


class FunctionExecutionResult(_Masked):
    """What running one ``FunctionCall`` gave."""

    content: str
    name: str
    call_id: str
    is_error: bool = False

    @model_validator(mode="before")
    @classmethod
    def _from_autogen(cls, value: Any) -> Any:
        """Another library's ``FunctionExecutionResult`` (AutoGen's) taken field by field."""
        return value if type(value) is dict else _twin(value, "FunctionExecutionResult")


class Image(BaseModel):
    """An image in a user message, stored as base64."""

    data: str
    mime_type: str = "image/png"

    @model_validator(mode="before")
    @classmethod
    def _from_autogen(cls, value: Any) -> Any:
        """Another library's ``Image`` (AutoGen's PIL image) taken by its data."""
        return value if type(value) is dict else _twin(value, "Image")

    @classmethod
    def from_bytes(cls, data: bytes, mime_type: str = "image/png") -> Image:
        return cls(data=base64.b64encode(data).decode("ascii"), mime_type=mime_type)

    @classmethod
    def from_file(cls, path: str | Path) -> Image:
        mime = mimetypes.guess_type(str(path))[0] or "application/octet-stream"
        return cls.from_bytes(Path(path).read_bytes(), mime)

    @classmethod
    def from_base64(cls, base64_str: str) -> Image:
        """An image from its base64 text (AutoGen's); its type read from its first bytes. Line breaks
        and spaces (``base64.encodebytes``' lines) are taken out, as AutoGen's decoding ignores them;
        other text that is not base64 is refused."""
        data = "".join(base64_str.split()) if isinstance(base64_str, str) else base64_str
        try:
            head = base64.b64decode(data, validate=True)[:64]
        except (ValueError, TypeError) as error:
            raise ValueError(f"Image.from_base64: base64_str is not base64 text: {error}") from None
        return cls(data=data, mime_type=_sniff_image_type(head))

    @classmethod
    def from_uri(cls, uri: str) -> Image:
        """An image from a ``data:image/...;base64,`` URI (AutoGen's)."""
        prefix, _, data = uri.partition(";base64,")
        if not prefix.startswith("data:image/") or not data:
            raise ValueError("Invalid URI format. It should be a base64 encoded image URI.")
        return cls(data=data, mime_type=prefix[len("data:") :])

    def to_base64(self) -> str:
        """The image's base64 text (AutoGen's)."""
        return self.data

    @property
    def data_uri(self) -> str:
        return f"data:{self.mime_type};base64,{self.data}"


_IMAGE_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
)


def _sniff_image_type(head: bytes) -> str:
    """The MIME type an image's first bytes say (PNG when they say none nbagent knows)."""
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return next((mime for signature, mime in _IMAGE_SIGNATURES if head.startswith(signature)), "image/png")


class SystemMessage(_Masked):
    content: str
    type: Literal["SystemMessage"] = "SystemMessage"


class UserMessage(_Masked):
    content: str | list[str | Image]
    source: str
    type: Literal["UserMessage"] = "UserMessage"


class AssistantMessage(_Masked):
    content: str | list[FunctionCall]
    thought: str | None = None
    source: str
    type: Literal["AssistantMessage"] = "AssistantMessage"


class FunctionExecutionResultMessage(_Masked):
    content: list[FunctionExecutionResult]
    type: Literal["FunctionExecutionResultMessage"] = "FunctionExecutionResultMessage"


LLMMessage = Annotated[
    SystemMessage | UserMessage | AssistantMessage | FunctionExecutionResultMessage,
    Field(discriminator="type"),
]
llm_messages_adapter: TypeAdapter[list[LLMMessage]] = TypeAdapter(list[LLMMessage])

FinishReason = Literal["stop", "length", "function_calls", "content_filter", "unknown"]


class CreateResult(_Masked):
    """One model answer: text, or a list of tool calls, with usage and an optional thought."""

    finish_reason: FinishReason
    content: str | list[FunctionCall]
    usage: RequestUsage = Field(default_factory=RequestUsage)
    cached: bool = False
    thought: str | None = None
    response_model: str | None = None
    """The model the server says answered (``gen_ai.response.model``), when it says one."""
    response_id: str | None = None
    """The server's id of this answer (``gen_ai.response.id``), when it gives one."""


class MemoryMimeType(StrEnum):
    """AutoGen's MIME types of memory content (``MemoryContent(mime_type=MemoryMimeType.TEXT)``); each
    equals its string (``MemoryMimeType.TEXT == "text/plain"``)."""

    TEXT = "text/plain"
    JSON = "application/json"
    MARKDOWN = "text/markdown"
    IMAGE = "image/*"
    BINARY = "application/octet-stream"


class MemoryContent(_Masked):
    """One item stored in (and returned by) a memory; ``mime_type`` a string or a :class:`MemoryMimeType`."""

    content: str | bytes | dict[str, Any] | Image
    mime_type: str = "text/plain"
    metadata: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_autogen(cls, value: Any) -> Any:
        """Another library's ``MemoryContent`` (AutoGen's) taken field by field."""
        return value if type(value) is dict else _twin(value, "MemoryContent")

    def to_text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        if isinstance(self.content, Image):
            return f"[image {self.content.mime_type}]"
        if isinstance(self.content, bytes):
            try:
                return self.content.decode("utf-8")
            except UnicodeDecodeError:
                return f"[{len(self.content)} bytes {self.mime_type}]"
        return json.dumps(self.content, ensure_ascii=False, default=str)


# --------------------------------------------------------------------------- messages and events


def _as_utc(moment: datetime) -> datetime:
    """Timestamps are kept in UTC; a naive one is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment if moment.utcoffset() == _ZERO and moment.tzinfo is UTC else moment.astimezone(UTC)


class _Base(_Masked):
    """Fields every chat message and event has."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    id: str = Field(default_factory=new_id)
    source: str
    models_usage: RequestUsage | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    created_at: Annotated[datetime, AfterValidator(_as_utc)] = Field(default_factory=utc_now)
    if TYPE_CHECKING:  # for the type checker only: each concrete class declares them as its fields
        content: Any

        @property
        def type(self) -> str: ...

    def to_text(self) -> str:
        """The content as plain text, for display."""
        content = self.content
        return content if isinstance(content, str) else str(content)

    def dump(self) -> Mapping[str, Any]:
        """The message as JSON-ready data (AutoGen's: ``model_dump(mode="json")``)."""
        return self.model_dump(mode="json")

    @classmethod
    def load(cls, data: Mapping[str, Any]) -> Self:
        """The message :meth:`dump` gave (AutoGen's: ``model_validate``)."""
        return cls.model_validate(data)


class BaseChatMessage(_Base):
    """A message an agent produces or consumes."""

    def to_model_text(self) -> str:
        """The content as text for a model (AutoGen's; :meth:`to_text` is for display)."""
        return self.to_text()

    def to_model_message(self) -> UserMessage:
        """How the message enters another agent's model context."""
        return UserMessage(content=self.to_model_text(), source=self.source)


class BaseAgentEvent(_Base):
    """Something that happened while an agent worked; not passed to other agents."""


class TextMessage(BaseChatMessage):
    content: str
    type: Literal["TextMessage"] = "TextMessage"


class MultiModalMessage(BaseChatMessage):
    """A message of text and images (AutoGen's): ``content`` a list of str and :class:`Image`
    (AutoGen's ``Image`` is taken too); a model with vision is sent the images."""

    content: list[str | Image]
    type: Literal["MultiModalMessage"] = "MultiModalMessage"

    def to_model_text(self, image_placeholder: str | None = "[image]") -> str:
        """The text for a model without images: each image as `` [image]`` (or its base64 with ``None``)."""
        parts: list[str] = []
        for part in self.content:
            if isinstance(part, str):
                parts.append(part)
            else:
                parts.append(f" {image_placeholder if image_placeholder is not None else part.to_base64()}")
        return "".join(parts)

    def to_text(self, iterm: bool = False) -> str:
        """The text for display: one line per part, an image as ``<image>`` (iTerm2's inline image
        protocol with ``iterm=True``), as AutoGen writes it."""
        lines = []
        for part in self.content:
            if isinstance(part, str):
                lines.append(part)
            elif iterm:
                lines.append(f"\033]1337;File=inline=1:{part.to_base64()}\a\n")
            else:
                lines.append("<image>")
        return "\n".join(lines)

    def to_model_message(self) -> UserMessage:
        """A user message with the text and the images."""
        return UserMessage(content=list(self.content), source=self.source)


class StopMessage(BaseChatMessage):
    """A message asking to stop the conversation (AutoGen's; termination conditions send it)."""

    content: str
    type: Literal["StopMessage"] = "StopMessage"


StructuredT = TypeVar("StructuredT", bound=BaseModel)


class StructuredMessage(BaseChatMessage, Generic[StructuredT]):
    """A pydantic object produced with ``output_content_type``."""

    content: StructuredT
    format_string: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def type(self) -> str:
        """``StructuredMessage[<content class>]`` (AutoGen's: the class's name)."""
        return type(self).__name__

    def to_text(self) -> str:
        if self.format_string is not None:
            return self.format_string.format(**self.content.model_dump())
        return self.content.model_dump_json()

    def to_model_text(self) -> str:
        """As :meth:`to_text`: the ``format_string`` filled in, else the content's JSON (AutoGen's)."""
        return self.to_text()

    def to_model_message(self) -> UserMessage:
        """The content's JSON as a user message, whatever the ``format_string`` (AutoGen's)."""
        return UserMessage(content=self.content.model_dump_json(), source=self.source)


class ToolCallSummaryMessage(BaseChatMessage):
    """The answer made from the last batch of tool results when there is no reflection."""

    content: str
    tool_calls: list[FunctionCall] = Field(default_factory=list)
    results: list[FunctionExecutionResult] = Field(default_factory=list)
    type: Literal["ToolCallSummaryMessage"] = "ToolCallSummaryMessage"


def _twin_llm_messages(items: Any) -> Any:
    """Another library's LLM messages (AutoGen's ``autogen_core.models``) as nbagent's."""
    if not isinstance(items, list):
        return items
    return [_twin(item, "LLMMessage") for item in items]


class HandoffMessage(BaseChatMessage):
    """Hands the conversation to ``target``; ``context`` holds the other calls of that response
    (nbagent's LLM messages; another library's twins are converted)."""

    target: str
    content: str
    context: Annotated[list[LLMMessage], BeforeValidator(_twin_llm_messages)] = Field(default_factory=list)
    type: Literal["HandoffMessage"] = "HandoffMessage"


class ToolCallRequestEvent(BaseAgentEvent):
    content: list[FunctionCall]
    type: Literal["ToolCallRequestEvent"] = "ToolCallRequestEvent"


class ToolCallExecutionEvent(BaseAgentEvent):
    content: list[FunctionExecutionResult]
    type: Literal["ToolCallExecutionEvent"] = "ToolCallExecutionEvent"


class ThoughtEvent(BaseAgentEvent):
    """The model's reasoning, yielded before the message or tool request it belongs to."""

    content: str
    type: Literal["ThoughtEvent"] = "ThoughtEvent"


class MemoryQueryEvent(BaseAgentEvent):
    """The hits one memory store returned for this turn (STEP 2)."""

    content: list[MemoryContent]
    type: Literal["MemoryQueryEvent"] = "MemoryQueryEvent"

    def to_text(self) -> str:
        return "\n".join(item.to_text() for item in self.content)


class ModelClientStreamingChunkEvent(BaseAgentEvent):
    """A piece of streamed text; ``full_message_id`` is the id of the message it builds."""

    content: str
    full_message_id: str | None = None
    type: Literal["ModelClientStreamingChunkEvent"] = "ModelClientStreamingChunkEvent"


class UserInputRequestedEvent(BaseAgentEvent):
    """A user proxy asked for the user's input (AutoGen's; published before its input callback)."""

    request_id: str
    content: Literal[""] = ""
    type: Literal["UserInputRequestedEvent"] = "UserInputRequestedEvent"


class SelectSpeakerEvent(BaseAgentEvent):
    """The speakers a group chat selected (AutoGen's)."""

    content: list[str]
    type: Literal["SelectSpeakerEvent"] = "SelectSpeakerEvent"


class SelectorEvent(BaseAgentEvent):
    """Something ``SelectorGroupChat`` says (AutoGen's)."""

    content: str
    type: Literal["SelectorEvent"] = "SelectorEvent"


@dataclass
class CodeBlock:
    """A block of code found in a message (AutoGen's ``CodeBlock``)."""

    code: str
    language: str


@dataclass
class CodeResult:
    """What running code gave (AutoGen's ``CodeResult``)."""

    exit_code: int
    output: str


class CodeGenerationEvent(BaseAgentEvent):
    """A code executor agent wrote code (AutoGen's); ``retry_attempt`` 0 is the first try."""

    retry_attempt: int
    content: str
    code_blocks: list[CodeBlock]
    type: Literal["CodeGenerationEvent"] = "CodeGenerationEvent"


class CodeExecutionEvent(BaseAgentEvent):
    """A code executor agent ran code (AutoGen's); the text is the run's output."""

    retry_attempt: int
    result: CodeResult
    type: Literal["CodeExecutionEvent"] = "CodeExecutionEvent"
    if TYPE_CHECKING:
        content: Any

    def to_text(self) -> str:
        return self.result.output


ChatMessage = Annotated[
    TextMessage | MultiModalMessage | StopMessage | ToolCallSummaryMessage | HandoffMessage,
    Field(discriminator="type"),
]
"""Every built-in chat message type, as one pydantic field type (AutoGen's union; it holds no
``StructuredMessage``: a structured answer's field type is ``StructuredMessage[Content]``)."""

AgentEvent = Annotated[
    ToolCallRequestEvent
    | ToolCallExecutionEvent
    | MemoryQueryEvent
    | UserInputRequestedEvent
    | ModelClientStreamingChunkEvent
    | ThoughtEvent
    | SelectSpeakerEvent
    | CodeGenerationEvent
    | CodeExecutionEvent,
    Field(discriminator="type"),
]
"""Every built-in event type, as one pydantic field type (AutoGen's union)."""


# The messages the loop builds itself, from values already of their fields' types, are built
# without validation: faster, and with every field set, so all of a class share one fields-set
# (pydantic only ever adds field names to it, a no-op here, and copies it for model_copy). A run
# keeps about fifteen messages in its trace; a set of its own each would make that many more objects
# for the cyclic garbage collector to scan, which is most of what a batch of runs kept in memory
# costs beyond its HTTP.
#
# Their ``__dict__`` is a copy of one dict per class whose keys table is shared (a "split" dict, as
# CPython gives the instances of a plain class): a copy holds only its values, 144 bytes for a chat
# message's seven fields where a dict of its own holds its keys too (272), and filling a copy is
# faster than building a dict. It is an ordinary dict in every other way (a key added, or deleted,
# gives that one dict a keys table of its own).
_new = object.__new__
_now = datetime.now
_UTC = UTC
# The slot setters of pydantic's BaseModel, called directly: no attribute lookup, no validation.
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
_ID_POOL = ids_pool()
_take_id = _ID_POOL.pop
# How many instances of a plain class make CPython (3.11 on) size its shared keys table to its keys:
# it sizes a class's table for 30 keys and gives back one place for each instance made, down to one.
_SHRINK_KEYS = 32


class _FieldSets(dict[type[BaseModel], set[str]]):
    """Per model class, the one fields-set of every field its built messages share (made when first asked)."""

    def __missing__(self, cls: type[BaseModel]) -> set[str]:
        fields = self[cls] = set(cls.model_fields)
        return fields


_EVERY_FIELD = _FieldSets()


class _Layouts(dict[type[BaseModel], dict[str, Any]]):
    """Per model class, a dict of its fields (each ``None`` but ``type``, the class's own), in declaration
    order, whose keys table its copies share (made when first asked): a built message's ``__dict__`` is a
    copy, filled in."""

    def __missing__(self, cls: type[BaseModel]) -> dict[str, Any]:
        holder = type(f"_{cls.__name__}Fields", (), {"__slots__": ("__dict__",)})
        for _ in range(_SHRINK_KEYS):
            instance = holder()
            for name, info in cls.model_fields.items():
                setattr(instance, name, info.default if name == "type" else None)
        layout: dict[str, Any] = instance.__dict__
        self[cls] = layout
        return layout


_LAYOUT = _Layouts()

ModelT = TypeVar("ModelT", bound=BaseModel)


def _built(cls: type[ModelT], values: dict[str, Any]) -> ModelT:
    """``cls`` holding ``values`` (a copy of ``_LAYOUT[cls]`` with every field filled in, each already
    of its type)."""
    model = _new(cls)
    _set_dict(model, values)
    _set_fields_set(model, _EVERY_FIELD[cls])
    _set_extra(model, None)
    _set_private(model, None)
    return model


def share_fields_set(model: ModelT) -> ModelT:
    """``model`` (validated, of a class with no extra fields) with its class's shared fields-set of
    every field, and its values in a dict sharing its class's keys table, as the messages the loop
    builds have: for a client's answers, which are validated."""
    cls = type(model)
    values = _LAYOUT[cls].copy()
    values.update(model.__dict__)
    if len(values) == len(cls.model_fields):  # the fields alone, in their order: a dict as the loop's
        _set_dict(model, values)
    _set_fields_set(model, _EVERY_FIELD[cls])
    return model


AgentMessageT = TypeVar("AgentMessageT", TextMessage, ToolCallRequestEvent, ToolCallExecutionEvent, ThoughtEvent)


def agent_message(
    cls: type[AgentMessageT],
    content: Any,
    source: str,
    models_usage: RequestUsage | None = None,
    message_id: str | None = None,
) -> AgentMessageT:
    """``cls(content=..., source=..., models_usage=..., id=...)`` without validation, for the loop's
    own chat messages and events (``content``: a ``str``, or a list: the message gets a copy)."""
    values = _LAYOUT[cls].copy()
    values["id"] = message_id or (_take_id() if _ID_POOL else new_id())
    values["source"] = source
    values["models_usage"] = models_usage
    values["metadata"] = {}
    values["created_at"] = _now(_UTC)
    values["content"] = list(content) if type(content) is list else content
    return _built(cls, values)


def assistant_message(content: str | Sequence[FunctionCall], source: str, thought: str | None) -> AssistantMessage:
    """``AssistantMessage(content=..., thought=..., source=...)`` without validation (the loop's own)."""
    values = _ASSISTANT.copy()
    values["content"] = list(content) if type(content) is list else content
    values["thought"] = thought
    values["source"] = source
    return _built(AssistantMessage, values)


def system_prompt(content: str) -> SystemMessage:
    """``SystemMessage(content=...)`` of a text, without validation (an agent's own)."""
    values = _LAYOUT[SystemMessage].copy()
    values["content"] = content
    return _built(SystemMessage, values)


def user_message(content: str, source: str) -> UserMessage:
    """``UserMessage(content=..., source=...)`` of a text, without validation (the loop's own)."""
    values = _USER.copy()
    values["content"] = content
    values["source"] = source
    return _built(UserMessage, values)


def tool_result(content: str, name: str, call_id: str, is_error: bool = False) -> FunctionExecutionResult:
    """``FunctionExecutionResult(...)`` without validation (the loop's own). A tool's text that is no
    plain str (a StrEnum member a tool returned, say) is validated: made a str, or rejected."""
    if type(content) is not str:
        return share_fields_set(FunctionExecutionResult(content=content, name=name, call_id=call_id, is_error=is_error))
    values = _LAYOUT[FunctionExecutionResult].copy()
    values["content"] = content
    values["name"] = name
    values["call_id"] = call_id
    values["is_error"] = is_error
    return _built(FunctionExecutionResult, values)


def tool_results_message(results: Sequence[FunctionExecutionResult]) -> FunctionExecutionResultMessage:
    """``FunctionExecutionResultMessage(content=results)`` (a copy of the list) without validation."""
    values = _LAYOUT[FunctionExecutionResultMessage].copy()
    values["content"] = list(results)
    return _built(FunctionExecutionResultMessage, values)


def built_values(model: BaseModel) -> tuple[Any, ...] | None:
    """The values of ``model``'s fields, in their order, when it holds them as the messages the loop builds
    do (every field set, in its class's shared fields-set, no extra or private values): what
    :func:`rebuilt` makes an equal model of. ``None`` for any other model."""
    cls = type(model)
    values = model.__dict__
    if (
        model.__pydantic_fields_set__ is not _EVERY_FIELD[cls]
        or model.__pydantic_extra__ is not None
        or model.__pydantic_private__ is not None
        or tuple(values) != tuple(_LAYOUT[cls])
    ):
        return None
    return tuple(values.values())


def rebuilt(cls: type[ModelT], values: Iterable[Any]) -> ModelT:
    """A ``cls`` holding ``values`` (as :func:`built_values` gave them), without validation."""
    layout = _LAYOUT[cls]
    fields = layout.copy()
    fields.update(zip(tuple(layout), values))
    return _built(cls, fields)


def text_result(content: str, usage: RequestUsage) -> CreateResult:
    """``CreateResult(finish_reason="stop", content=..., usage=...)`` of a str, without validation (a
    scripted answer, checked when its script was given)."""
    values = _TEXT_RESULT.copy()
    values["content"] = content
    values["usage"] = usage
    return _built(CreateResult, values)


def usage(prompt_tokens: int, completion_tokens: int) -> RequestUsage:
    """``RequestUsage(...)`` of two ints, without validation."""
    values = _USAGE.copy()
    values["prompt_tokens"] = prompt_tokens
    values["completion_tokens"] = completion_tokens
    return _built(RequestUsage, values)


def function_call(call_id: str, name: str, arguments: str) -> FunctionCall:
    """``FunctionCall(id=..., name=..., arguments=...)`` of three strings, without validation."""
    values = _LAYOUT[FunctionCall].copy()
    values["id"] = call_id
    values["name"] = name
    values["arguments"] = arguments
    return _built(FunctionCall, values)


_ASSISTANT = _LAYOUT[AssistantMessage]
_USER = _LAYOUT[UserMessage]
_TEXT_RESULT = _LAYOUT[CreateResult].copy()  # a text answer's constant fields filled in
_TEXT_RESULT["finish_reason"] = "stop"
_TEXT_RESULT["cached"] = False
_USAGE = _LAYOUT[RequestUsage]
_CHUNK = _LAYOUT[ModelClientStreamingChunkEvent]
_CHUNK_FIELDS = _EVERY_FIELD[ModelClientStreamingChunkEvent]


def streaming_chunk(content: str, source: str, full_message_id: str) -> ModelClientStreamingChunkEvent:
    """Build a chunk event without validation: the hot path of streaming, all inputs trusted.

    The result is the model ``ModelClientStreamingChunkEvent(...)`` would build (same fields, same
    dump), in about half the time (:func:`_built` inlined).
    """
    event = _new(ModelClientStreamingChunkEvent)
    values = _CHUNK.copy()
    values["id"] = _take_id() if _ID_POOL else new_id()
    values["source"] = source
    values["models_usage"] = None
    values["metadata"] = {}
    values["created_at"] = _now(_UTC)
    values["content"] = content
    values["full_message_id"] = full_message_id
    _set_dict(event, values)
    _set_fields_set(event, _CHUNK_FIELDS)
    _set_extra(event, None)
    _set_private(event, None)
    return event


_BUILT_IN: tuple[type[BaseChatMessage] | type[BaseAgentEvent], ...] = (
    TextMessage,
    MultiModalMessage,
    StopMessage,
    ToolCallSummaryMessage,
    HandoffMessage,
    ToolCallRequestEvent,
    ToolCallExecutionEvent,
    MemoryQueryEvent,
    UserInputRequestedEvent,
    ModelClientStreamingChunkEvent,
    ThoughtEvent,
    SelectSpeakerEvent,
    CodeGenerationEvent,
    CodeExecutionEvent,
)


class MessageFactory:
    """Messages and events from their JSON-ready data, by their ``type`` (AutoGen's).

    Knows the built-in types; :meth:`register` adds one (a ``StructuredMessage[Content]`` or a
    user's own ``BaseChatMessage``/``BaseAgentEvent`` subclass), known by its class name.
    """

    def __init__(self) -> None:
        self._message_types: dict[str, type[BaseChatMessage] | type[BaseAgentEvent]] = {
            cls.__name__: cls for cls in _BUILT_IN
        }

    def is_registered(self, message_type: type[BaseAgentEvent | BaseChatMessage]) -> bool:
        """Whether a type of this class name is known."""
        return message_type.__name__ in self._message_types

    def register(self, message_type: type[BaseAgentEvent | BaseChatMessage]) -> None:
        """Know ``message_type`` by its class name; AutoGen's errors for one already known or not a message."""
        if self.is_registered(message_type):
            raise ValueError(f"Message type {message_type} is already registered.")
        if not (isinstance(message_type, type) and issubclass(message_type, (BaseChatMessage, BaseAgentEvent))):
            raise ValueError(f"Message type {message_type} must be a subclass of BaseChatMessage or BaseAgentEvent.")
        self._message_types[message_type.__name__] = message_type

    def create(self, data: Mapping[str, Any]) -> BaseAgentEvent | BaseChatMessage:
        """The message ``data`` describes (its ``type`` names a known type)."""
        message_type = data.get("type")
        if message_type is None:
            raise ValueError("Field 'type' is required in the message data to recover the message type.")
        if not isinstance(message_type, str):
            raise ValueError(f"Message type must be a string, got {type(message_type)}")
        cls = self._message_types.get(message_type)
        if cls is None:
            raise ValueError(f"Unknown message type: {message_type}")
        return cls.load(data)


_MESSAGE_TYPES: dict[str, type[BaseChatMessage] | type[BaseAgentEvent]] = {
    cls.__name__: cls for cls in (*_BUILT_IN, StructuredMessage)
}


def dump_message(message: BaseChatMessage | BaseAgentEvent) -> dict[str, Any]:
    """A JSON-ready dict of a message or event."""
    return message.model_dump(mode="json")


def load_message(
    data: dict[str, Any] | str, structured_type: type[BaseModel] | None = None
) -> BaseChatMessage | BaseAgentEvent:
    """Rebuild a message or event from :func:`dump_message` output (or its JSON text).

    A ``StructuredMessage`` (type ``StructuredMessage[Content]``) needs ``structured_type`` to get
    its object back; without it an error says so.
    """
    if isinstance(data, str):
        data = json.loads(data)
    if not isinstance(data, dict):
        raise TypeError(f"a message must be a JSON object, got {type(data).__name__}")
    kind = data.get("type")
    structured = isinstance(kind, str) and kind.startswith("StructuredMessage")
    cls = StructuredMessage if structured else _MESSAGE_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown message type {kind!r}; known: {sorted(_MESSAGE_TYPES)}")
    if cls is StructuredMessage:
        if structured_type is None:
            raise ValueError(f"loading a {kind} needs structured_type=<its pydantic model>")
        cls = StructuredMessage[structured_type]  # type: ignore[valid-type]
    return cls.model_validate(data)


# --------------------------------------------------------------------------- results


@dataclass(slots=True)
class Response:
    """The last item ``on_messages_stream`` yields: the final message and the events before it."""

    chat_message: BaseChatMessage
    inner_messages: list[BaseAgentEvent | BaseChatMessage] = field(default_factory=list)


@dataclass
class TaskResult:
    """What ``run`` returns: the task, every event and the final message, in order."""

    messages: Sequence[BaseAgentEvent | BaseChatMessage]
    stop_reason: str | None = None


SHARED_RESULT: Hook[[TaskResult], TaskResult] = Hook("shared result")
"""A run's result as an instance of a subclass another library's code also takes (AutoGen's ``Console``
ends on ``isinstance(item, autogen_agentchat.base.TaskResult)``), equal to ``result``; ``None``:
nbagent's as it is (registered by :mod:`nbagent.autogen` once AutoGen is imported)."""


def task_result(messages: Sequence[BaseAgentEvent | BaseChatMessage]) -> TaskResult:
    """A run's :class:`TaskResult` of ``messages``, as :data:`SHARED_RESULT` shares it."""
    result = TaskResult(messages=messages)
    return SHARED_RESULT(result) or result
