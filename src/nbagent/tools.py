"""Tools the model can call, the workbench that holds them, and handoffs.

A :class:`FunctionTool` wraps any Python callable, sync or async (or an async generator, whose
events stream while it runs). Its JSON schema comes from the type hints and the docstring and is
built once, when the tool is made; arguments are validated against it before the call.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, create_model

from .cancellation import CancellationToken
from .messages import BaseAgentEvent, BaseChatMessage

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ToolSchema(TypedDict, total=False):
    """What the model is told about a tool (the OpenAI function format)."""

    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool


class ToolArgumentsError(ValueError):
    """Tool arguments that are not a JSON object, or that do not fit the tool's schema."""


@dataclass(frozen=True)
class ToolResult:
    """What calling one tool gave, as the text the model will read."""

    name: str
    content: str
    is_error: bool = False


def tool_output_text(value: Any) -> str:
    """How a tool's return value is shown to the model: text as is, objects as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def parse_arguments(tool_name: str, raw: str) -> dict[str, Any]:
    """The model's argument string as a dict, or a :class:`ToolArgumentsError` saying why not."""
    try:
        arguments = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as error:
        raise ToolArgumentsError(f"arguments for tool '{tool_name}' are not valid JSON: {error}") from None
    if not isinstance(arguments, dict):
        raise ToolArgumentsError(
            f"arguments for tool '{tool_name}' must be a JSON object, got {type(arguments).__name__}"
        )
    return arguments


class BaseTool(ABC):
    """A tool: a name, a description, a cached schema, and a way to run it on JSON arguments."""

    name: str
    description: str
    schema: ToolSchema

    @abstractmethod
    async def run_json(self, args: Mapping[str, Any], cancellation_token: CancellationToken | None = None) -> Any: ...

    def return_value_as_string(self, value: Any) -> str:
        return tool_output_text(value)

    @property
    def streams(self) -> bool:
        """True when the tool yields events while it runs."""
        return False

    async def run_json_stream(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken | None = None
    ) -> AsyncIterator[Any]:
        """Events while the tool runs, then its return value last; by default just the value."""
        yield await self.run_json(args, cancellation_token)


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


class FunctionTool(BaseTool):
    """A tool made from a Python function.

    Args:
        func: sync or async function (or async generator, to stream events); a parameter named
            ``cancellation_token`` receives the run's token.
        description: what the model is told; defaults to the docstring.
        name: defaults to the function's name.
        strict: ask the model for arguments that follow the schema exactly.
        timeout: seconds after which the call ends with an error result.
    """

    def __init__(
        self,
        func: Callable[..., Any],
        description: str | None = None,
        name: str | None = None,
        *,
        strict: bool = False,
        timeout: float | None = None,
    ) -> None:
        if not callable(func):
            raise TypeError(f"FunctionTool needs a callable, got {type(func).__name__}")
        self._func = func
        self.name = name if name else getattr(func, "__name__", type(func).__name__)
        if not _TOOL_NAME.match(self.name):
            raise ValueError(f"tool name {self.name!r} must match {_TOOL_NAME.pattern}")
        doc = inspect.getdoc(func) or ""
        self.description = description if description is not None else _docstring_summary(doc)
        self.timeout = timeout
        self.strict = strict
        self._is_async = inspect.iscoroutinefunction(func)
        self._is_stream = inspect.isasyncgenfunction(func)
        signature = _signature(func)
        self._takes_token = "cancellation_token" in signature.parameters
        self._args_model = self._build_args_model(signature, _docstring_params(doc))
        parameters = self._args_model.model_json_schema()
        parameters.pop("title", None)
        for prop in parameters.get("properties", {}).values():
            prop.pop("title", None)
        if strict:
            parameters["additionalProperties"] = False
        self.schema = ToolSchema(name=self.name, description=self.description, parameters=parameters, strict=strict)

    def _build_args_model(self, signature: inspect.Signature, docs: dict[str, str]) -> type[BaseModel]:
        fields: dict[str, Any] = {}
        for param in signature.parameters.values():
            if param.name in ("self", "cancellation_token") or param.kind in (
                inspect.Parameter.VAR_POSITIONAL,
                inspect.Parameter.VAR_KEYWORD,
            ):
                continue
            annotation = Any if param.annotation is inspect.Parameter.empty else param.annotation
            description = docs.get(param.name)
            if get_origin(annotation) is Annotated:
                base, *extra = get_args(annotation)
                text = next((item for item in extra if isinstance(item, str)), None)
                annotation, description = base, text or description
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[param.name] = (annotation, Field(default, description=description))
        config = ConfigDict(extra="forbid" if self.strict else "ignore", arbitrary_types_allowed=True)
        return create_model(f"{self.name}_args", __config__=config, **fields)

    @property
    def streams(self) -> bool:
        return self._is_stream

    def _kwargs(self, args: Mapping[str, Any], cancellation_token: CancellationToken | None) -> dict[str, Any]:
        try:
            model = self._args_model.model_validate(dict(args))
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in item['loc']) or 'arguments'}: {item['msg']}" for item in error.errors()
            )
            raise ToolArgumentsError(f"arguments for tool '{self.name}' do not match its schema: {problems}") from None
        kwargs = {name: getattr(model, name) for name in type(model).model_fields}
        if self._takes_token:
            kwargs["cancellation_token"] = cancellation_token or CancellationToken()
        return kwargs

    async def _call(self, kwargs: dict[str, Any]) -> Any:
        if self._is_async:
            return await self._func(**kwargs)
        return await asyncio.to_thread(self._func, **kwargs)

    async def run_json(self, args: Mapping[str, Any], cancellation_token: CancellationToken | None = None) -> Any:
        if self._is_stream:
            result = None
            async for item in self.run_json_stream(args, cancellation_token):
                result = item
            return result
        kwargs = self._kwargs(args, cancellation_token)
        if self.timeout is None:
            return await self._call(kwargs)
        try:
            return await asyncio.wait_for(self._call(kwargs), self.timeout)
        except TimeoutError:
            raise TimeoutError(f"tool '{self.name}' timed out after {self.timeout:g} s") from None

    async def run_json_stream(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken | None = None
    ) -> AsyncIterator[Any]:
        if not self._is_stream:
            yield await self.run_json(args, cancellation_token)
            return
        kwargs = self._kwargs(args, cancellation_token)
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


def as_tool(tool: BaseTool | Callable[..., Any]) -> BaseTool:
    """A tool as is; a plain callable wrapped in a :class:`FunctionTool`."""
    if isinstance(tool, BaseTool):
        return tool
    if callable(tool):
        return FunctionTool(tool)
    raise ValueError(f"Unsupported tool type: {type(tool)}")


class Workbench(ABC):
    """A set of tools the agent can list and call."""

    @abstractmethod
    async def list_tools(self) -> list[ToolSchema]: ...

    @abstractmethod
    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], cancellation_token: CancellationToken | None = None
    ) -> ToolResult: ...

    async def call_tool_stream(
        self, name: str, arguments: Mapping[str, Any], cancellation_token: CancellationToken | None = None
    ) -> AsyncIterator[BaseAgentEvent | BaseChatMessage | ToolResult]:
        """Events a tool streams while it runs, then its :class:`ToolResult`."""
        yield await self.call_tool(name, arguments, cancellation_token)

    def streams(self, name: str) -> bool:
        """True when calling ``name`` may stream events."""
        return False

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class StaticWorkbench(Workbench):
    """A fixed list of tools, with their schemas listed once."""

    def __init__(self, tools: Sequence[BaseTool | Callable[..., Any]]) -> None:
        self._tools: dict[str, BaseTool] = {}
        for tool in map(as_tool, tools):
            if tool.name in self._tools:
                raise ValueError(f"Tool names must be unique: {[t.name for t in map(as_tool, tools)]}")
            self._tools[tool.name] = tool
        self._schemas = [tool.schema for tool in self._tools.values()]

    @property
    def tools(self) -> list[BaseTool]:
        return list(self._tools.values())

    async def list_tools(self) -> list[ToolSchema]:
        return self._schemas

    def streams(self, name: str) -> bool:
        tool = self._tools.get(name)
        return tool is not None and tool.streams

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], cancellation_token: CancellationToken | None = None
    ) -> ToolResult:
        result: ToolResult | None = None
        async for item in self.call_tool_stream(name, arguments, cancellation_token):
            result = item  # type: ignore[assignment]
        assert isinstance(result, ToolResult)
        return result

    async def call_tool_stream(
        self, name: str, arguments: Mapping[str, Any], cancellation_token: CancellationToken | None = None
    ) -> AsyncIterator[BaseAgentEvent | BaseChatMessage | ToolResult]:
        tool = self._tools.get(name)
        if tool is None:
            yield tool_not_found(name)
            return
        try:
            value: Any = None
            async for item in tool.run_json_stream(arguments, cancellation_token):
                if isinstance(item, (BaseAgentEvent, BaseChatMessage)):
                    yield item
                else:
                    value = item
            text = tool.return_value_as_string(value)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a tool's failure (or its value's) becomes an error result the model can read
            yield ToolResult(name, error_text(error), is_error=True)
            return
        yield ToolResult(name, text)


def tool_not_found(name: str) -> ToolResult:
    """The error result of a call to a tool no workbench has."""
    return ToolResult(name, f"Error: tool '{name}' not found in any workbench", is_error=True)


def error_text(error: BaseException) -> str:
    """How a tool's exception is told to the model."""
    text = str(error)
    if isinstance(error, ToolArgumentsError) or isinstance(error, TimeoutError):
        return f"Error: {text}"
    return text or type(error).__name__


class Handoff(BaseModel):
    """A tool that hands the conversation to another agent.

    ``name`` defaults to ``transfer_to_<target>`` made into a valid tool name; ``message`` is the
    tool's result and the ``HandoffMessage``'s content.
    """

    target: str
    description: str = ""
    name: str = ""
    message: str = ""
    _schema: ToolSchema = PrivateAttr()

    def model_post_init(self, __context: Any) -> None:
        if not self.name:
            self.name = "transfer_to_" + re.sub(r"[^a-z0-9_]", "_", self.target.lower())
        if not self.name.isidentifier() or not _TOOL_NAME.match(self.name):
            raise ValueError(f"Handoff name must be a valid identifier: {self.name!r}")
        if not self.description:
            self.description = f"Handoff to {self.target}."
        if not self.message:
            self.message = f"Transferred to {self.target}, adopting the role of {self.target} immediately."
        self._schema = ToolSchema(
            name=self.name,
            description=self.description,
            parameters={"type": "object", "properties": {}, "required": []},
            strict=False,
        )

    @property  # public API ``Handoff.schema``: shadows pydantic's deprecated ``BaseModel.schema()`` on purpose
    def schema(self) -> ToolSchema:  # type: ignore[override]
        """The tool the model is offered for this handoff (built once)."""
        return self._schema
