"""A scripted Chat Completions server on 127.0.0.1 for tests: real HTTP, real SSE, a strict validator.

Usage::

    from tests.models.chat_server import ChatServer, Reply, validate_request

    with ChatServer() as server:                 # a thread with its own event loop, a free port
        server.script(Reply.text("Hello!"), Reply.call(("add", {"a": 1})))
        client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key="sk-test...")
        ...
        server.requests[0].body                  # the parsed JSON of each request, in order
        server.requests[0].headers               # lower-cased header names

API:

* ``ChatServer(api_key=None, *, wrong_key=None, missing_key=None, null_content=None)``: ``start()``
  / ``stop()`` or a ``with`` block; ``base_url`` (``http://127.0.0.1:<port>/v1``). With ``api_key``
  set, a request with another key gets ``wrong_key`` (an ``ErrorAnswer``: status and exact body;
  OpenAI's 401 by default), one with no ``Authorization`` header ``missing_key`` (default: the
  same). ``null_content`` set: an assistant message with null or missing content gets that answer
  (llama-cpp-python's 500). ``responder`` set: each valid request is answered with
  ``responder(body)`` (the parsed JSON) instead of the next scripted reply, so that concurrent
  conversations each get the reply their own messages call for. The ``*_WRONG_KEY``, ``LITELLM_*``,
  ``FASTAPI_*`` and ``EXPRESS_ERROR`` constants hold the answers real servers give. Only
  ``POST /v1/chat/completions`` exists, and Azure OpenAI's ``POST /openai/deployments/<deployment>/chat/completions``
  (its ``api-version`` in the query; ``path`` records it); anything else is 404.
  It runs in its own thread, so it adds no task to the test's event loop.
* ``server.script(*replies)`` queues replies, one per request, in order. A request with no reply
  left gets 400 "no scripted reply left". ``server.pending`` counts unused replies.
* ``server.connections`` / ``server.peak_connections``: the connections open now / the most open at once.
  The peak is taken as each request arrives, from the clients' side: the connections to the server's port
  that are established there (``/proc/net/tcp``; all clients are in this machine) and that this server
  accepted. A client's close changes its socket at once, where the server's loop may read it seconds later
  under load, and the kernel may deliver its FIN after the client's next connection (the server then saw 9
  connections from 8 clients). A socket established to the same port number that this server never accepted
  (another process's, to a server that had the port before) is not its connection; ``peak_report`` names
  those seen at the peak, ``established()`` the clients' ports now.
* ``server.requests``: every request received (also the rejected ones), as ``Received(body,
  headers, status)`` with ``status`` the HTTP status answered.
* ``Reply``: what to answer. Builders: ``Reply.text(text, reasoning=None)``, ``Reply.call((name,
  args), ...)`` (args a dict, or a str sent verbatim), ``Reply.error(status, message)``. Fields
  (all optional, set on any builder via keyword, or ``reply.with_(...)``): ``content`` (the text),
  ``reasoning_field`` ("reasoning_content" or
  "reasoning"), ``usage`` ((prompt, completion)), ``finish_reason``, ``pieces`` (how many
  characters per streamed text/argument delta), ``interleave`` (stream several calls' argument
  deltas round-robin by index), ``hold`` (an async function awaited before answering, in the
  server's loop: a test's barrier), ``delay`` (seconds before answering), ``chunk_delay`` (between
  SSE events), ``cut_after`` (stream that many SSE events, then break the connection:
  ``cut="reset"`` aborts the socket, ``cut="close"`` ends the HTTP body cleanly without
  ``[DONE]``), ``malformed_at`` (insert a line of broken JSON before that SSE event), ``error_event_at``
  (insert ``{"error": {"message": error_message}}`` before that SSE event, as overloaded servers do),
  ``error_event`` (the whole ``error`` object of that event instead, e.g. with a ``code``),
  ``stream_usage=False`` (no usage chunk even when asked, as llama-cpp-python and fakellm do),
  ``error_body`` (the exact body of an error reply instead of OpenAI's shape), ``body`` (the exact
  body of a 200 non-streamed answer instead of the completion: JSON, or a str or bytes sent as they are),
  ``empty_choices`` (``choices: []``), ``headers`` (extra response headers, e.g.
  ``{"retry-after-ms": "1"}``), ``call_ids`` (ids for the calls, default ``call_<n>``).
  Streaming or not follows the request's ``stream`` flag; the usage chunk is sent when the request
  has ``stream_options.include_usage``.
* ``validate_request(body) -> list[str]``: the problems the real API would answer 400 for, empty if
  none. Checked: model and messages present; roles valid; content shapes per role; every assistant
  ``tool_calls`` id answered by a ``tool`` message before the next non-tool message (and before the
  end); ``tool`` messages only answering such a call; tools well formed with unique valid names;
  ``tool_choice`` and ``parallel_tool_calls`` only with tools, ``tool_choice`` naming an offered
  tool; ``stream_options`` only with ``stream``; ``response_format`` shapes, a strict
  ``json_schema`` having every object closed and every property required. The server answers 400
  with the problems joined by "; ".
* ``validate_context(messages, tools=())``: the same check for nbagent LLM messages, e.g.
  ``validate_context(agent.model_context.messages) == []`` after a cancelled run.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from nbagent.messages import LLMMessage
from nbagent.models.openai import to_openai_messages, to_openai_tools
from nbagent.tools import ToolSchema

from ..waits import joined, waited

_AZURE_ROUTE = re.compile(r"/openai/deployments/[^/]+/chat/completions")

_ROLES = {"system", "developer", "user", "assistant", "tool"}
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests"}


# --------------------------------------------------------------------------- the validator


def validate_request(body: Any) -> list[str]:
    """What the Chat Completions API would reject in ``body`` (empty list: valid)."""
    if not isinstance(body, dict):
        return ["the request body must be a JSON object"]
    problems: list[str] = []
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("'model' is required")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        problems.append("'messages' must be a non-empty array")
        messages = []
    problems += _validate_messages(messages)
    tools = body.get("tools")
    names: set[str] = set()
    if tools is not None:
        problems += _validate_tools(tools, names)
    if "tool_choice" in body:
        if not tools:
            problems.append("'tool_choice' is only allowed when 'tools' are specified")
        else:
            choice = body["tool_choice"]
            if isinstance(choice, dict):
                name = (choice.get("function") or {}).get("name") if choice.get("type") == "function" else None
                if name not in names:
                    problems.append(f"tool_choice names no offered tool: {choice!r}")
            elif choice not in ("auto", "required", "none"):
                problems.append(f"invalid tool_choice {choice!r}")
    if "parallel_tool_calls" in body:
        if not tools:
            problems.append("'parallel_tool_calls' is only allowed when 'tools' are specified")
        elif not isinstance(body["parallel_tool_calls"], bool):
            problems.append("'parallel_tool_calls' must be a boolean")
    if "stream_options" in body and not body.get("stream"):
        problems.append("'stream_options' is only allowed when 'stream' is enabled")
    if "response_format" in body:
        problems += _validate_response_format(body["response_format"])
    return problems


def _validate_assistant(where: str, message: dict[str, Any], pending: set[str]) -> list[str]:
    """An assistant message's problems; the ids of its tool calls join ``pending``."""
    problems: list[str] = []
    content = message.get("content")
    calls = message.get("tool_calls")
    if calls is None:
        if not (isinstance(content, str) or _text_parts(content)):
            problems.append(f"{where}: an assistant message needs 'content' or 'tool_calls'")
        return problems
    if not isinstance(calls, list) or not calls:
        return [f"{where}: 'tool_calls' must be a non-empty array"]
    if content is not None and not isinstance(content, str):
        problems.append(f"{where}: content must be a string or null")
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if (
            not isinstance(call, dict)
            or not isinstance(call.get("id"), str)
            or not call["id"]
            or call.get("type") != "function"
            or not isinstance(function, dict)
            or not isinstance(function.get("name"), str)
            or not isinstance(function.get("arguments"), str)
        ):
            problems.append(f"{where}: malformed tool call {call!r}")
        elif call["id"] in pending:
            problems.append(f"{where}: duplicate tool call id {call['id']!r}")
        else:
            pending.add(call["id"])
    return problems


def _validate_messages(messages: list[Any]) -> list[str]:
    problems: list[str] = []
    pending: set[str] = set()
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, dict) or message.get("role") not in _ROLES:
            role = message.get("role") if isinstance(message, dict) else None
            problems.append(f"{where}: invalid role {role!r}")
            continue
        role = message["role"]
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                problems.append(
                    f"{where}: messages with role 'tool' must be a response to a preceding message with "
                    f"'tool_calls' (tool_call_id {call_id!r})"
                )
            pending.discard(call_id)
            if not isinstance(message.get("content"), str):
                problems.append(f"{where}: a tool message's content must be a string")
            continue
        if pending:
            problems.append(
                f"{where}: an assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'; not answered: {sorted(pending)}"
            )
            pending = set()
        content = message.get("content")
        if role in ("system", "developer"):
            if not (isinstance(content, str) or _text_parts(content)):
                problems.append(f"{where}: a {role} message's content must be a string or text parts")
        elif role == "user":
            if not (isinstance(content, str) or _user_parts(content)):
                problems.append(f"{where}: a user message's content must be a string or content parts")
        else:
            problems += _validate_assistant(where, message, pending)
    if pending:
        problems.append(
            "an assistant message with 'tool_calls' must be followed by tool messages responding to each "
            f"'tool_call_id'; not answered: {sorted(pending)}"
        )
    return problems


def _text_parts(content: Any) -> bool:
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in content)
    )


def _user_parts(content: Any) -> bool:
    if not isinstance(content, list) or not content:
        return False
    for part in content:
        if not isinstance(part, dict):
            return False
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            continue
        url = (part.get("image_url") or {}).get("url") if part.get("type") == "image_url" else None
        if not isinstance(url, str) or not re.match(r"^(https?://|data:image/[a-z+.-]+;base64,)", url):
            return False
    return True


def _validate_tools(tools: Any, names: set[str]) -> list[str]:
    if not isinstance(tools, list) or not tools:
        return ["'tools' must be a non-empty array"]
    problems = []
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(function, dict):
            problems.append(f"tools[{index}]: must be {{'type': 'function', 'function': {{...}}}}")
            continue
        name = function.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            problems.append(f"tools[{index}]: invalid function name {name!r}")
        elif name in names:
            problems.append(f"tools[{index}]: duplicate function name {name!r}")
        else:
            names.add(name)
        parameters = function.get("parameters")
        if parameters is not None and (not isinstance(parameters, dict) or parameters.get("type") != "object"):
            problems.append(f"tools[{index}]: parameters must be a JSON schema of type 'object'")
        if "description" in function and not isinstance(function["description"], str):
            problems.append(f"tools[{index}]: description must be a string")
        if "strict" in function and not isinstance(function["strict"], bool):
            problems.append(f"tools[{index}]: strict must be a boolean")
    return problems


def _validate_response_format(fmt: Any) -> list[str]:
    if not isinstance(fmt, dict) or fmt.get("type") not in ("text", "json_object", "json_schema"):
        return [f"invalid response_format {fmt!r}"]
    if fmt["type"] != "json_schema":
        return []
    spec = fmt.get("json_schema")
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) or not _NAME.match(spec["name"]):
        return ["response_format.json_schema needs a valid 'name'"]
    schema = spec.get("schema")
    if not isinstance(schema, dict):
        return ["response_format.json_schema.schema must be an object"]
    if not spec.get("strict"):
        return []
    problems: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                if node.get("additionalProperties") is not False:
                    problems.append(f"strict schema: 'additionalProperties' must be false at {path}")
                if set(node.get("required") or []) != set(node["properties"]):
                    problems.append(f"strict schema: every property must be required at {path}")
            for key, value in node.items():
                walk(value, f"{path}.{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{path}[{i}]")

    walk(schema, "schema")
    return problems


def validate_context(messages: Sequence[LLMMessage], tools: Sequence[ToolSchema] = ()) -> list[str]:
    """:func:`validate_request` for nbagent LLM messages (an agent's context, say), without HTTP."""
    body: dict[str, Any] = {"model": "any", "messages": to_openai_messages(messages, vision=True)}
    if tools:
        body["tools"] = to_openai_tools(tools)
    return validate_request(body)


# --------------------------------------------------------------------------- scripted replies


@dataclass(frozen=True)
class Reply:
    """One scripted answer (see the module docstring for every field)."""

    content: str | None = None
    calls: tuple[tuple[str, str], ...] = ()
    reasoning: str | None = None
    reasoning_field: str = "reasoning_content"
    status: int = 200
    error_message: str = ""
    usage: tuple[int, int] = (10, 5)
    finish_reason: str | None = None
    pieces: int = 4
    interleave: bool = False
    delay: float = 0.0
    chunk_delay: float = 0.0
    cut_after: int | None = None
    cut: Literal["reset", "close"] = "reset"
    malformed_at: int | None = None
    error_event_at: int | None = None
    empty_choices: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    call_ids: tuple[str, ...] = ()
    error_body: Any = None
    error_event: dict[str, Any] | None = None
    stream_usage: bool = True
    body: Any = None
    object_arguments: bool = False  # streamed tool arguments as one JSON object, as some servers send them
    trickle: Literal["comment", "chunk", "body"] | None = None
    trickle_every: float = 0.5
    hold: Callable[[], Awaitable[None]] | None = None

    @classmethod
    def text(cls, text: str, **fields: Any) -> Reply:
        return cls(content=text, **fields)

    @classmethod
    def call(cls, *calls: tuple[str, dict[str, Any] | str], **fields: Any) -> Reply:
        encoded = tuple((name, args if isinstance(args, str) else json.dumps(args)) for name, args in calls)
        return cls(calls=encoded, **fields)

    @classmethod
    def error(cls, status: int, message: str, **fields: Any) -> Reply:
        return cls(status=status, error_message=message, **fields)

    def with_(self, **fields: Any) -> Reply:
        return replace(self, **fields)

    def _ids(self) -> list[str]:
        return [self.call_ids[i] if i < len(self.call_ids) else f"call_{i}" for i in range(len(self.calls))]

    def _finish(self) -> str:
        return self.finish_reason or ("tool_calls" if self.calls else "stop")

    def completion(self, model: str) -> dict[str, Any]:
        """The JSON of a non-streamed answer."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.reasoning is not None:
            message[self.reasoning_field] = self.reasoning
        if self.calls:
            message["tool_calls"] = [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
                for call_id, (name, args) in zip(self._ids(), self.calls)
            ]
        choices = [] if self.empty_choices else [{"index": 0, "message": message, "finish_reason": self._finish()}]
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": choices,
            "usage": _usage_json(self.usage),
        }

    def events(self, model: str, include_usage: bool) -> list[str]:
        """The SSE ``data:`` payloads of a streamed answer, ``[DONE]`` last."""
        base = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            choices = [] if self.empty_choices else [{"index": 0, "delta": delta, "finish_reason": finish}]
            return json.dumps({**base, "choices": choices})

        events = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({self.reasoning_field: p}) for p in _split(self.reasoning or "", self.pieces)]
        events += [chunk({"content": p}) for p in _split(self.content or "", self.pieces)]
        streams: list[list[dict[str, Any]]] = []
        for index, (call_id, (name, args)) in enumerate(zip(self._ids(), self.calls)):
            head = {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
            if self.object_arguments:
                streams.append([{**head, "function": {"name": name, "arguments": json.loads(args)}}])
                continue
            streams.append([head] + [{"index": index, "function": {"arguments": p}} for p in _split(args, self.pieces)])
        if self.interleave:
            longest = max((len(s) for s in streams), default=0)
            ordered = [s[i] for i in range(longest) for s in streams if i < len(s)]
        else:
            ordered = [delta for s in streams for delta in s]
        events += [chunk({"tool_calls": [delta]}) for delta in ordered]
        events.append(chunk({}, self._finish()))
        if include_usage and self.stream_usage:
            events.append(json.dumps({**base, "choices": [], "usage": _usage_json(self.usage)}))
        events.append("[DONE]")
        return events


def _split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), max(size, 1))]


def _usage_json(usage: tuple[int, int]) -> dict[str, int]:
    return {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}


# --------------------------------------------------------------------------- real servers' answers

ErrorAnswer = tuple[int, Any]
"""An HTTP status and the exact body a server answers with (JSON data, or a str sent as text)."""

#: OpenAI's answer to a wrong key (what this server sends by default).
OPENAI_WRONG_KEY: ErrorAnswer = (
    401,
    {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error", "param": None, "code": None}},
)
#: llama.cpp's llama-server (measured, 0.3.36's vendored llama.cpp): a wrong or missing key.
LLAMA_SERVER_WRONG_KEY: ErrorAnswer = (
    401,
    {"error": {"message": "Invalid API Key", "type": "authentication_error", "code": 401}},
)
#: llama-cpp-python's server (FastAPI): a wrong or missing key, as ``{"detail": ...}``.
LLAMA_CPP_PYTHON_WRONG_KEY: ErrorAnswer = (401, {"detail": "Invalid API key"})
#: llama-cpp-python 0.3.x's server on an assistant message whose content is null (or missing): its
#: chat template fails, HTTP 500 (the SDK retries it twice).
LLAMA_CPP_PYTHON_NULL_CONTENT: ErrorAnswer = (
    500,
    {
        "error": {
            "message": 'can only concatenate str (not "NoneType") to str',
            "type": "internal_server_error",
            "param": None,
            "code": None,
        }
    },
)
#: LiteLLM's proxy with a master key and no database: a key that is not the master key (the
#: ``Bearer no-key`` placeholder, say) is looked up in the database it does not have.
LITELLM_UNKNOWN_KEY: ErrorAnswer = (
    400,
    {
        "error": {
            "message": "Authentication Error, No connected db.",
            "type": "auth_error",
            "param": "None",
            "code": "400",
        }
    },
)
#: LiteLLM's proxy when no key is sent at all.
LITELLM_NO_KEY: ErrorAnswer = (
    401,
    {
        "error": {
            "message": "Authentication Error, No api key passed in.",
            "type": "auth_error",
            "param": "None",
            "code": "401",
        }
    },
)
#: FastAPI's answer when a handler raises HTTPException (LiteLLM, llama-cpp-python).
FASTAPI_DETAIL: ErrorAnswer = (401, {"detail": "Invalid API key"})
#: FastAPI's validation error (422).
FASTAPI_VALIDATION: ErrorAnswer = (
    422,
    {"detail": [{"type": "missing", "loc": ["body", "messages"], "msg": "Field required", "input": {}}]},
)
#: Express-style mock servers: the error's name and its message side by side.
EXPRESS_ERROR: ErrorAnswer = (
    500,
    {"error": "TypeError", "message": "Cannot read properties of undefined (reading 'map')"},
)


def _null_assistant_content(body: Any) -> bool:
    """An assistant message whose content is null or missing (what llama-cpp-python refuses)."""
    messages = body.get("messages") if isinstance(body, dict) else None
    return any(
        isinstance(m, dict) and m.get("role") == "assistant" and m.get("content") is None for m in messages or []
    )


@dataclass
class Received:
    """One request as the server saw it."""

    body: Any
    headers: dict[str, str]
    status: int = 0
    raw: bytes = b""  # the body's bytes as sent
    path: str = ""  # the request target (path and query)


# --------------------------------------------------------------------------- the server


def _established_to(port: int) -> list[int]:
    """The local ports of the TCP connections to ``port`` of 127.0.0.1 established on the client's side: a
    client's close or shutdown changes its socket's state at once, in its own system call, however late the
    server's loop (or, under load, the kernel's delivery of the FIN) sees it. Linux's ``/proc/net/tcp``."""
    remote = f"0100007F:{port:04X}"
    with open("/proc/net/tcp", encoding="ascii") as table:
        rows = [line.split() for line in table]
    return sorted(int(row[1].split(":")[1], 16) for row in rows if row[2] == remote and row[3] == "01")


class ChatServer:
    """The scripted server (see the module docstring)."""

    def __init__(
        self,
        api_key: str | None = None,
        *,
        wrong_key: ErrorAnswer | None = None,
        missing_key: ErrorAnswer | None = None,
        null_content: ErrorAnswer | None = None,
        responder: Callable[[Any], Reply] | None = None,
    ) -> None:
        self.api_key = api_key
        self.responder = responder
        self.wrong_key = wrong_key or OPENAI_WRONG_KEY
        self.missing_key = missing_key or self.wrong_key
        self.null_content = null_content
        self.requests: list[Received] = []
        self.connections = 0  # open now
        self.peak_connections = 0  # the most open at once
        self.peak_ports: list[int] = []  # the clients' local ports at that peak
        self.peak_seen: list[int] = []  # every client port established to the port then, accepted or not
        self.accepted_ports: set[int] = set()  # the clients' ports of every connection this server accepted
        self._replies: list[Reply] = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def established(self) -> list[int]:
        """The local ports of the clients' sockets established to this server's port now, accepted or not."""
        return _established_to(self.port)

    def peak_report(self) -> str:
        """The peak of this server's established connections, their clients' ports, and the connections to
        its port it had not accepted then (another process's, to a port number used before, or one not yet
        taken from the listening queue)."""
        with self._lock:
            ports, seen = list(self.peak_ports), list(self.peak_seen)
        return (
            f"{len(ports)} client sockets established to port {self.port} at once, local ports {ports}; "
            f"not accepted by this server then: {[port for port in seen if port not in ports]}"
        )

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._replies)

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def start(self) -> ChatServer:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            self._server = loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._shutdown())
            loop.close()

        self._thread = threading.Thread(target=run, name="chat-server", daemon=True)
        self._thread.start()
        waited(ready, "the chat server to listen on 127.0.0.1")
        return self

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        handlers = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            joined(self._thread, "the chat server's loop")
            self._loop = None

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with self._lock:
            self.connections += 1
            self.accepted_ports.add(writer.get_extra_info("peername")[1])
        try:
            while await self._one_request(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # a client went away, or the server stops (ending quietly keeps asyncio from logging it)
        finally:
            writer.close()
            with self._lock:
                self.connections -= 1

    async def _one_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; False when the connection is to be closed."""
        line = await reader.readline()
        if not line:
            return False
        ports = self.established()
        with self._lock:
            ours = [port for port in ports if port in self.accepted_ports]
            if len(ours) > self.peak_connections:
                self.peak_connections, self.peak_ports, self.peak_seen = len(ours), ours, ports
        method, path, _ = line.decode("latin-1").split(" ", 2)
        headers: dict[str, str] = {}
        while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = header.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        raw = await reader.readexactly(int(headers.get("content-length", "0")))
        try:
            body: Any = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        received = Received(body, headers, raw=raw, path=path)
        with self._lock:
            self.requests.append(received)
        route = path.split("?")[0].rstrip("/")
        if method != "POST" or (route != "/v1/chat/completions" and not _AZURE_ROUTE.fullmatch(route)):
            return await self._send_error(writer, received, 404, f"Unknown request URL: {method} {path}")
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            status, error_body = self.missing_key if "authorization" not in headers else self.wrong_key
            return await self._send_body(writer, received, status, error_body)
        problems = validate_request(body)
        if problems:
            return await self._send_error(writer, received, 400, "; ".join(problems))
        if self.null_content is not None and _null_assistant_content(body):
            return await self._send_body(writer, received, *self.null_content)
        if self.responder is not None:
            reply: Reply | None = self.responder(body)
        else:
            with self._lock:
                reply = self._replies.pop(0) if self._replies else None
        if reply is None:
            return await self._send_error(
                writer, received, 400, f"no scripted reply left for request #{len(self.requests)}"
            )
        if reply.hold is not None:
            await reply.hold()
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.status != 200:
            if reply.error_body is not None:
                return await self._send_body(writer, received, reply.status, reply.error_body, reply.headers)
            return await self._send_error(writer, received, reply.status, reply.error_message, reply.headers)
        received.status = 200
        return await self._send_answer(writer, received, reply, body)

    async def _send_answer(self, writer: asyncio.StreamWriter, received: Received, reply: Reply, body: Any) -> bool:
        """A 200 answer: streamed, a body as it is, a completion, or one that trickles for ever."""
        if reply.trickle is not None:
            return await self._trickle(writer, reply, body["model"])
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return await self._send_stream(writer, reply, reply.events(body["model"], include_usage))
        if reply.body is not None:
            return await self._send_body(writer, received, 200, reply.body, reply.headers)
        await self._send(writer, 200, json.dumps(reply.completion(body["model"])).encode(), reply.headers)
        return True

    async def _send(
        self, writer: asyncio.StreamWriter, status: int, payload: bytes, headers: dict[str, str] | None = None
    ) -> None:
        head = [
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}",
            "content-type: application/json",
            f"content-length: {len(payload)}",
        ]
        head += [f"{name}: {value}" for name, value in (headers or {}).items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)
        await writer.drain()

    async def _send_error(
        self,
        writer: asyncio.StreamWriter,
        received: Received,
        status: int,
        message: str,
        headers: dict[str, str] | None = None,
    ) -> bool:
        received.status = status
        error = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
        await self._send(writer, status, json.dumps(error).encode(), headers)
        return True

    async def _send_body(
        self,
        writer: asyncio.StreamWriter,
        received: Received,
        status: int,
        body: Any,
        headers: dict[str, str] | None = None,
    ) -> bool:
        """An answer with exactly this body (JSON, or a str or bytes sent as they are)."""
        received.status = status
        if isinstance(body, bytes):
            payload = body
        else:
            payload = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        await self._send(writer, status, payload, headers)
        return True

    async def _send_stream(self, writer: asyncio.StreamWriter, reply: Reply, events: list[str]) -> bool:
        head = ["HTTP/1.1 200 OK", "content-type: text/event-stream", "transfer-encoding: chunked"]
        head += [f"{name}: {value}" for name, value in reply.headers.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        for index, event in enumerate(events):
            if reply.cut_after is not None and index >= reply.cut_after:
                if reply.cut == "reset":
                    writer.transport.abort()
                    return False
                writer.write(b"0\r\n\r\n")
                await writer.drain()
                return True
            if reply.malformed_at == index:
                self._chunk(writer, 'data: {"choices": [{"delta": {"content": "oops"\n\n')
            if reply.error_event_at == index:
                error = reply.error_event or {"message": reply.error_message}
                self._chunk(writer, f"data: {json.dumps({'error': error})}\n\n")
            if reply.chunk_delay and index:
                await asyncio.sleep(reply.chunk_delay)
            self._chunk(writer, f"data: {event}\n\n")
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    async def _trickle(self, writer: asyncio.StreamWriter, reply: Reply, model: str) -> bool:
        """An answer that never ends: after its first event, an SSE comment or a "." chunk every
        ``trickle_every`` seconds (``body``: a JSON body's bytes, one at a time), until the client goes."""
        if reply.trickle == "body":
            payload = json.dumps(reply.completion(model)).encode()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % 10**9)
            for index in range(10**9):
                await asyncio.sleep(reply.trickle_every)
                writer.write(b" " if index >= len(payload) else payload[index : index + 1])
                await writer.drain()
            return False
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        self._chunk(writer, f"data: {reply.events(model, False)[0]}\n\n")
        dot = reply.with_(content=".").events(model, False)[1]
        while True:
            await asyncio.sleep(reply.trickle_every)
            self._chunk(writer, ": keep-alive\n\n" if reply.trickle == "comment" else f"data: {dot}\n\n")
            await writer.drain()

    @staticmethod
    def _chunk(writer: asyncio.StreamWriter, text: str) -> None:
        data = text.encode()
        writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
