"""MCP servers as workbenches: :class:`McpWorkbench` on the official ``mcp`` SDK (version 2).

``McpWorkbench(server_params)`` connects to one MCP server, over stdio (:class:`StdioServerParams`:
a command the workbench starts), SSE (:class:`SseServerParams`) or streamable HTTP
(:class:`StreamableHttpServerParams`), and gives the agent the server's tools. The names and fields
are AutoGen's (``autogen_ext.tools.mcp``), so its users' code reads the same.

The connection is held open by one background task, which enters and leaves the SDK's client (its
anyio task groups must be left by the task that entered them); calls are made from the caller's
task, so cancelling a run cancels the request where it waits (the SDK tells the server with
``notifications/cancelled``). The workbench starts on first use or with ``start()`` / ``async
with``, and stops with ``stop()``, at the end of the ``async with`` block, when the agent holding it
is closed (``AssistantAgent.close()``) or when it is garbage-collected. A connection that died (the
server exited) or that belongs to an event loop that is gone is opened again on next use.

This module does not import the SDK until a workbench connects: ``import nbagent`` works without
the ``mcp`` extra (``pip install 'nbagent-loop[mcp]'``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import sys
import warnings
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Self, TextIO

from pydantic import BaseModel, Field, TypeAdapter

from .cancellation import CancellationToken, guarded
from .components import ComponentModel, command_from_config, dump_nested, include_secrets, load_nested
from .messages import Image
from .redact import header_secrets, hold_secrets, is_secret_name, mask, redact_args
from .tools import BaseTool, ImageResultContent, TextResultContent, ToolOverride, ToolResult, ToolSchema, Workbench, ran

__all__ = [
    "McpServerParams",
    "McpToolAdapter",
    "McpWorkbench",
    "SseServerParams",
    "StdioServerParams",
    "StreamableHttpServerParams",
    "ToolOverride",
    "mcp_server_tools",
]

_MAX_PAGES = 100  # tools/list pages read at most (a server whose cursor never ends is cut there)
_CONNECTION_CLOSED = -32000  # the SDK's MCPError code for a connection that closed (mcp_types.CONNECTION_CLOSED)


class StdioServerParams(BaseModel):
    """Start an MCP server as a subprocess and talk to it over its stdin and stdout.

    The fields are those of the SDK's ``StdioServerParameters`` plus AutoGen's
    ``read_timeout_seconds``: how long one request (a tool call included) may take.
    Only run commands you trust: the server runs with your rights.
    """

    type: Literal["StdioServerParams"] = "StdioServerParams"
    command: str
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] | None = None
    cwd: str | Path | None = None
    encoding: str = "utf-8"
    encoding_error_handler: Literal["strict", "ignore", "replace"] = "strict"
    read_timeout_seconds: float = 5


class SseServerParams(BaseModel):
    """Connect to an MCP server over SSE (the older HTTP transport)."""

    type: Literal["SseServerParams"] = "SseServerParams"
    url: str
    headers: dict[str, Any] | None = None
    timeout: float = 5
    sse_read_timeout: float = 60 * 5


class StreamableHttpServerParams(BaseModel):
    """Connect to an MCP server over streamable HTTP."""

    type: Literal["StreamableHttpServerParams"] = "StreamableHttpServerParams"
    url: str
    headers: dict[str, Any] | None = None
    timeout: float = 30.0
    sse_read_timeout: float = 300.0
    terminate_on_close: bool = True


McpServerParams = Annotated[
    StdioServerParams | SseServerParams | StreamableHttpServerParams, Field(discriminator="type")
]
_params_adapter: TypeAdapter[StdioServerParams | SseServerParams | StreamableHttpServerParams] = TypeAdapter(
    McpServerParams
)


def _as_params(value: Any) -> StdioServerParams | SseServerParams | StreamableHttpServerParams:
    if isinstance(value, (StdioServerParams, SseServerParams, StreamableHttpServerParams)):
        return value
    if isinstance(value, Mapping) or hasattr(value, "model_dump"):
        data = dict(value) if isinstance(value, Mapping) else value.model_dump()
        return _params_adapter.validate_python(data)  # AutoGen's params (same fields) or a dumped config
    raise TypeError(
        "server_params must be StdioServerParams, SseServerParams or StreamableHttpServerParams, "
        f"got {type(value).__name__}"
    )


class _Connection:
    """One open connection: the task that holds it, the SDK client once ready, the loop it lives in."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.ready: asyncio.Future[Any] = loop.create_future()
        self.stop = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.client: Any = None
        self.failure: BaseException | None = None

    def usable(self) -> bool:
        """Open (or opening) in the running loop."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            return False
        return running is self.loop and self.task is not None and not self.task.done()


class McpWorkbenchConfig(BaseModel):
    """AutoGen's ``McpWorkbench`` config: the server's parameters, the overrides, the model client."""

    server_params: McpServerParams
    tool_overrides: dict[str, ToolOverride] = Field(default_factory=dict)
    model_client: ComponentModel | dict[str, Any] | None = None


def _secret_values(params: StdioServerParams | SseServerParams | StreamableHttpServerParams) -> list[str]:
    """The values of the secret-named environment variables or headers of a server's parameters."""
    values = params.env if isinstance(params, StdioServerParams) else params.headers
    return [
        secret
        for name, value in (values or {}).items()
        if is_secret_name(str(name)) and isinstance(value, str)
        for secret in header_secrets(value)
    ]


def _without_secrets(values: dict[str, Any] | None) -> dict[str, Any] | None:
    """Environment variables or headers named like a secret left out (``include_secrets=True`` keeps them)."""
    if values is None or include_secrets():
        return values
    return {name: value for name, value in values.items() if not is_secret_name(name)}


class McpWorkbench(Workbench):
    """The tools of one MCP server, listed and called like any workbench's.

    Args:
        server_params: how to reach the server (:class:`StdioServerParams`,
            :class:`SseServerParams` or :class:`StreamableHttpServerParams`; a dict of one, with its
            ``type``, is read as such).
        tool_overrides: per server tool name, a :class:`~nbagent.tools.ToolOverride` giving it
            another name and/or description for the model.
        model_client: accepted for AutoGen's signature; sampling (the server asking the client's
            model to write) is not supported yet, so the server is not offered it.

    A tool's text and image content become the parts of its :class:`~nbagent.tools.ToolResult`; a
    tool that fails (``isError``), an unknown tool and a request that fails or times out give an
    error result. Cancelling the token cancels the request (``CancelledError`` propagates).

    Example::

        params = StdioServerParams(command="python", args=["-m", "mcp_server_time", "--local-timezone", "UTC"])
        async with McpWorkbench(params) as time_server:
            agent = AssistantAgent("clock", model_client, workbench=time_server)
            await agent.run(task="What time is it in Tokyo?")
    """

    def __init__(
        self,
        server_params: StdioServerParams | SseServerParams | StreamableHttpServerParams,
        tool_overrides: Mapping[str, ToolOverride | Mapping[str, Any]] | None = None,
        model_client: Any = None,
    ) -> None:
        self._server_params = _as_params(server_params)
        hold_secrets(_secret_values(self._server_params))  # masked in every artefact (an error echoing one)
        self._tool_overrides = {
            name: override if isinstance(override, ToolOverride) else ToolOverride.model_validate(override)
            for name, override in (tool_overrides or {}).items()
        }
        self._override_name_to_original: dict[str, str] = {}
        for original, override in self._tool_overrides.items():
            if override.name and override.name != original:
                if override.name in self._override_name_to_original:
                    raise ValueError(
                        f"Tool override name '{override.name}' is used by multiple tools: "
                        f"'{self._override_name_to_original[override.name]}' and '{original}'. "
                        "Override names must be unique."
                    )
                self._override_name_to_original[override.name] = original
        self._model_client = model_client
        if model_client is not None:
            warnings.warn(
                "McpWorkbench: sampling with model_client is not supported yet; the server is not offered it",
                UserWarning,
                stacklevel=2,
            )
        self._connection: _Connection | None = None

    component_config_schema = McpWorkbenchConfig
    component_provider_override = "nbagent.McpWorkbench"
    component_aliases = ("autogen_ext.tools.mcp.McpWorkbench",)

    def _to_config(self) -> McpWorkbenchConfig:
        params = self._server_params
        if isinstance(params, StdioServerParams):
            update: dict[str, Any] = {"env": _without_secrets(params.env)}
            if not include_secrets():  # --api-key sk-...: the option's value masked
                update["args"] = redact_args(params.args)
            params = params.model_copy(update=update)
        else:
            params = params.model_copy(update={"headers": _without_secrets(params.headers)})
        return McpWorkbenchConfig(
            server_params=params,
            tool_overrides=self._tool_overrides,
            model_client=None if self._model_client is None else dump_nested(self._model_client),
        )

    @classmethod
    def _from_config(cls, config: McpWorkbenchConfig) -> Self:
        params = config.server_params
        if isinstance(params, StdioServerParams):  # refused unless load_component(..., allow_commands=True)
            command_from_config("McpWorkbench", shlex.join(redact_args([params.command, *params.args])))
        client = None if config.model_client is None else load_nested(config.model_client, object)
        return cls(config.server_params, tool_overrides=config.tool_overrides, model_client=client)

    # ------------------------------------------------------------------ properties

    @property
    def server_params(self) -> StdioServerParams | SseServerParams | StreamableHttpServerParams:
        return self._server_params

    @property
    def tool_overrides(self) -> dict[str, ToolOverride]:
        return dict(self._tool_overrides)

    @property
    def is_started(self) -> bool:
        """Whether a connection is open (or opening) in the running event loop."""
        return self._connection is not None and self._connection.usable()

    @property
    def initialize_result(self) -> Any:
        """What the server said when connecting (the SDK's ``InitializeResult``, or its
        ``DiscoverResult`` on a 2026 protocol connection); ``None`` when not connected."""
        connection = self._connection
        if connection is None or connection.client is None:
            return None
        session = connection.client.session
        return session.initialize_result or session.discover_result

    # ------------------------------------------------------------------ start and stop

    async def start(self) -> None:
        """Connect (start the server, for stdio). Warns if already started, as AutoGen does."""
        connection = self._connection
        if connection is not None and connection.usable():
            if connection.ready.done():
                warnings.warn("McpWorkbench is already started. No need to start again.", UserWarning, stacklevel=2)
                return
            await asyncio.shield(connection.ready)
            return
        await self._connect()

    async def stop(self) -> None:
        """Close the connection (a stdio server is stopped). Does nothing when not started."""
        connection, self._connection = self._connection, None
        if connection is None or connection.task is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not connection.loop:  # opened in a loop that is not this one (gone, or another thread's)
            if not connection.loop.is_closed():
                connection.loop.call_soon_threadsafe(connection.stop.set)
            return
        if not connection.ready.done():
            connection.task.cancel()  # still connecting: stop that
        connection.stop.set()
        await asyncio.wait([connection.task])

    async def reset(self) -> None:
        """Nothing to reset (AutoGen's McpWorkbench keeps no state either)."""
        return None

    async def save_state(self) -> Mapping[str, Any]:
        return {"type": "McpWorkBenchState"}  # AutoGen's state, spelling included

    async def load_state(self, state: Mapping[str, Any]) -> None:
        return None

    async def __aenter__(self) -> McpWorkbench:
        await self.start()
        return self

    def __del__(self) -> None:
        connection = getattr(self, "_connection", None)
        if connection is not None and connection.task is not None and not connection.task.done():
            with contextlib.suppress(RuntimeError):  # the loop is closed: its tasks are gone already
                connection.loop.call_soon_threadsafe(connection.stop.set)

    async def _connect(self) -> Any:
        loop = asyncio.get_running_loop()
        connection = _Connection(loop)
        self._connection = connection
        connection.task = loop.create_task(_hold(connection, self._server_params), name=f"McpWorkbench {self}")
        try:
            return await asyncio.shield(connection.ready)
        except BaseException:
            if not connection.ready.done():
                connection.task.cancel()  # the caller was cancelled while connecting
            if self._connection is connection:
                self._connection = None
            raise

    async def _client(self) -> Any:
        """The SDK client of an open connection, connecting first when there is none."""
        connection = self._connection
        if connection is None or not connection.usable():
            return await self._connect()
        if connection.client is not None:
            return connection.client
        return await asyncio.shield(connection.ready)

    # ------------------------------------------------------------------ tools

    async def list_tools(self) -> list[ToolSchema]:
        """The server's tools as tool schemas (overrides applied). A connection found lost (the server
        exited) is opened again and the listing asked once more."""
        for attempt in (1, 2):
            client = await self._client()
            try:
                tools = await _list_all_tools(client)
            except Exception as error:
                if attempt == 2 or not _connection_lost(error):
                    raise
                await self._forget(client)
            else:
                return [self._schema(tool) for tool in tools]
        raise AssertionError("unreachable")

    def _schema(self, tool: Any) -> ToolSchema:
        name: str = tool.name
        description: str = tool.description or ""
        override = self._tool_overrides.get(name)
        if override is not None:
            name = override.name or name
            description = override.description if override.description is not None else description
        given = dict(tool.input_schema or {})
        parameters = {
            **given,
            "type": "object",
            "properties": given.get("properties", {}),
            "required": given.get("required", []),
            "additionalProperties": given.get("additionalProperties", False),
        }
        return ToolSchema(name=name, description=description, parameters=parameters)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
        call_id: str | None = None,
    ) -> ToolResult:
        """Call the server's tool ``name`` (an override name is mapped back to the server's)."""
        client = await guarded(self._client(), cancellation_token)
        original = self._override_name_to_original.get(name, name)
        try:
            result = await guarded(client.call_tool(original, dict(arguments or {})), cancellation_token)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # unknown tool, bad request, timeout, lost connection: the model reads why
            if _connection_lost(error):  # the next call connects again (this one is not repeated: it may have acted)
                await self._forget(client)
            return ToolResult(name, _error_text(error), is_error=True)
        return call_result(name, result)

    async def _forget(self, client: Any) -> None:
        """Close the connection of ``client`` if it is still the current one (it was found lost)."""
        connection = self._connection
        if connection is not None and connection.client is client:
            await self.stop()

    # ------------------------------------------------------------------ the server's other features (the SDK's results)

    async def list_prompts(self) -> Any:
        return await (await self._client()).list_prompts()

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> Any:
        return await (await self._client()).get_prompt(name, arguments)

    async def list_resources(self) -> Any:
        return await (await self._client()).list_resources()

    async def list_resource_templates(self) -> Any:
        return await (await self._client()).list_resource_templates()

    async def read_resource(self, uri: str) -> Any:
        return await (await self._client()).read_resource(uri)

    def __repr__(self) -> str:
        params = self._server_params
        if isinstance(params, StdioServerParams):
            where = "stdio: " + " ".join(redact_args([params.command, *params.args]))  # --api-key <masked>
        else:
            where = f"{'sse' if isinstance(params, SseServerParams) else 'http'}: {params.url}"
        return f"McpWorkbench({mask(where)})"


def call_result(name: str, result: Any) -> ToolResult:
    """An MCP ``CallToolResult`` as a :class:`ToolResult`: text and image content as parts; other
    content (embedded resources, resource links, audio) as its JSON text; structured content alone
    as JSON; ``isError`` as ``is_error``."""
    parts: list[TextResultContent | ImageResultContent] = []
    for block in result.content:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(TextResultContent(content=block.text))
        elif kind == "image":
            parts.append(ImageResultContent(content=Image(data=block.data, mime_type=block.mime_type)))
        else:
            parts.append(TextResultContent(content=block.model_dump_json(by_alias=True, exclude_none=True)))
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(TextResultContent(content=json.dumps(structured, ensure_ascii=False, default=str)))
    return ToolResult(name, result=parts, is_error=bool(result.is_error))


def _error_text(error: BaseException) -> str:
    """An exception (a group's leaves one a line) as the text of an error result, secrets masked."""
    if isinstance(error, BaseExceptionGroup):
        return "\n".join(_error_text(inner) for inner in error.exceptions)
    return mask(str(error) or type(error).__name__)


async def _list_all_tools(client: Any) -> list[Any]:
    tools: list[Any] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _connection_lost(error: BaseException) -> bool:
    """Whether ``error`` says the connection is gone (the server exited, the stream closed)."""
    error = _unwrap(error)
    if type(error).__name__ in ("ClosedResourceError", "BrokenResourceError", "EndOfStream"):
        return True
    return getattr(error, "code", None) == _CONNECTION_CLOSED and "closed" in str(error).lower()


def _unwrap(error: BaseException) -> BaseException:
    """The one error inside nested one-error groups (anyio's task groups wrap what they raise)."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


async def _hold(
    connection: _Connection, params: StdioServerParams | SseServerParams | StreamableHttpServerParams
) -> None:
    """The connection's task: open the SDK client, hand it over, keep it open until told to stop.

    It holds the connection and the params, not the workbench, so that a dropped workbench can be
    collected (its ``__del__`` tells this task to stop).
    """
    try:
        async with _open_client(params) as client:
            connection.client = client
            if not connection.ready.done():
                connection.ready.set_result(client)
            await connection.stop.wait()
    except asyncio.CancelledError:
        if not connection.ready.done():
            connection.ready.cancel()
        raise
    except BaseException as error:  # kept for the caller (connecting) or on the connection (later)
        failure = _unwrap(error)
        if not connection.ready.done():
            connection.ready.set_exception(failure)
        connection.failure = failure
    finally:
        connection.client = None


@contextlib.asynccontextmanager
async def _open_client(
    params: StdioServerParams | SseServerParams | StreamableHttpServerParams,
) -> AsyncIterator[Any]:
    try:
        from mcp import Client
    except ImportError as error:
        raise ImportError("McpWorkbench needs the mcp package (version 2): pip install 'nbagent-loop[mcp]'") from error
    async with contextlib.AsyncExitStack() as stack:
        transport: Any
        if isinstance(params, StdioServerParams):
            from mcp.client.stdio import StdioServerParameters, stdio_client

            server = StdioServerParameters(
                command=params.command,
                args=params.args,
                env=params.env,
                cwd=params.cwd,
                encoding=params.encoding,
                encoding_error_handler=params.encoding_error_handler,
            )
            transport = stdio_client(server, errlog=_errlog())
            timeout = params.read_timeout_seconds
        elif isinstance(params, SseServerParams):
            from mcp.client.sse import sse_client

            transport = sse_client(
                params.url, headers=params.headers, timeout=params.timeout, sse_read_timeout=params.sse_read_timeout
            )
            timeout = params.sse_read_timeout
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            headers = {str(key): str(value) for key, value in (params.headers or {}).items()}
            http = httpx2.AsyncClient(
                headers=headers, timeout=httpx2.Timeout(params.timeout, read=params.sse_read_timeout)
            )
            await stack.enter_async_context(http)
            transport = streamable_http_client(
                params.url, http_client=http, terminate_on_close=params.terminate_on_close
            )
            timeout = params.sse_read_timeout
        client = await stack.enter_async_context(Client(transport, read_timeout_seconds=timeout))
        yield client


def _errlog() -> TextIO:
    """Where a stdio server's stderr goes: this process's stderr when it is a real file (in a
    notebook, the kernel's), else the original one."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (OSError, ValueError, AttributeError):
            continue
    return open(os.devnull, "w")  # kept open as long as the process


# --------------------------------------------------------------------------- mcp_server_tools


class McpToolAdapter(BaseTool):
    """One tool of an MCP server as an agent's tool (what :func:`mcp_server_tools` gives): called
    through the :class:`McpWorkbench` it shares with the server's other tools (``workbench``).

    Its return value is the result's text; a result the server marks as an error raises, so the agent
    gets an error result, as for any tool that fails."""

    component_provider_override = "nbagent.mcp.McpToolAdapter"

    def __init__(self, workbench: McpWorkbench, schema: ToolSchema) -> None:
        self.workbench = workbench
        self.schema = schema
        self.name = schema["name"]
        self.description = schema.get("description", "")

    async def run(self, args: BaseModel, cancellation_token: CancellationToken) -> Any:
        """The tool called with the validated arguments (AutoGen's ``run``)."""
        return await self.run_json(args.model_dump(exclude_unset=True), cancellation_token)

    async def run_json(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken | None = None, call_id: str | None = None
    ) -> Any:
        result = await self.workbench.call_tool(self.name, args, cancellation_token, call_id)
        if result.is_error:
            raise RuntimeError(result.to_text())
        return ran(self, args, result.to_text())

    def __repr__(self) -> str:
        return f"McpToolAdapter({self.name!r}, {self.workbench!r})"


def _mcp_tool_schema(tool: Any) -> ToolSchema:
    """An MCP tool (the SDK's ``Tool``: ``name``, ``description``, ``inputSchema``; or its dict) as a
    tool schema, as :class:`McpWorkbench` lists it."""
    get = tool.get if isinstance(tool, Mapping) else lambda key, default=None: getattr(tool, key, default)
    name = get("name")
    if not isinstance(name, str) or not name:
        raise TypeError(f"an MCP tool must have a name, got {type(tool).__name__}")
    given = get("inputSchema") or get("input_schema") or get("parameters") or {}
    given = dict(given) if isinstance(given, Mapping) else {}
    parameters = {
        **given,
        "type": "object",
        "properties": given.get("properties", {}),
        "required": given.get("required", []),
        "additionalProperties": given.get("additionalProperties", False),
    }
    return ToolSchema(name=name, description=str(get("description") or ""), parameters=parameters)


class _TransportAdapterConfig(BaseModel):
    """AutoGen's config of a per-transport MCP tool adapter: the server and the MCP tool (its JSON), in
    AutoGen's order (each transport's config narrows ``server_params``)."""

    server_params: Any
    tool: dict[str, Any]


class StdioMcpToolAdapterConfig(_TransportAdapterConfig):
    server_params: StdioServerParams


class SseMcpToolAdapterConfig(_TransportAdapterConfig):
    server_params: SseServerParams


class StreamableHttpMcpToolAdapterConfig(_TransportAdapterConfig):
    server_params: StreamableHttpServerParams


class _TransportAdapter(McpToolAdapter):
    """AutoGen's per-transport MCP tool adapter: ``Adapter(server_params, tool)`` for one tool of the
    server (an MCP ``Tool`` as the SDK lists it, or its dict), or ``await
    Adapter.from_server_params(server_params, tool_name)``. Its calls go through an
    :class:`McpWorkbench` of its own (or the one ``workbench=`` shares, as :func:`mcp_server_tools`
    does), connected on the first call and kept open."""

    _params_type: type[BaseModel]
    component_config_schema: ClassVar[type[BaseModel]]  # each transport's config

    def __init__(
        self,
        server_params: StdioServerParams | SseServerParams | StreamableHttpServerParams,
        tool: Any,
        session: Any = None,
        *,
        workbench: McpWorkbench | None = None,
    ) -> None:
        where = type(self).__name__
        if session is not None:
            raise TypeError(f"{where}(session=...) is not supported: its calls go through an McpWorkbench")
        if not isinstance(server_params, self._params_type):
            expected = f"a {self._params_type.__name__}"
            raise TypeError(f"{where}: server_params must be {expected}, got {type(server_params).__name__}")
        if workbench is not None and workbench.server_params is not server_params:
            raise ValueError(f"{where}: workbench= must be a workbench of these server_params")
        self.server_params = server_params
        self.tool = tool
        super().__init__(workbench or McpWorkbench(server_params), _mcp_tool_schema(tool))

    @classmethod
    async def from_server_params(
        cls, server_params: StdioServerParams | SseServerParams | StreamableHttpServerParams, tool_name: str
    ) -> Self:
        """The adapter of the server's tool ``tool_name`` (the server is asked for its tools)."""
        workbench = McpWorkbench(server_params)
        schemas = await workbench.list_tools()
        schema = next((item for item in schemas if item["name"] == tool_name), None)
        if schema is None:
            names = [item["name"] for item in schemas]
            raise ValueError(f"Tool {tool_name} not found, available tools: {', '.join(names)}")
        tool = {"name": schema["name"], "description": schema.get("description", ""), **_input_schema(schema)}
        return cls(server_params, tool, workbench=workbench)

    def _to_config(self) -> _TransportAdapterConfig:
        params = self.workbench.dump_component().config["server_params"]  # its secrets left out as the workbench's
        schema = self.schema
        tool = {"name": schema["name"], "description": schema.get("description", ""), **_input_schema(schema)}
        return self.component_config_schema.model_validate({"server_params": params, "tool": tool})  # type: ignore[return-value]

    @classmethod
    def _from_config(cls, config: _TransportAdapterConfig) -> Self:
        params = getattr(config, "server_params")  # noqa: B009 (each subclass's config has its own type)
        if isinstance(params, StdioServerParams):  # refused unless load_component(..., allow_commands=True)
            command_from_config(cls.__name__, shlex.join(redact_args([params.command, *params.args])))
        return cls(params, config.tool)


def _input_schema(schema: ToolSchema) -> dict[str, Any]:
    return {"inputSchema": dict(schema.get("parameters") or {"type": "object", "properties": {}})}


class StdioMcpToolAdapter(_TransportAdapter):
    """One tool of an MCP server run as a program (stdio), as AutoGen's ``StdioMcpToolAdapter``."""

    _params_type = StdioServerParams
    component_config_schema = StdioMcpToolAdapterConfig
    component_provider_override = "nbagent.StdioMcpToolAdapter"
    component_aliases = ("autogen_ext.tools.mcp.StdioMcpToolAdapter",)


class SseMcpToolAdapter(_TransportAdapter):
    """One tool of an MCP server reached over SSE, as AutoGen's ``SseMcpToolAdapter``."""

    _params_type = SseServerParams
    component_config_schema = SseMcpToolAdapterConfig
    component_provider_override = "nbagent.SseMcpToolAdapter"
    component_aliases = ("autogen_ext.tools.mcp.SseMcpToolAdapter",)


class StreamableHttpMcpToolAdapter(_TransportAdapter):
    """One tool of an MCP server reached over streamable HTTP, as AutoGen's ``StreamableHttpMcpToolAdapter``."""

    _params_type = StreamableHttpServerParams
    component_config_schema = StreamableHttpMcpToolAdapterConfig
    component_provider_override = "nbagent.StreamableHttpMcpToolAdapter"
    component_aliases = ("autogen_ext.tools.mcp.StreamableHttpMcpToolAdapter",)


_ADAPTERS: dict[type[BaseModel], type[_TransportAdapter]] = {
    StdioServerParams: StdioMcpToolAdapter,
    SseServerParams: SseMcpToolAdapter,
    StreamableHttpServerParams: StreamableHttpMcpToolAdapter,
}


async def mcp_server_tools(
    server_params: StdioServerParams | SseServerParams | StreamableHttpServerParams, session: Any = None
) -> list[McpToolAdapter]:
    """AutoGen's ``mcp_server_tools``: the tools of the MCP server ``server_params`` reaches, one
    adapter per tool the server lists (:class:`StdioMcpToolAdapter`, :class:`SseMcpToolAdapter` or
    :class:`StreamableHttpMcpToolAdapter`, as the transport is), for ``AssistantAgent(tools=...)``.

    The tools share one :class:`McpWorkbench` (``tools[0].workbench``), connected here to list them
    and kept open for their calls (reconnected if the server went away); ``await
    tools[0].workbench.stop()`` closes it, as does garbage collection. AutoGen's ``session=`` (a
    ``ClientSession`` of the SDK's earlier major version) is not supported: pass ``None``.

    Example::

        tools = await mcp_server_tools(StdioServerParams(command="python", args=["-m", "mcp_server_time"]))
        agent = AssistantAgent("clock", model_client, tools=tools)
    """
    if session is not None:
        raise TypeError("mcp_server_tools(session=...) is not supported: the tools share an McpWorkbench of their own")
    workbench = McpWorkbench(server_params)
    adapter = _ADAPTERS[type(workbench.server_params)]
    return [
        adapter(workbench.server_params, {"name": schema["name"], **schema}, workbench=workbench)
        for schema in await workbench.list_tools()
    ]
