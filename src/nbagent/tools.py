"""Tools the model can call, the workbench that holds them, and handoffs.

A :class:`FunctionTool` wraps any Python callable, sync or async (or an async generator, whose
events stream while it runs). Its JSON schema comes from the type hints and the docstring and is
built once, when the tool is made; arguments are validated against it before the call.

Workbenches follow AutoGen's ``Workbench`` protocol: any object with ``list_tools()`` and
``call_tool(name, arguments=, cancellation_token=, call_id=)`` is accepted (:func:`as_workbenches`),
and what it returns is read as a :class:`ToolResult` (AutoGen's shape: a ``result`` list of text and
image parts, ``is_error``, ``to_text()``), whether it is nbagent's, AutoGen's or a dict of the same
shape (:func:`as_tool_result`).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import inspect
import io
import json
import re
import warnings
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import (
    Annotated,
    Any,
    ClassVar,
    Generic,
    Literal,
    Protocol,
    Self,
    TypedDict,
    cast,
    get_args,
    get_origin,
    runtime_checkable,
)

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter, ValidationError, create_model
from pydantic_core import PydanticUndefined
from typing_extensions import TypeVar

from . import _check as check
from .cancellation import CancellationToken
from .components import (
    Component,
    ComponentModel,
    dump_import,
    dump_nested,
    function_from_config,
    function_source,
    load_nested,
    schema_to_model,
)
from .hooks import Hook
from .messages import BaseAgentEvent, BaseChatMessage, Image

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ParametersSchema(TypedDict, total=False):
    """A tool's ``parameters`` (a JSON Schema object), as AutoGen's ``ParametersSchema`` names it."""

    type: str
    properties: dict[str, Any]
    required: Sequence[str]
    additionalProperties: bool


class ToolSchema(TypedDict, total=False):
    """What the model is told about a tool (the OpenAI function format)."""

    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool


class ToolArgumentsError(ValidationError, ValueError):
    """Tool arguments that are not a JSON object, or that do not fit the tool's schema.

    A pydantic ``ValidationError`` (what AutoGen's tools raise for bad arguments, so ``except
    ValidationError`` catches it) and a ``ValueError``; its text names the tool and each problem,
    and ``errors()`` gives pydantic's details (``cause``, the error pydantic raised).
    """

    message: str
    cause: ValidationError | None

    def __new__(cls, message: str, cause: ValidationError | None = None) -> Self:
        title = cause.title if cause is not None else "tool arguments"
        return ValidationError.__new__(cls, title, [], "python", False)

    def __init__(self, message: str, cause: ValidationError | None = None) -> None:
        self.message = message
        self.cause = cause

    def errors(self, *args: Any, **kwargs: Any) -> list[Any]:
        """pydantic's details of each problem (those of :attr:`cause`)."""
        return [] if self.cause is None else list(self.cause.errors(*args, **kwargs))

    def error_count(self) -> int:
        return 0 if self.cause is None else self.cause.error_count()

    def json(self, *args: Any, **kwargs: Any) -> str:
        return "[]" if self.cause is None else self.cause.json(*args, **kwargs)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"ToolArgumentsError({self.message!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message,))


class TextResultContent(BaseModel):
    """A text part of a :class:`ToolResult` (AutoGen's ``TextResultContent``)."""

    type: Literal["TextResultContent"] = "TextResultContent"
    content: str


class ImageResultContent(BaseModel):
    """An image part of a :class:`ToolResult` (AutoGen's ``ImageResultContent``)."""

    type: Literal["ImageResultContent"] = "ImageResultContent"
    content: Image


ResultContent = Annotated[TextResultContent | ImageResultContent, Field(discriminator="type")]


class ToolResult:
    """What calling one tool gave: its parts (text, images), whether it failed, and its text.

    Both shapes build one: nbagent's ``ToolResult(name, "text", is_error=False)`` and AutoGen's
    ``ToolResult(name=..., result=[TextResultContent(...), ImageResultContent(...)], is_error=...)``.
    ``content`` is the text the model reads, :meth:`to_text` (an image is written ``[Image: <base64>]``,
    as AutoGen's agent gives it to the model).
    """

    __slots__ = ("name", "is_error", "_text", "_parts")
    type: Literal["ToolResult"] = "ToolResult"

    def __init__(
        self,
        name: str,
        content: str | None = None,
        is_error: bool = False,
        *,
        result: Iterable[TextResultContent | ImageResultContent | str] | None = None,
        type: str | None = None,  # AutoGen's field, accepted so that its dumps load
    ) -> None:
        if content is not None and result is not None:
            raise TypeError("ToolResult takes content (a text) or result (a list of parts), not both")
        self.name = name
        self.is_error = bool(is_error)
        self._parts: list[TextResultContent | ImageResultContent] | None = None
        self._text: str | None = None
        if result is not None:
            self._parts = [result_part(part) for part in result]
        else:
            self._text = "" if content is None else content

    @property
    def result(self) -> list[TextResultContent | ImageResultContent]:
        """The parts of the result (one text part for a plain text result)."""
        if self._parts is None:
            self._parts = [TextResultContent(content=self._text or "")]
        return list(self._parts)

    @property
    def content(self) -> str:
        """The text the model reads: :meth:`to_text`."""
        return self._text if self._text is not None else self.to_text()

    def to_text(self, replace_image: str | None = None) -> str:
        """The parts as one text, joined by newlines; an image as ``[Image: <base64>]`` or ``replace_image``."""
        if self._parts is None:
            return self._text or ""
        texts: list[str] = []
        for part in self._parts:
            if isinstance(part, TextResultContent):
                texts.append(part.content)
            else:
                texts.append(replace_image if replace_image is not None else f"[Image: {part.content.data}]")
        text = "\n".join(texts)
        if replace_image is None:
            self._text = text
        return text

    def model_dump(self, mode: str = "python") -> dict[str, Any]:
        """AutoGen's dump of a tool result: ``{"type", "name", "result": [parts], "is_error"}``."""
        return {
            "type": "ToolResult",
            "name": self.name,
            "result": [part.model_dump(mode=mode) for part in self.result],
            "is_error": self.is_error,
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolResult):
            return NotImplemented
        return (self.name, self.is_error, self.result) == (other.name, other.is_error, other.result)

    def __hash__(self) -> int:
        return hash((self.name, self.is_error, self.content))

    def __repr__(self) -> str:
        if self._parts is None or all(isinstance(part, TextResultContent) for part in self._parts):
            return f"ToolResult(name={self.name!r}, content={self.content!r}, is_error={self.is_error})"
        return f"ToolResult(name={self.name!r}, result={self._parts!r}, is_error={self.is_error})"


def as_image(value: Any) -> Image:
    """An image in nbagent's form, from nbagent's :class:`~nbagent.messages.Image`, AutoGen's ``Image``
    (``to_base64()``), an MCP image (``data`` and ``mime_type``), a dict of those, a PIL image or bytes."""
    if isinstance(value, Image):
        return value
    if isinstance(value, (bytes, bytearray)):
        return Image.from_bytes(bytes(value))
    if isinstance(value, Mapping):
        data = value.get("data")
        if isinstance(data, str):
            return Image(data=data, mime_type=str(value.get("mime_type") or value.get("mimeType") or "image/png"))
    to_base64 = getattr(value, "to_base64", None)
    if callable(to_base64):  # AutoGen's Image: a PIL image it encodes as PNG
        return Image(data=str(to_base64()), mime_type="image/png")
    data = getattr(value, "data", None)
    if isinstance(data, str):
        return Image(data=data, mime_type=str(getattr(value, "mime_type", None) or "image/png"))
    save = getattr(value, "save", None)
    if callable(save):  # a PIL image
        buffer = io.BytesIO()
        save(buffer, format="PNG")
        return Image(data=base64.b64encode(buffer.getvalue()).decode("ascii"), mime_type="image/png")
    raise TypeError(f"not an image: {type(value).__name__}")


def result_part(part: Any) -> TextResultContent | ImageResultContent:
    """One part of a tool result as nbagent's: a text, an image, or AutoGen's or MCP's parts (objects or dicts)."""
    if isinstance(part, (TextResultContent, ImageResultContent)):
        return part
    if isinstance(part, str):
        return TextResultContent(content=part)
    get = part.get if isinstance(part, Mapping) else lambda key, default=None: getattr(part, key, default)
    kind = get("type")
    if kind in ("TextResultContent", "text"):
        text = get("content") if kind == "TextResultContent" else get("text")
        if isinstance(text, str):
            return TextResultContent(content=text)
    elif kind == "ImageResultContent":
        return ImageResultContent(content=as_image(get("content")))
    elif kind == "image":
        return ImageResultContent(content=as_image(part))
    elif kind is None and isinstance(text := get("content"), str):
        return TextResultContent(content=text)
    raise TypeError(f"a tool result part must be a text or an image, got {type(part).__name__} {kind or ''}".rstrip())


def as_tool_result(value: Any, name: str) -> ToolResult:
    """What a workbench's ``call_tool`` returned, as nbagent's :class:`ToolResult`.

    Accepts nbagent's result, AutoGen's (``autogen_core.tools.ToolResult``: ``name``, ``result``
    parts, ``is_error``), a dict of that shape (a dumped result), a plain text, and any object with
    ``to_text()`` and ``is_error`` (AutoGen's agent reads a result so).
    """
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(name, value)
    get = value.get if isinstance(value, Mapping) else lambda key, default=None: getattr(value, key, default)
    parts = get("result")
    result_name = get("name")
    result_name = result_name if isinstance(result_name, str) and result_name else name
    is_error = bool(get("is_error", False))
    if isinstance(parts, (list, tuple)):
        return ToolResult(result_name, result=parts, is_error=is_error)
    content = get("content")
    if isinstance(content, str):
        return ToolResult(result_name, content, is_error=is_error)
    to_text = getattr(value, "to_text", None)  # a result read by its text, as AutoGen's agent reads one
    text = to_text() if callable(to_text) else None
    if isinstance(text, str):
        return ToolResult(result_name, text, is_error=is_error)
    raise TypeError(
        f"a workbench's call_tool for tool '{name}' returned {type(value).__name__}, not a ToolResult "
        "(a result list of text and image parts, and is_error)"
    )


def tool_output_text(value: Any) -> str:
    """How a tool's return value is shown to the model: text as is, a pydantic model as AutoGen
    writes it (``json.dumps(value.model_dump())``: its serializer, ``", "`` and ``": "``, ASCII
    escapes; what its dump is when not a dict, as ``str``), other objects as JSON."""
    if isinstance(value, str):
        return value
    if type(value) is int:  # what json.dumps writes for an int, without building an encoder
        return int.__repr__(value)
    if isinstance(value, BaseModel):
        dumped = value.model_dump()
        if not isinstance(dumped, dict):
            return str(dumped)
        try:
            return json.dumps(dumped)
        except (TypeError, ValueError):  # a datetime, a set...: AutoGen fails here; its JSON-mode dump
            return json.dumps(value.model_dump(mode="json"))
    try:
        return _JSON.encode(value)
    except (TypeError, ValueError):
        return str(value)


_JSON = json.JSONEncoder(ensure_ascii=False)  # json.dumps(value, ensure_ascii=False), its encoder built once


def parse_arguments(tool_name: str, raw: str) -> dict[str, Any]:
    """The model's argument string as a dict, or a :class:`ToolArgumentsError` saying why not."""
    try:
        arguments = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as error:
        raise ToolArgumentsError(
            f"arguments for tool '{tool_name}' are not valid JSON: {error}", _pydantic_error(raw, json=True)
        ) from None
    if not isinstance(arguments, dict):
        raise ToolArgumentsError(
            f"arguments for tool '{tool_name}' must be a JSON object, got {type(arguments).__name__}",
            _pydantic_error(arguments, json=False),
        )
    return arguments


_ARGUMENTS: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])


def _pydantic_error(value: Any, *, json: bool) -> ValidationError | None:
    """pydantic's own error for arguments that are no JSON object (its ``json_invalid``, ``dict_type``)."""
    try:
        _ARGUMENTS.validate_json(value) if json else _ARGUMENTS.validate_python(value)
    except ValidationError as error:
        return error
    return None


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema with each ``{"$ref": "#/$defs/X"}`` replaced by a copy of ``X`` and ``$defs``
    dropped, as AutoGen's tool schemas are (a ``$ref``'s sibling keys go with it, as there)."""
    defs = schema.get("$defs")
    if not defs:
        return schema

    def resolve(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                key = ref[len("#/$defs/") :]
                if key in seen or key not in defs:  # a recursive model: the reference stays
                    return dict(node)
                return resolve(defs[key], (*seen, key))
            return {key: resolve(value, seen) for key, value in node.items() if key != "$defs"}
        if isinstance(node, list):
            return [resolve(item, seen) for item in node]
        return node

    resolved: dict[str, Any] = resolve(schema, ())
    return resolved


# With defaults (PEP 696), so that a bare ``BaseTool`` means ``BaseTool[BaseModel, Any]``.
ArgsT = TypeVar("ArgsT", bound=BaseModel, contravariant=True, default=BaseModel)
ReturnT = TypeVar("ReturnT", covariant=True, default=Any)
StateT = TypeVar("StateT", bound=BaseModel, default=BaseModel)
StreamT = TypeVar("StreamT", covariant=True, default=Any)
ValueT = TypeVar("ValueT")


@runtime_checkable
class Tool(Protocol):
    """AutoGen's ``Tool`` protocol: what an agent needs of a tool."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def schema(self) -> ToolSchema: ...

    def args_type(self) -> type[BaseModel]: ...

    def return_type(self) -> Any: ...

    def state_type(self) -> type[BaseModel] | None: ...

    def return_value_as_string(self, value: Any) -> str: ...

    async def run_json(self, args: Mapping[str, Any], cancellation_token: Any, call_id: str | None = None) -> Any: ...

    async def save_state_json(self) -> Mapping[str, Any]: ...

    async def load_state_json(self, state: Mapping[str, Any]) -> None: ...


@runtime_checkable
class StreamTool(Tool, Protocol):
    """AutoGen's ``StreamTool`` protocol: a tool whose ``run_json_stream`` yields while it runs."""

    def run_json_stream(
        self, args: Mapping[str, Any], cancellation_token: Any, call_id: str | None = None
    ) -> AsyncIterator[Any]: ...


def _normalize_annotated(hint: Any) -> Any:
    """``Annotated[X, ...]`` as ``X`` (AutoGen's return types)."""
    return get_args(hint)[0] if get_origin(hint) is Annotated else hint


class BaseTool(Component, ABC, Generic[ArgsT, ReturnT]):
    """A tool as AutoGen defines it: ``BaseTool[ArgsModel, Result](args_type, return_type, name,
    description, strict=False)`` with ``async run(args, cancellation_token)``.

    ``run_json`` validates the model's arguments with ``args_type`` (a :class:`ToolArgumentsError`,
    which is pydantic's ``ValidationError``, when they do not fit) and calls :meth:`run`. The schema
    is built from ``args_type`` once, when first read, as AutoGen builds it (each property's title
    and description, ``$defs`` inlined, ``additionalProperties: false``; ``strict=True`` refuses
    defaulted arguments). A subclass may instead set ``name``, ``description`` and ``schema`` itself
    and implement ``run_json`` (then :meth:`run` calls it).
    """

    component_type = "tool"
    _args_type: type[BaseModel] | None = None
    _return_type: Any = Any
    _strict: bool = False
    _cached_schema: ToolSchema | None = None
    _schema_given: bool = False

    def __init__(
        self,
        args_type: type[ArgsT] | None = None,
        return_type: type[ReturnT] | Any = Any,
        name: str | None = None,
        description: str | None = None,
        strict: bool = False,
    ) -> None:
        """AutoGen's constructor. A subclass that sets ``name``, ``description`` and ``schema``
        itself (nbagent's older way) may skip it, or call it with no arguments."""
        where = type(self).__name__
        if args_type is None:
            if name is not None or description is not None:
                check.fail_type(where, "args_type", "a pydantic model class", args_type)
            return
        if not (isinstance(args_type, type) and issubclass(args_type, BaseModel)):
            check.fail_type(where, "args_type", "a pydantic model class", args_type)
        check.string(where, "name", name)
        check.string(where, "description", description)
        check.boolean(where, "strict", strict)
        self._args_type = args_type
        self._return_type = _normalize_annotated(return_type)
        self._name = cast(str, name)
        self._description = cast(str, description)
        self._strict = strict

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # nbagent's way to write a tool, run_json alone, keeps working: its run() calls run_json.
        if "run_json" in cls.__dict__ and getattr(cls.run, "__isabstractmethod__", False):
            cls.run = BaseTool._run_through_json  # type: ignore[method-assign]

    # ------------------------------------------------------------------ what the model is told

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = value
        self._schema_changed()

    @property
    def description(self) -> str:
        return self._description

    @description.setter
    def description(self, value: str) -> None:
        self._description = value
        self._schema_changed()

    @property
    def strict(self) -> bool:
        return self._strict

    @strict.setter
    def strict(self, value: bool) -> None:
        self._strict = value
        self._schema_changed()

    def _schema_changed(self) -> None:
        """Build the schema again when next read, unless it was given as it is."""
        if not self._schema_given:
            self._cached_schema = None

    @property
    def schema(self) -> ToolSchema:
        """The tool as the model is offered it, built from :meth:`args_type` once (AutoGen's shape)."""
        schema = self._cached_schema
        if schema is None:
            schema = self._cached_schema = self._build_schema()
        return schema

    @schema.setter
    def schema(self, value: ToolSchema) -> None:
        self._cached_schema = value
        self._schema_given = True

    def _build_schema(self) -> ToolSchema:
        if self._args_type is None:
            raise NotImplementedError(
                f"{type(self).__name__} has no args_type: pass it to BaseTool.__init__ or set the tool's schema"
            )
        model_schema = _inline_refs(self._args_type.model_json_schema())
        parameters = ParametersSchema(
            type="object",
            properties=model_schema.get("properties", {}),
            required=model_schema.get("required", []),
            additionalProperties=model_schema.get("additionalProperties", False),
        )
        if self._strict and set(parameters["required"]) != set(parameters["properties"]):
            raise ValueError(
                "Strict mode is enabled, but not all input arguments are marked as required. "
                "Default arguments are not allowed in strict mode."
            )
        if self._strict and parameters["additionalProperties"]:
            raise ValueError(
                "Strict mode is enabled but additional argument is also enabled. This is not allowed in strict mode."
            )
        return ToolSchema(
            name=self._name, description=self._description, parameters=dict(parameters), strict=self._strict
        )

    def args_type(self) -> type[BaseModel]:
        """The pydantic model of the arguments (built from the schema for a tool that only has one)."""
        if self._args_type is None:
            parameters = self.schema.get("parameters") or {"type": "object", "properties": {}}
            self._args_type = schema_to_model(parameters, f"{self.name}args")
        return self._args_type

    def return_type(self) -> Any:
        return self._return_type

    def state_type(self) -> type[BaseModel] | None:
        """The pydantic model of the tool's state; ``None``: the tool keeps none."""
        return None

    # ------------------------------------------------------------------ running

    def return_value_as_string(self, value: Any) -> str:
        """The text the model reads: a pydantic model as ``json.dumps(value.model_dump())``
        (AutoGen's, its custom serializer included), a str as it is, other values as JSON."""
        return tool_output_text(value)

    @property
    def streams(self) -> bool:
        """True when the tool yields events while it runs."""
        return False

    def validate_args(self, args: Mapping[str, Any]) -> Any:
        """The arguments as an ``args_type`` instance, or a :class:`ToolArgumentsError`."""
        try:
            return self.args_type().model_validate(dict(args))
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in item['loc']) or 'arguments'}: {item['msg']}" for item in error.errors()
            )
            raise ToolArgumentsError(
                f"arguments for tool '{self.name}' do not match its schema: {problems}", error
            ) from None

    @abstractmethod
    async def run(self, args: ArgsT, cancellation_token: CancellationToken) -> ReturnT:
        """Run the tool on validated arguments."""

    async def _run_through_json(self, args: Any, cancellation_token: CancellationToken) -> Any:
        """``run`` of a tool that implements ``run_json`` only: ``run_json`` of the arguments' dump."""
        dumped = args.model_dump() if isinstance(args, BaseModel) else dict(args)
        return await self.run_json(dumped, cancellation_token)

    async def run_json(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken | None = None, call_id: str | None = None
    ) -> Any:
        """Validate ``args`` with :meth:`args_type` and :meth:`run` the tool on them."""
        return ran(self, args, await self.run(self.validate_args(args), cancellation_token or CancellationToken()))

    async def run_json_stream(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken | None = None, call_id: str | None = None
    ) -> AsyncIterator[Any]:
        """Events while the tool runs, then its return value last; by default just the value."""
        yield await self.run_json(args, cancellation_token)

    async def save_state_json(self) -> Mapping[str, Any]:
        """The tool's state as JSON-ready data (AutoGen's); none by default."""
        return {}

    async def load_state_json(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`save_state_json`'s output; nothing by default."""
        return None


class BaseStreamTool(BaseTool[ArgsT, ReturnT], ABC, Generic[ArgsT, StreamT, ReturnT]):
    """AutoGen's streaming tool: ``run_stream(args, cancellation_token)`` yields while it runs and
    yields its return value (of ``return_type``) last. Events (nbagent's or AutoGen's messages) are
    shown while the tool runs; the last value is the result."""

    @abstractmethod
    def run_stream(self, args: ArgsT, cancellation_token: CancellationToken) -> AsyncIterator[StreamT | ReturnT]:
        """Yield while running, and the return value last."""

    @property
    def streams(self) -> bool:
        return True

    async def run(self, args: ArgsT, cancellation_token: CancellationToken) -> ReturnT:
        """The stream's last value."""
        last: Any = None
        async for item in self.run_stream(args, cancellation_token):
            last = item
        return cast(ReturnT, last)

    async def run_json_stream(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken | None = None, call_id: str | None = None
    ) -> AsyncIterator[Any]:
        last: Any = None
        async for item in self.run_stream(self.validate_args(args), cancellation_token or CancellationToken()):
            last = item
            yield item
        if last is None:
            raise ValueError(f"tool '{self.name}' must yield a final return value at the end of its stream")
        expected = self._return_type
        if isinstance(expected, type) and expected is not Any and not isinstance(last, expected):
            raise TypeError(f"Expected return value of type {expected.__name__}, but got {type(last).__name__}")
        ran(self, args, last)

    async def run_json(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken | None = None, call_id: str | None = None
    ) -> Any:
        last: Any = None
        async for item in self.run_json_stream(args, cancellation_token, call_id):
            last = item
        return last


class BaseToolWithState(BaseTool[ArgsT, ReturnT], ABC, Generic[ArgsT, ReturnT, StateT]):
    """AutoGen's tool with a state: ``save_state()`` gives a ``state_type`` model, ``load_state``
    takes one; a workbench saves and loads them as JSON (``save_state_json``)."""

    def __init__(
        self, args_type: type[ArgsT], return_type: type[ReturnT], state_type: type[StateT], name: str, description: str
    ) -> None:
        super().__init__(args_type, return_type, name, description)
        self._state_type = state_type

    def state_type(self) -> type[BaseModel] | None:
        return self._state_type

    @abstractmethod
    def save_state(self) -> StateT: ...

    @abstractmethod
    def load_state(self, state: StateT) -> None: ...

    async def save_state_json(self) -> Mapping[str, Any]:
        return self.save_state().model_dump()

    async def load_state_json(self, state: Mapping[str, Any]) -> None:
        self.load_state(self._state_type.model_validate(state))


def _docstring_params(doc: str) -> dict[str, str]:
    """Parameter descriptions from a Google-style ``Args:`` section."""
    found: dict[str, str] = {}
    in_args = False
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped.lower() in ("args:", "arguments:", "parameters:"):
            in_args = True
            continue
        if in_args:
            match = re.match(r"^(\w+)\s*(?:\([^)]*\))?\s*:\s*(.+)$", stripped)
            if match:
                found[match.group(1)] = match.group(2)
            elif stripped.endswith(":") or (not stripped and found):
                in_args = False
    return found


def _docstring_summary(doc: str) -> str:
    """The docstring up to its first section (``Args:``, ``Returns:``...)."""
    lines: list[str] = []
    for line in doc.splitlines():
        if re.match(r"^\s*(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?):\s*$", line):
            break
        lines.append(line)
    return "\n".join(lines).strip()


def _signature(func: Callable[..., Any]) -> inspect.Signature:
    """The signature with string annotations (``from __future__ import annotations``) resolved."""
    try:
        return inspect.signature(func, eval_str=True)
    except (NameError, TypeError, SyntaxError):  # a name only the function's local scope knew
        return inspect.signature(func)


class FunctionToolConfig(BaseModel):
    """AutoGen's ``FunctionTool`` config: the function's source code, its imports, name and description."""

    source_code: str
    name: str
    description: str = ""
    global_imports: list[Any] = Field(default_factory=list)
    has_cancellation_support: bool = False
    strict: bool | None = None
    timeout: float | None = None


class FunctionTool(BaseTool[BaseModel, BaseModel]):
    """A tool made from a Python function (AutoGen's ``FunctionTool``, same schema for the same function).

    Args:
        func: sync or async function (or async generator, to stream events), or a
            ``functools.partial`` of one; a parameter named ``cancellation_token`` receives the run's token.
        description: what the model is told; defaults to the docstring (AutoGen requires it).
        name: defaults to the function's name (a partial's: the wrapped function's).
        global_imports: the imports the function's source code needs when it is loaded from a
            component config (AutoGen's: ``"math"``, ``ImportFromModule("os", ["path"])``, ``Alias``...).
        strict: ask the model for arguments that follow the schema exactly; a parameter with a
            default is then refused when the schema is built, as AutoGen does.
        timeout: seconds after which the call ends with an error result.

    Each argument is described by its ``Annotated[type, "text"]`` text, else its docstring ``Args:``
    line, else its name (AutoGen's rule, the docstring step nbagent's). A dumped tool holds its
    function's source code; loading it runs that code, so ``load_component`` does it only when told
    (``allow_source_code=True``, or ``functions=[...]``).
    """

    component_config_schema = FunctionToolConfig
    component_provider_override = "nbagent.FunctionTool"
    component_aliases = ("autogen_core.tools.FunctionTool",)

    def __init__(
        self,
        func: Callable[..., Any],
        description: str | None = None,
        name: str | None = None,
        global_imports: Sequence[Any] = (),
        strict: bool = False,
        *,
        timeout: float | None = None,
    ) -> None:
        check.function("FunctionTool", "func", func, "a function (sync, async or an async generator)")
        check.string("FunctionTool", "description", description, none=True)
        check.string("FunctionTool", "name", name, none=True)
        check.boolean("FunctionTool", "strict", strict)
        check.number("FunctionTool", "timeout", timeout, positive=True, none=True)
        imports = check.sequence("FunctionTool", "global_imports", global_imports, "a list of imports")
        self._func = func
        target = func.func if isinstance(func, functools.partial) else func
        self._global_imports = list(imports)
        tool_name = name if name else getattr(target, "__name__", type(func).__name__)
        if not _TOOL_NAME.match(tool_name):
            raise ValueError(f"tool name {tool_name!r} must match {_TOOL_NAME.pattern}")
        doc = inspect.getdoc(target) or ""
        self.timeout = timeout
        self._is_async = inspect.iscoroutinefunction(target)
        self._is_stream = inspect.isasyncgenfunction(target)
        signature = _signature(func)
        self._takes_token = "cancellation_token" in signature.parameters
        args_model = self._build_args_model(tool_name, strict, signature, _docstring_params(doc))
        self._arg_names = tuple(args_model.model_fields)  # read once: pydantic's model_fields is a property
        return_type = signature.return_annotation
        if return_type is None:  # ``-> None``: its type, as AutoGen's return_type() says
            return_type = type(None)
        description = description if description is not None else _docstring_summary(doc)
        super().__init__(args_model, return_type, tool_name, description, strict)

    @staticmethod
    def _build_args_model(
        tool_name: str, strict: bool, signature: inspect.Signature, docs: dict[str, str]
    ) -> type[BaseModel]:
        fields: dict[str, Any] = {}
        for param in signature.parameters.values():
            if param.name in ("self", "cancellation_token") or param.kind in (
                inspect.Parameter.VAR_POSITIONAL,
                inspect.Parameter.VAR_KEYWORD,
            ):
                continue
            annotation = Any if param.annotation is inspect.Parameter.empty else param.annotation
            description = docs.get(param.name) or param.name
            if get_origin(annotation) is Annotated:
                base, *extra = get_args(annotation)
                text = next((item for item in extra if isinstance(item, str)), None)
                annotation, description = base, text or description
            default = PydanticUndefined if param.default is inspect.Parameter.empty else param.default
            fields[param.name] = (annotation, Field(default=default, description=description))
        config = ConfigDict(extra="forbid" if strict else "ignore", arbitrary_types_allowed=True)
        return create_model(f"{tool_name}args", __config__=config, **fields)

    @property
    def streams(self) -> bool:
        return self._is_stream

    def _kwargs(self, model: BaseModel, cancellation_token: CancellationToken | None) -> dict[str, Any]:
        kwargs = {name: getattr(model, name) for name in self._arg_names}
        if self._takes_token:
            kwargs["cancellation_token"] = cancellation_token or CancellationToken()
        return kwargs

    async def _call(self, kwargs: dict[str, Any]) -> Any:
        if self._is_async:
            return await self._func(**kwargs)
        return await asyncio.to_thread(self._func, **kwargs)

    async def _invoke(self, kwargs: dict[str, Any]) -> Any:
        if self.timeout is None:
            return await self._call(kwargs)
        try:
            return await asyncio.wait_for(self._call(kwargs), self.timeout)
        except TimeoutError:
            raise TimeoutError(f"tool '{self.name}' timed out after {self.timeout:g} s") from None

    async def run(self, args: BaseModel, cancellation_token: CancellationToken) -> Any:
        """Call the function with the validated arguments (AutoGen's ``run``); a streaming
        function's last value."""
        if self._is_stream:
            last: Any = None
            async for item in self._stream(self._kwargs(args, cancellation_token)):
                last = item
            return last
        return await self._invoke(self._kwargs(args, cancellation_token))

    async def run_json(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken | None = None, call_id: str | None = None
    ) -> Any:
        model = self.validate_args(args)
        if self._is_async and self.timeout is None and type(self).run is FunctionTool.run:
            # What run() does for an async function without a timeout, without its two coroutines' frames
            # (the path of every tool call of the loop); a subclass's own run() is called as it is.
            return ran(self, args, await self._func(**self._kwargs(model, cancellation_token)))
        return ran(self, args, await self.run(model, cancellation_token))  # type: ignore[arg-type]

    async def run_json_stream(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken | None = None, call_id: str | None = None
    ) -> AsyncIterator[Any]:
        if not self._is_stream:
            yield await self.run_json(args, cancellation_token)
            return
        last: Any = None
        async for item in self._stream(self._kwargs(self.validate_args(args), cancellation_token)):
            last = item
            yield item
        ran(self, args, last)  # the stream's last item is its value

    async def _stream(self, kwargs: dict[str, Any]) -> AsyncIterator[Any]:
        """The events of a streaming function as they come, then its last other value."""
        last: Any = None
        try:
            async with asyncio.timeout(self.timeout):
                async for item in self._func(**kwargs):
                    if isinstance(item, (BaseAgentEvent, BaseChatMessage)):
                        yield item
                    else:
                        last = item
        except TimeoutError:
            if self.timeout is None:
                raise
            raise TimeoutError(f"tool '{self.name}' timed out after {self.timeout:g} s") from None
        yield last

    def __repr__(self) -> str:
        return f"FunctionTool(name={self.name!r})"

    def _to_config(self) -> FunctionToolConfig:
        return FunctionToolConfig(
            source_code=function_source(self._func, self.name),
            name=self.name,
            description=self.description,
            global_imports=[dump_import(item) for item in self._global_imports],
            has_cancellation_support=self._takes_token,
            strict=self.strict or None,
            timeout=self.timeout,
        )

    @classmethod
    def _from_config(cls, config: FunctionToolConfig) -> Self:
        func = function_from_config(config.name, config.source_code, config.global_imports)
        return cls(
            func,
            description=config.description,
            name=config.name,
            strict=bool(config.strict),
            timeout=config.timeout,
            global_imports=config.global_imports,
        )


def request_tools(tools: Iterable[Any], tool_choice: Any) -> tuple[list[ToolSchema], str]:
    """AutoGen's ``create(tools=..., tool_choice=...)`` as a request's schemas and choice.

    ``tools`` holds tool objects (anything with a ``schema``: nbagent's, AutoGen's) or tool schemas
    (dicts with a ``name``); ``tool_choice`` is ``"auto"``, ``"required"``, ``"none"``, a tool's name
    or a tool object, which must be one of ``tools`` (AutoGen's errors otherwise).
    """
    schemas: list[ToolSchema] = []
    for index, tool in enumerate(tools):
        if type(tool) is dict:  # the agent's own: its schemas
            schemas.append(tool)  # type: ignore[arg-type]
        elif isinstance(tool, Mapping) and isinstance(tool.get("name"), str):
            schemas.append(ToolSchema(**tool))  # type: ignore[typeddict-item]
        elif isinstance(getattr(tool, "schema", None), Mapping):
            schemas.append(tool.schema)
        else:
            check.fail_type("create", f"tools[{index}]", "a tool or a tool schema (a dict with a name)", tool)
    if type(tool_choice) is str:
        return schemas, tool_choice
    schema = getattr(tool_choice, "schema", None)
    if not isinstance(schema, Mapping) or not isinstance(schema.get("name"), str):
        check.fail_type("create", "tool_choice", "a Tool object, 'auto', 'required' or 'none'", tool_choice)
    if not schemas:
        raise ValueError("tool_choice specified but no tools provided")
    name = str(schema["name"])
    if name not in {item["name"] for item in schemas}:
        raise ValueError(f"tool_choice references '{name}' but it's not in the provided tools")
    return schemas, name


TOOL_RAN: Hook[[BaseTool[Any, Any], Mapping[str, Any], object], None] = Hook("tool ran")
"""Listeners of the tool calls that returned: each is called with the tool, the arguments it was given
and its return value (they answer ``None``). :mod:`nbagent.autogen` logs them as AutoGen's tools do, once
AutoGen is imported (its ``ToolCallEvent`` on its event logger)."""


def ran(tool: BaseTool[Any, Any], args: Mapping[str, Any], value: ValueT) -> ValueT:
    """``value``, once :data:`TOOL_RAN`'s listeners are told ``tool`` returned it for ``args``."""
    if TOOL_RAN:
        TOOL_RAN(tool, args, value)
    return value


FOREIGN_TOOL: Hook[[object], BaseTool] = Hook("tool")
"""Another library's tool as nbagent's, run by the tool itself (registered by :mod:`nbagent.autogen`
for AutoGen's tools); ``None`` for any other object."""


def as_tool(tool: BaseTool | Callable[..., Any]) -> BaseTool:
    """A tool as is; another library's through :data:`FOREIGN_TOOL`; a plain callable wrapped in a
    :class:`FunctionTool`."""
    if isinstance(tool, BaseTool):
        return tool
    foreign = FOREIGN_TOOL(tool)
    if foreign is not None:
        return foreign
    if callable(tool):
        return FunctionTool(tool)
    raise ValueError(f"Unsupported tool type: {type(tool)}")


def load_tool(model: ComponentModel | Mapping[str, Any]) -> BaseTool:
    """A nested tool config loaded: nbagent's tool, or another library's (AutoGen's ``AgentTool`` and
    ``TeamTool``, which nbagent has no class of) through :data:`FOREIGN_TOOL`, as ``tools=`` takes it."""
    built = load_nested(model, object)
    tool = built if isinstance(built, BaseTool) else FOREIGN_TOOL(built)
    if tool is None:
        provider = model.provider if isinstance(model, ComponentModel) else model.get("provider")
        raise TypeError(f"load_component: the config builds a {type(built).__name__} ({provider}), not a BaseTool")
    return tool


class Workbench(Component, ABC):
    """A set of tools the agent can list and call (AutoGen's ``Workbench`` protocol).

    ``call_tool`` takes AutoGen's parameters; a subclass written for nbagent's older signature,
    ``call_tool(name, arguments, cancellation_token)``, is still called correctly (:func:`invoke_tool`
    reads the signature). A workbench is an async context manager (``start``/``stop``), and
    ``AssistantAgent.close()`` calls :meth:`close`, which stops it: ``stop`` must be safe to call
    on a workbench that is not started.
    """

    component_type = "workbench"

    @abstractmethod
    async def list_tools(self) -> list[ToolSchema]: ...

    @abstractmethod
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
        call_id: str | None = None,
    ) -> ToolResult: ...

    async def call_tool_stream(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
        call_id: str | None = None,
    ) -> AsyncIterator[BaseAgentEvent | BaseChatMessage | ToolResult]:
        """Events a tool streams while it runs, then its :class:`ToolResult`."""
        yield await invoke_tool(self, name, arguments, cancellation_token, call_id)

    def streams(self, name: str) -> bool:
        """True when calling ``name`` may stream events."""
        return False

    async def start(self) -> None:
        """Acquire what the tools need; nothing by default."""
        return None

    async def stop(self) -> None:
        """Release what :meth:`start` acquired; nothing by default."""
        return None

    async def reset(self) -> None:
        """Back to the state right after :meth:`start`; nothing by default."""
        return None

    async def save_state(self) -> Mapping[str, Any]:
        return {}

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore from ``save_state`` output; nothing by default."""
        return None

    async def close(self) -> None:
        """What ``AssistantAgent.close()`` calls: :meth:`stop`."""
        await self.stop()

    async def __aenter__(self) -> Workbench:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()


class ToolOverride(BaseModel):
    """Another name and/or description for a workbench's tool, as the model sees it (AutoGen's)."""

    name: str | None = None
    description: str | None = None


class StaticWorkbenchConfig(BaseModel):
    """AutoGen's ``StaticWorkbench`` config: each tool's component config, and the overrides."""

    tools: list[ComponentModel] = Field(default_factory=list)
    tool_overrides: dict[str, ToolOverride] = Field(default_factory=dict)


class StaticWorkbench(Workbench):
    """A fixed list of tools, with their schemas listed once.

    ``tool_overrides`` gives a tool another name and/or description for the model (AutoGen's
    :class:`ToolOverride`, per tool name); the model calls it by that name.
    """

    component_config_schema = StaticWorkbenchConfig
    component_provider_override = "nbagent.StaticWorkbench"
    component_aliases = ("autogen_core.tools.StaticWorkbench", "autogen_core.tools.StaticStreamWorkbench")

    def __init__(
        self,
        tools: Sequence[BaseTool | Callable[..., Any]],
        tool_overrides: Mapping[str, ToolOverride | Mapping[str, Any]] | None = None,
    ) -> None:
        items = check.sequence("StaticWorkbench", "tools", tools, "a list of tools (functions or BaseTool objects)")
        made: list[BaseTool] = []
        for index, item in enumerate(items):
            tool = FOREIGN_TOOL(item) if not isinstance(item, BaseTool) and not callable(item) else as_tool(item)
            if tool is None:
                expected = "a function or a tool (nbagent's BaseTool, or AutoGen's)"
                raise check.ItemTypeError(
                    check.message("StaticWorkbench", f"tools[{index}]", expected, check.given(item))
                )
            made.append(tool)
        self._tools: dict[str, BaseTool] = {}
        for tool in made:
            if tool.name in self._tools:
                raise ValueError(f"Tool names must be unique: {[t.name for t in made]}")
            self._tools[tool.name] = tool
        expected = "a dict of tool name to ToolOverride"
        check.mapping("StaticWorkbench", "tool_overrides", tool_overrides, expected, none=True)
        self._tool_overrides = {
            name: override if isinstance(override, ToolOverride) else ToolOverride.model_validate(override)
            for name, override in (tool_overrides or {}).items()
        }
        self._schemas: list[ToolSchema] = []
        self._exposed: dict[str, BaseTool] = {}  # the name the model calls -> the tool
        for tool in self._tools.values():
            override = self._tool_overrides.get(tool.name)
            schema = tool.schema
            if override is not None and (override.name or override.description is not None):
                schema = ToolSchema(**schema)
                schema["name"] = override.name or tool.name
                if override.description is not None:
                    schema["description"] = override.description
            if schema["name"] in self._exposed:
                raise ValueError(f"Tool names must be unique: {schema['name']!r} is offered twice (tool_overrides)")
            self._exposed[schema["name"]] = tool
            self._schemas.append(schema)
        # The tools that do not stream, run without the generators of a stream (a few microseconds a call).
        self._plain = {name: tool for name, tool in self._exposed.items() if _runs_plain(tool)}

    @property
    def tools(self) -> list[BaseTool]:
        return list(self._tools.values())

    @property
    def schemas(self) -> list[ToolSchema]:
        """The tools as the model is offered them (overrides applied), listed once."""
        return list(self._schemas)

    @property
    def tool_overrides(self) -> dict[str, ToolOverride]:
        return dict(self._tool_overrides)

    def _to_config(self) -> StaticWorkbenchConfig:
        return StaticWorkbenchConfig(
            tools=[dump_nested(tool) for tool in self._tools.values()], tool_overrides=self._tool_overrides
        )

    @classmethod
    def _from_config(cls, config: StaticWorkbenchConfig) -> Self:
        return cls([load_tool(tool) for tool in config.tools], tool_overrides=config.tool_overrides)

    async def list_tools(self) -> list[ToolSchema]:
        return self._schemas

    async def save_state(self) -> Mapping[str, Any]:
        """Each tool's ``save_state_json()`` by tool name (AutoGen's ``StaticWorkbenchState`` dump)."""
        return {
            "type": "StaticWorkbenchState",
            "tools": {tool.name: dict(await tool.save_state_json()) for tool in self._tools.values()},
        }

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Give each tool its part of :meth:`save_state`'s output (``load_state_json``)."""
        check.mapping("StaticWorkbench.load_state", "state", state, "a dict from save_state()")
        saved = state.get("tools", {})
        check.mapping("StaticWorkbench.load_state", "state['tools']", saved, "a dict of tool name to state")
        for tool in self._tools.values():
            if tool.name in saved:
                await tool.load_state_json(saved[tool.name])

    def streams(self, name: str) -> bool:
        tool = self._exposed.get(name)
        return tool is not None and tool.streams

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
        call_id: str | None = None,
    ) -> ToolResult:
        # A tool that does not stream runs here directly, unless a subclass overrides call_tool_stream.
        tool = self._plain.get(name) if type(self).call_tool_stream is StaticWorkbench.call_tool_stream else None
        if tool is not None:
            return await _run_plain(tool, name, arguments, cancellation_token)
        result: Any = None  # a tool that streams (its events and values are dropped), or none of that name
        async for item in self.call_tool_stream(name, arguments, cancellation_token, call_id):
            result = item
        assert isinstance(result, ToolResult)
        return result

    async def call_tool_stream(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
        call_id: str | None = None,
    ) -> AsyncIterator[Any]:
        """A stream tool's events and intermediate values as they come (AutoGen's
        ``StaticStreamWorkbench``), then its :class:`ToolResult`: its last value's text, or its error."""
        tool = self._exposed.get(name)
        if tool is None:
            yield tool_not_found(name)
            return
        if name in self._plain:
            yield await _run_plain(tool, name, arguments, cancellation_token)
            return
        # As AutoGen's StaticStreamWorkbench: each item but the last is yielded as it comes (events and
        # intermediate values alike, in order), the last value is the result.
        value: Any = None
        pending: list[Any] = []  # the item before the newest, yielded once the next one comes
        try:
            async for item in tool.run_json_stream(arguments or {}, cancellation_token):
                if pending:
                    yield pending.pop()
                pending.append(item)
                if not isinstance(item, (BaseAgentEvent, BaseChatMessage)):
                    value = item
            if pending and isinstance(pending[0], (BaseAgentEvent, BaseChatMessage)):
                yield pending.pop()  # a tool ending on an event: its result is its last value
            text = tool.return_value_as_string(value)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a tool's failure (or its value's) becomes an error result the model can read
            if pending:
                yield pending.pop()  # what the tool yielded before it failed, as AutoGen's
            yield ToolResult(name, error_text(error), is_error=True)
            return
        yield ToolResult(name, text)


def _runs_plain(tool: BaseTool) -> bool:
    """Whether ``tool`` streams nothing: its ``run_json_stream`` yields ``await run_json(...)`` alone."""
    stream = type(tool).run_json_stream
    return not tool.streams and (stream is BaseTool.run_json_stream or stream is FunctionTool.run_json_stream)


async def _run_plain(
    tool: BaseTool, name: str, arguments: Mapping[str, Any] | None, cancellation_token: CancellationToken | None
) -> ToolResult:
    """A call of a tool that does not stream: what ``StaticWorkbench.call_tool_stream`` yields last."""
    try:
        text = tool.return_value_as_string(await tool.run_json(arguments or {}, cancellation_token))
    except asyncio.CancelledError:
        raise
    except Exception as error:  # a tool's failure (or its value's) becomes an error result the model can read
        return ToolResult(name, error_text(error), is_error=True)
    return ToolResult(name, text)


StaticStreamWorkbench = StaticWorkbench
"""AutoGen's ``StaticStreamWorkbench``: nbagent's :class:`StaticWorkbench` already streams (its
``call_tool_stream`` yields a stream tool's events and intermediate values, then its result) and loads
AutoGen's configs of either."""


# --------------------------------------------------------------------------- AutoGen's protocol, duck-typed


@dataclass(frozen=True)
class _CallPlan:
    """How to pass a call's arguments, token and call id to one ``call_tool``-like method."""

    arguments_by_keyword: bool
    token: Literal["keyword", "positional", "none"]
    call_id: bool


_PLANS: dict[Any, _CallPlan] = {}


def _call_plan(method: Callable[..., Any]) -> _CallPlan:
    """Read ``method``'s signature once: AutoGen's keywords where it has them, positions otherwise."""
    key = getattr(method, "__func__", method)
    plan = _PLANS.get(key)
    if plan is not None:
        return plan
    try:
        parameters = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):  # no signature to read: call it as AutoGen does
        parameters = []
        plan = _CallPlan(True, "keyword", True)
    else:
        names = {p.name for p in parameters}
        var_keyword = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
        positional = [
            p
            for p in parameters
            if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        ]
        var_positional = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)
        if "cancellation_token" in names or (var_keyword and len(positional) < 3):
            token: Literal["keyword", "positional", "none"] = "keyword"
        elif len(positional) >= 3 or var_positional:
            token = "positional"
        else:
            token = "none"
        plan = _CallPlan(
            # AutoGen passes arguments= by keyword: to ``(name, **kwargs)`` too
            arguments_by_keyword=("arguments" in names or (var_keyword and len(positional) < 2))
            and token != "positional",
            token=token,
            call_id="call_id" in names or var_keyword,
        )
    _PLANS[key] = plan
    return plan


def _call(
    method: Callable[..., Any],
    name: str,
    arguments: Mapping[str, Any] | None,
    token: CancellationToken | None,
    call_id: str | None,
) -> Any:
    plan = _call_plan(method)
    if plan.arguments_by_keyword and plan.call_id and plan.token == "keyword":  # AutoGen's signature
        return method(name, arguments=arguments, cancellation_token=token, call_id=call_id)
    args: list[Any] = [name]
    kwargs: dict[str, Any] = {}
    if plan.arguments_by_keyword:
        kwargs["arguments"] = arguments
    else:
        args.append(arguments)
    if plan.token == "keyword":
        kwargs["cancellation_token"] = token
    elif plan.token == "positional":
        args.append(token)
    if plan.call_id:
        kwargs["call_id"] = call_id
    return method(*args, **kwargs)


def class_method(value: object, name: str) -> Any:
    """``value``'s method ``name`` if its class defines one, else ``None``: not an attribute a
    ``MagicMock`` makes up (AutoGen streams a tool only for a workbench whose class streams)."""
    return getattr(value, name) if callable(getattr(type(value), name, None)) else None


async def invoke_tool(
    workbench: Any,
    name: str,
    arguments: Mapping[str, Any] | None,
    cancellation_token: CancellationToken | None = None,
    call_id: str | None = None,
) -> ToolResult:
    """Call ``workbench.call_tool`` with AutoGen's keywords (``arguments=``, ``cancellation_token=``,
    ``call_id=``, those its signature has) and read what it returns as a :class:`ToolResult`."""
    value = await _call(workbench.call_tool, name, arguments, cancellation_token, call_id)
    return as_tool_result(value, name)


async def invoke_tool_stream(
    workbench: Any,
    name: str,
    arguments: Mapping[str, Any] | None,
    cancellation_token: CancellationToken | None = None,
    call_id: str | None = None,
) -> AsyncIterator[BaseAgentEvent | BaseChatMessage | ToolResult]:
    """``workbench.call_tool_stream`` (or ``call_tool`` when it has none): nbagent's events as they
    come, then the :class:`ToolResult`. Other items are dropped: a stream tool's intermediate values
    from nbagent's :class:`StaticWorkbench` silently, any other with a warning, as AutoGen does."""
    quiet = isinstance(workbench, StaticWorkbench)
    stream = class_method(workbench, "call_tool_stream")
    if stream is None:
        yield await invoke_tool(workbench, name, arguments, cancellation_token, call_id)
        return
    items = _call(stream, name, arguments, cancellation_token, call_id)
    try:
        async for item in items:
            if isinstance(item, (BaseAgentEvent, BaseChatMessage)):
                yield item
            elif isinstance(item, ToolResult) or _looks_like_result(item):
                yield as_tool_result(item, name)
            elif not quiet:
                warnings.warn(f"Unexpected event type: {type(item)} in tool call streaming.", UserWarning, stacklevel=2)
    finally:
        aclose = getattr(items, "aclose", None)
        if aclose is not None:
            await aclose()


def _looks_like_result(item: Any) -> bool:
    return getattr(item, "type", None) == "ToolResult" or (
        hasattr(item, "is_error") and isinstance(getattr(item, "result", None), list)
    )


def is_workbench(value: Any) -> bool:
    """Whether ``value`` follows the Workbench protocol: callable ``list_tools`` and ``call_tool``."""
    return all(callable(getattr(value, name, None)) for name in WORKBENCH_METHODS)


class WorkbenchAdapter(Workbench):
    """A workbench that is not nbagent's (AutoGen's ``StaticWorkbench``, ``McpWorkbench``, any
    object with ``list_tools`` and ``call_tool``), seen through nbagent's :class:`Workbench`.

    Calls go to the wrapped object with AutoGen's keywords; its results are read as
    :class:`ToolResult`. ``close()`` leaves it running, as AutoGen's agent does: whoever started it
    (``async with``) stops it.
    """

    def __init__(self, workbench: Any) -> None:
        if not is_workbench(workbench):
            raise TypeError(f"not a workbench (no list_tools and call_tool): {type(workbench).__name__}")
        self.workbench = workbench

    async def list_tools(self) -> list[ToolSchema]:
        return [as_tool_schema(schema) for schema in await self.workbench.list_tools()]

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
        call_id: str | None = None,
    ) -> ToolResult:
        return await invoke_tool(self.workbench, name, arguments, cancellation_token, call_id)

    def streams(self, name: str) -> bool:
        return class_method(self.workbench, "call_tool_stream") is not None

    async def call_tool_stream(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
        call_id: str | None = None,
    ) -> AsyncIterator[BaseAgentEvent | BaseChatMessage | ToolResult]:
        async for item in invoke_tool_stream(self.workbench, name, arguments, cancellation_token, call_id):
            yield item

    async def start(self) -> None:
        start = getattr(self.workbench, "start", None)
        if callable(start):
            await start()

    async def stop(self) -> None:
        stop = getattr(self.workbench, "stop", None)
        if callable(stop):
            await stop()

    async def close(self) -> None:
        """Nothing: the agent does not own a workbench that is not nbagent's (AutoGen's rule)."""

    def dump_component(self, *, include_secrets: bool | None = None) -> ComponentModel:
        """The wrapped workbench's own config (AutoGen's, which loads as nbagent's counterpart)."""
        return dump_nested(self.workbench)

    def __repr__(self) -> str:
        return f"WorkbenchAdapter({self.workbench!r})"


def as_tool_schema(schema: Any) -> ToolSchema:
    """A listed tool as nbagent's :class:`ToolSchema` (AutoGen's is the same TypedDict)."""
    if isinstance(schema, Mapping) and isinstance(schema.get("name"), str):
        return schema if isinstance(schema, dict) else ToolSchema(**dict(schema))  # type: ignore[return-value,typeddict-item]
    raise TypeError(f"a workbench listed a tool that is not a schema with a name: {schema!r}")


def as_workbenches(workbench: Any) -> list[Workbench]:
    """The ``workbench`` argument of ``AssistantAgent``: one workbench or a sequence of them.

    nbagent's workbenches are used as they are; any other object with ``list_tools`` and
    ``call_tool`` (AutoGen's) is wrapped in a :class:`WorkbenchAdapter`.
    """
    if workbench is None:
        return []
    if is_workbench(workbench):
        return [_own(workbench)]
    if isinstance(workbench, Sequence) and not isinstance(workbench, (str, bytes)):
        found: list[Workbench] = []
        for index, item in enumerate(workbench):
            if not is_workbench(item):
                raise TypeError(
                    f"workbench[{index}] must be a Workbench (an object with list_tools and call_tool), "
                    f"got {type(item).__name__}: {item!r:.80}{_lacks(item)}"
                )
            found.append(_own(item))
        return found
    raise TypeError(
        "workbench must be a Workbench (an object with list_tools and call_tool) or a sequence of them, "
        f"got {type(workbench).__name__}: {workbench!r:.80}{_lacks(workbench)}"
    )


WORKBENCH_METHODS = ("list_tools", "call_tool")


def _lacks(value: object) -> str:
    """`` (it has no call_tool)`` for an object with some of the protocol's methods, else nothing."""
    missing = [name for name in WORKBENCH_METHODS if not callable(getattr(value, name, None))]
    return f" (it has no {', '.join(missing)})" if len(missing) < len(WORKBENCH_METHODS) else ""


def _own(workbench: Any) -> Workbench:
    """nbagent's workbench as it is; anything else (a ``MagicMock(spec=Workbench)`` too) by its protocol."""
    return workbench if issubclass(type(workbench), Workbench) else WorkbenchAdapter(workbench)


async def close_workbenches(workbenches: Iterable[Workbench]) -> None:
    """Close every workbench (what ``AssistantAgent.close()`` does); the first failure is raised after all."""
    failure: BaseException | None = None
    for workbench in workbenches:
        try:
            await workbench.close()
        except Exception as error:  # close the others first
            failure = failure or error
    if failure is not None:
        raise failure


def tool_not_found(name: str) -> ToolResult:
    """The error result of a call to a tool no workbench has."""
    return ToolResult(name, f"Error: tool '{name}' not found in any workbench", is_error=True)


def error_text(error: BaseException) -> str:
    """How a tool's exception is told to the model: ``Error: ValueError: the weather service is down``.

    Like the other error results (``Error: tool 'x' not found...``, bad arguments), it starts with
    ``Error:``, then names the exception, so that the model (and a reader) can tell its kind.
    """
    text = str(error)
    if isinstance(error, ToolArgumentsError):  # its text says what was wrong with the arguments
        return f"Error: {text}"
    name = type(error).__name__
    return f"Error: {name}: {text}" if text else f"Error: {name}"


class Handoff(BaseModel, Component):
    """A tool that hands the conversation to another agent.

    ``name`` defaults to ``transfer_to_<target>`` made into a valid tool name; ``message`` is the
    tool's result and the ``HandoffMessage``'s content.
    """

    component_type: ClassVar[str] = "handoff"
    component_config_schema: ClassVar[type[BaseModel]]  # the class itself: set below
    component_provider_override: ClassVar[str | None] = "nbagent.Handoff"
    component_aliases: ClassVar[tuple[str, ...]] = ("autogen_agentchat.base.Handoff",)

    target: str
    description: str = ""
    name: str = ""
    message: str = ""
    _schema: ToolSchema = PrivateAttr()

    def _to_config(self) -> Handoff:
        return self

    @classmethod
    def _from_config(cls, config: Handoff) -> Self:
        return cls(**config.model_dump())

    def model_post_init(self, __context: Any) -> None:
        if not self.name:
            self.name = "transfer_to_" + re.sub(r"[^a-z0-9_]", "_", self.target.lower())
        if not self.name.isidentifier() or not _TOOL_NAME.match(self.name):
            raise ValueError(f"Handoff name must be a valid identifier: {self.name!r}")
        if not self.description:
            self.description = f"Handoff to {self.target}."
        if not self.message:
            self.message = f"Transferred to {self.target}, adopting the role of {self.target} immediately."
        self._schema = ToolSchema(  # AutoGen's handoff tool: strict, and closed to other arguments
            name=self.name,
            description=self.description,
            parameters={"type": "object", "properties": {}, "required": [], "additionalProperties": False},
            strict=True,
        )

    @property  # public API ``Handoff.schema``: shadows pydantic's deprecated ``BaseModel.schema()`` on purpose
    def schema(self) -> ToolSchema:  # type: ignore[override]
        """The tool the model is offered for this handoff (built once)."""
        return self._schema


# A handoff's config is its four fields, as AutoGen's agent config holds them.
Handoff.component_config_schema = Handoff
