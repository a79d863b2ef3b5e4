"""``OpenAIChatCompletionClient``: the Chat Completions API through the official ``openai`` SDK.

Works with OpenAI and with every server that speaks the same protocol (Ollama, vLLM, LM Studio,
llama.cpp...) through ``base_url``. It converts nbagent's LLM messages and tool schemas to the
API's, assembles streamed text and tool-call deltas, turns reasoning fields and ``<think>`` blocks
into ``thought``, and raises :class:`~nbagent.models.base.ModelError` subclasses that name the HTTP
status and the server's message. The API key lives only inside the SDK client: it is in no repr,
result, error message or recording.
"""

from __future__ import annotations

import asyncio
import base64
import importlib
import inspect
import json
import os
import platform
import sys
import time
import warnings
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from types import ModuleType
from typing import Any, Self
from urllib.parse import unquote, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError

from .. import _check as check
from .._ids import new_id
from .._imports import when_imported
from ..cancellation import CancellationToken, guarded
from ..components import MASKED_SECRET, include_secrets
from ..messages import (
    AssistantMessage,
    CreateResult,
    FinishReason,
    FunctionCall,
    FunctionExecutionResultMessage,
    Image,
    LLMMessage,
    RequestUsage,
    SystemMessage,
    UserMessage,
    function_call,
    share_fields_set,
)
from ..messages import usage as usage_of
from ..redact import (
    header_secrets,
    hold_secrets,
    is_secret_name,
    known_secrets,
    mask,
    process_secrets,
    redact_config_text,
)
from ..tools import Tool, ToolSchema
from .base import (
    CallEvent,
    ChatCompletionClient,
    ModelAuthenticationError,
    ModelBadRequestError,
    ModelConnectionError,
    ModelError,
    ModelInfo,
    ModelNotFoundError,
    ModelRateLimitError,
    ModelRequest,
    ModelResponseError,
    ModelServerError,
    ModelStream,
    ModelTimeoutError,
    Quirk,
    ToolChoice,
    UnreportedUsage,
    tell,
)
from .retries import OUTER_RETRIES

#: What known models can do; the longest name that prefixes the model's name wins
#: (``gpt-4o-2024-08-06`` is ``gpt-4o``). Anything else gets :data:`UNKNOWN_MODEL_INFO`.
MODEL_INFO: dict[str, ModelInfo] = {
    name: ModelInfo(
        vision=vision, function_calling=tools, json_output=json_mode, structured_output=structured, family=family
    )
    for name, vision, tools, json_mode, structured, family in (
        # name, vision, function_calling, json_output, structured_output, family
        ("gpt-3.5-turbo", False, True, True, False, "gpt-35"),
        ("gpt-4o", True, True, True, True, "gpt-4o"),
        ("gpt-4o-mini", True, True, True, True, "gpt-4o"),
        ("gpt-4.1", True, True, True, True, "gpt-41"),
        ("gpt-5", True, True, True, True, "gpt-5"),
        ("o1", True, True, True, True, "o1"),
        ("o3", True, True, True, True, "o3"),
        ("o4-mini", True, True, True, True, "o4"),
        ("deepseek-chat", False, True, True, False, "deepseek"),
        ("deepseek-reasoner", False, False, False, False, "r1"),
        # The other models AutoGen 0.7.5's OpenAI client knows (its table's values)
        ("gpt-4", False, True, True, False, "gpt-4"),
        ("gpt-4-32k", False, True, True, False, "gpt-4"),
        ("gpt-4-turbo", True, True, True, False, "gpt-4"),
        ("gpt-4.5-preview", True, True, True, True, "gpt-45"),
        ("gpt-4o-search-preview", False, True, True, True, "gpt-4o"),
        ("gpt-4o-mini-search-preview", False, True, True, True, "gpt-4o"),
        ("o1-mini", False, False, False, False, "o1"),
        ("o1-preview", False, True, False, True, "o1"),
        ("o3-mini", False, True, True, True, "o3"),
        ("gemini-1.5-flash", True, True, True, True, "gemini-1.5-flash"),
        ("gemini-1.5-pro", True, True, True, True, "gemini-1.5-pro"),
        ("gemini-2.0-flash", True, True, True, True, "gemini-2.0-flash"),
        ("gemini-2.5-pro", True, True, True, True, "gemini-2.5-pro"),
        ("gemini-2.5-flash", True, True, True, True, "gemini-2.5-flash"),
        ("claude-3-haiku", True, True, False, False, "claude-3-haiku"),
        ("claude-3-sonnet", True, True, False, False, "claude-3-sonnet"),
        ("claude-3-opus", True, True, False, False, "claude-3-opus"),
        ("claude-3-5-haiku", True, True, False, False, "claude-3-5-haiku"),
        ("claude-3-5-sonnet", True, True, False, False, "claude-3-5-sonnet"),
        ("claude-3-7-sonnet", True, True, False, False, "claude-3-7-sonnet"),
        ("claude-4-sonnet", True, True, False, False, "claude-4-sonnet"),
        ("claude-4-opus", True, True, False, False, "claude-4-opus"),
        ("claude-sonnet-4", True, True, False, False, "claude-4-sonnet"),
        ("claude-opus-4", True, True, False, False, "claude-4-opus"),
        ("Llama-3.3-8B-Instruct", False, True, True, False, "llama-3.3-8b"),
        ("Llama-3.3-70B-Instruct", False, True, True, False, "llama-3.3-70b"),
        ("Llama-4-Scout-17B-16E-Instruct-FP8", True, True, True, True, "llama-4-scout"),
        ("Llama-4-Maverick-17B-128E-Instruct-FP8", True, True, True, True, "llama-4-maverick"),
    )
}
#: The context window (tokens) of the known models, by name or the prefix of a dated version: the
#: published windows, as AutoGen 0.7.5's OpenAI client knows them. A model not here has no known window.
TOKEN_LIMITS: dict[str, int] = {
    "gpt-3.5-turbo": 16_385,
    "gpt-4": 8_192,
    "gpt-4-32k": 32_768,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.5-preview": 128_000,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o1-preview": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    "gemini-1.5-flash": 1_048_576,
    "gemini-1.5-pro": 2_097_152,
    "gemini-2.0-flash": 1_048_576,
    "gemini-2.5-flash": 1_048_576,
    "claude-3-haiku": 50_000,
    "claude-3-sonnet": 200_000,
    "claude-3-opus": 200_000,
    "claude-3-5-haiku": 200_000,
    "claude-3-5-sonnet": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-4-sonnet": 200_000,
    "claude-4-opus": 200_000,
    "Llama-3.3-8B-Instruct": 128_000,
    "Llama-3.3-70B-Instruct": 128_000,
    "Llama-4-Scout-17B-16E-Instruct-FP8": 128_000,
    "Llama-4-Maverick-17B-128E-Instruct-FP8": 128_000,
}

#: Capabilities assumed for a model not in the table (a local server's model, say): text, tools
#: and JSON, no images. Pass ``model_info=`` to say otherwise.
UNKNOWN_MODEL_INFO = ModelInfo(
    vision=False, function_calling=True, json_output=True, structured_output=True, family="unknown"
)
_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "function_calls",
    "function_call": "function_calls",
    "content_filter": "content_filter",
}
_REASONING_FIELDS = ("reasoning_content", "reasoning")
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"


def _sdk() -> ModuleType:
    """The ``openai`` package, imported on first use: it takes about a second, which ``import
    nbagent`` should not pay when no OpenAI client is made."""
    import openai

    return openai


_TLS_CONTEXTS: dict[tuple[str, ...], Any] = {}
TLS_ENVIRONMENT = ("SSL_CERT_FILE", "SSL_CERT_DIR", "SSLKEYLOGFILE")
"""The environment variables a TLS context is made from (a context is kept for each set of their values)."""


def tls_context(client_class: type) -> Any:
    """The TLS context for a new HTTP client of the SDK (``client_class``): one a process for each set of
    values of :data:`TLS_ENVIRONMENT`, made by the client's HTTP library as it makes one for each client given
    ``verify=True`` (the same certificates trusted). Loading the certificates is nearly all the cost of a
    client (51 ms of CPU of 52 measured, 2026-12-07), paid on the event loop when a client is made for a new
    loop. The library is the first of the class's bases' packages with a ``create_ssl_context``. ``True``
    (each client makes its own) without one, and on macOS and Windows, where the context asks the system
    to check certificates and holds a lock while it does: one shared context would queue every handshake."""
    if platform.system() in ("Darwin", "Windows"):
        return True
    packages = (sys.modules.get(c.__module__.partition(".")[0]) for c in client_class.__mro__)
    make = next((found for package in packages if (found := getattr(package, "create_ssl_context", None))), None)
    if make is None:
        return True
    key = (make.__module__, *(os.environ.get(name, "") for name in TLS_ENVIRONMENT))
    if key not in _TLS_CONTEXTS:  # two threads at once may each make one: the last kept, both valid
        _TLS_CONTEXTS[key] = make()
    return _TLS_CONTEXTS[key]


def sdk_http_client() -> Any:
    """A new HTTP client for an SDK client: the SDK's default one, with the process's TLS context
    (:func:`tls_context`)."""
    sdk = _sdk()
    return sdk.DefaultAsyncHttpxClient(verify=tls_context(sdk.DefaultAsyncHttpxClient))


_SDK_METHODS = (
    ("openai.resources.chat.completions", "AsyncCompletions", "create"),
    ("openai.resources.chat.completions", "AsyncCompletions", "parse"),
    ("openai.lib.streaming.chat", "AsyncChatCompletionStreamManager", "__aenter__"),
)
"""The SDK's public methods that code of the user's (a test suite) patches or mocks: ``(module, class,
method)``. Where one is not the SDK's own, nbagent's client goes through it."""

_SDK_OWN: dict[str, tuple[type, object]] = {}
"""Each of :data:`_SDK_METHODS` by method name: its class and the method as the SDK defined it, recorded
when the SDK is imported (a method found already replaced is recorded as :data:`_NOT_THE_SDKS`)."""

_NOT_THE_SDKS = object()


def _record_sdk_methods(_: ModuleType) -> None:
    """Record :data:`_SDK_OWN` (a class this SDK version lacks is left out: nothing to patch there)."""
    for module_name, class_name, name in _SDK_METHODS:
        owner = getattr(importlib.import_module(module_name), class_name, None)
        if isinstance(owner, type) and name in vars(owner):
            method = vars(owner)[name]
            own = str(getattr(method, "__module__", "")).startswith("openai.")
            _SDK_OWN[name] = (owner, method if own else _NOT_THE_SDKS)


when_imported("openai.resources.chat.completions", _record_sdk_methods)


def _replaced(name: str, instance: object = None) -> bool:
    """Whether the SDK's method ``name`` (of :data:`_SDK_METHODS`) is patched or mocked: not the SDK's own
    on its class, or set on ``instance`` (``mock.patch.object(completions, "create")``).

    Dictionary look-ups and an identity check: the fast path (``post()``) costs nothing more.
    """
    if instance is not None and name in vars(instance):
        return True
    recorded = _SDK_OWN.get(name)
    return recorded is not None and vars(recorded[0]).get(name) is not recorded[1]


def _omit() -> Any:
    """The SDK's ``Omit`` class (a header or an argument left out): ``openai.Omit`` in recent
    versions; older ones (1.40, the oldest allowed) have it in ``openai._types`` only."""
    openai = _sdk()
    omit = getattr(openai, "Omit", None)
    return omit if omit is not None else openai._types.Omit  # noqa: SLF001 no public Omit in those


class KeyFromEnvironmentWarning(UserWarning):
    """``OPENAI_API_KEY`` from the environment is about to be sent to a server that is not OpenAI's."""


def _is_openai(base_url: str) -> bool:
    host = urlsplit(base_url).hostname or ""
    return host == "openai.com" or host.endswith(".openai.com")


def _url_credentials(
    base_url: str | None, headers: Mapping[str, str] | None, key: str | None, from_environment: bool
) -> tuple[str | None, dict[str, str] | None, list[str]]:
    """``base_url`` without its ``user:password@``, the default headers with the HTTP Basic
    ``Authorization`` those made (what httpx would make of them, out of sight), and the secret values
    (password, its Basic token). A URL's credentials and an API key (given, or from the environment)
    would both be an ``Authorization`` header, and httpx would silently send the URL's instead of the
    key: that is refused, as is an ``Authorization`` of the caller's own besides the URL's."""
    own = dict(headers) if headers else None
    if base_url is None or "@" not in base_url:
        return base_url, own, []
    try:
        parts = urlsplit(base_url)
        user, password = parts.username, parts.password
    except ValueError as error:
        raise ValueError(f"OpenAIChatCompletionClient: base_url is not a URL ({error})") from None
    if user is None and password is None:
        return base_url, own, []
    clean = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    where = f"OpenAIChatCompletionClient: base_url ({clean}) holds a user name and password (HTTP Basic auth)"
    if key:
        given = "OPENAI_API_KEY from the environment" if from_environment else "api_key"
        raise ValueError(
            f"{where} and {given} gives a key (a Bearer token): a request carries one Authorization header, "
            "and the URL's would silently replace the key. Pass api_key='' to authenticate with the URL's "
            "user and password, or take them out of base_url to send the key"
        )
    if any(name.lower() == "authorization" for name in own or {}):
        raise ValueError(f"{where} and default_headers has an Authorization of its own: keep one of them")
    credential = f"{unquote(user or '')}:{unquote(password or '')}"
    token = base64.b64encode(credential.encode()).decode()
    secrets = [unquote(password) if password else unquote(user or ""), credential, token]
    return clean, {**(own or {}), "Authorization": f"Basic {token}"}, secrets


def _check_environment_key(base_url: object, masked: bool) -> None:
    """Refuse a loaded config without a key whose ``base_url`` names another host than the one the
    environment's ``OPENAI_API_KEY`` is for (``OPENAI_BASE_URL``'s, else OpenAI's): a config from
    elsewhere never sends that key to a server of its choosing."""
    if not os.environ.get("OPENAI_API_KEY") or not isinstance(base_url, str):
        return
    home = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    try:
        host, home_host = urlsplit(base_url).hostname or "", urlsplit(home).hostname or ""
    except ValueError:
        host, home_host = base_url, ""
    if host == home_host or (_is_openai(base_url) and _is_openai(home)):
        return
    how = "holds a masked api_key ('**********')" if masked else "has no api_key"
    where = redact_config_text(base_url)
    raise ValueError(
        f"OpenAIChatCompletionClient config: it {how} and names base_url {where}, so OPENAI_API_KEY from the "
        f"environment would be sent there, but that key is for {home_host} (OPENAI_BASE_URL, else OpenAI's): a "
        "loaded config never sends it to another host. Put that server's key in the config's api_key (or \"\" "
        "to send none), or make the client in code with api_key=..."
    )


def _secret_values(headers: object) -> list[str]:
    """The secret values of the secret-named headers of ``headers`` (``default_headers``, or the create
    argument ``extra_headers``): each value, and a scheme's credential alone (``Bearer <token>``)."""
    if not isinstance(headers, Mapping):
        return []
    return [
        secret
        for name, value in headers.items()
        if isinstance(name, str) and is_secret_name(name) and isinstance(value, str)
        for secret in header_secrets(value)
    ]


def known_model(model: str) -> bool:
    """Whether ``model`` is in the table (itself, or a dated version of an entry)."""
    return any(model == name or model.startswith(name + "-") for name in MODEL_INFO)


def model_info_for(model: str) -> ModelInfo:
    """The table entry of ``model`` (longest matching prefix), else :data:`UNKNOWN_MODEL_INFO`."""
    matches = [name for name in MODEL_INFO if model == name or model.startswith(name + "-")]
    return ModelInfo(**MODEL_INFO[max(matches, key=len)]) if matches else ModelInfo(**UNKNOWN_MODEL_INFO)


# --------------------------------------------------------------------------- request conversion


def token_limit_for(model: str) -> int | None:
    """The context window of ``model`` (:data:`TOKEN_LIMITS`, longest matching prefix), ``None`` if not known."""
    matches = [name for name in TOKEN_LIMITS if model == name or model.startswith(name + "-")]
    return TOKEN_LIMITS[max(matches, key=len)] if matches else None


def merge_system_messages(messages: Sequence[LLMMessage]) -> list[LLMMessage]:
    """The messages for a model that reads one system message (``model_info["multiple_system_messages"]``
    False), as AutoGen's OpenAI client makes them: contiguous system messages merged into one (their
    texts joined by newlines) where the first was; system messages that are not contiguous raise
    AutoGen's ``ValueError``."""
    merged: list[LLMMessage] = []
    texts: list[str] = []
    first = last = -1
    for index, message in enumerate(messages):
        if isinstance(message, SystemMessage):
            if first == -1:
                first = index
            elif last + 1 != index:
                raise ValueError(
                    "Multiple and Not continuous system messages are not supported if "
                    "model_info['multiple_system_messages'] is False"
                )
            texts.append(message.content + "\n")
            last = index
        else:
            merged.append(message)
    content = "".join(texts).rstrip()
    if content:
        merged.insert(first, SystemMessage(content=content))
    return merged


def to_openai_messages(messages: Sequence[LLMMessage], *, vision: bool) -> list[dict[str, Any]]:
    """nbagent's LLM messages as Chat Completions messages (one ``tool`` message per result)."""
    converted: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            converted.append({"role": "system", "content": message.content})
        elif isinstance(message, UserMessage):
            converted.append({"role": "user", "content": _user_content(message, vision)})
        elif isinstance(message, AssistantMessage):
            if isinstance(message.content, str):
                converted.append({"role": "assistant", "content": message.content})
            else:
                # "" rather than null (both valid): llama-cpp-python's server answers HTTP 500 to
                # null, and its chat templates fail on a missing content too.
                converted.append(
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [
                            {
                                "id": call.id,
                                "type": "function",
                                "function": {"name": call.name, "arguments": call.arguments},
                            }
                            for call in message.content
                        ],
                    }
                )
        elif isinstance(message, FunctionExecutionResultMessage):
            converted.extend(
                {"role": "tool", "tool_call_id": result.call_id, "content": result.content}
                for result in message.content
            )
        else:  # a TypeError, and AutoGen's ValueError ("Unknown message type") for code written for it
            raise check.ItemTypeError(f"not an LLM message: {type(message).__name__} (Unknown message type)")
    return converted


def _user_content(message: UserMessage, vision: bool) -> str | list[dict[str, Any]]:
    if isinstance(message.content, str):
        return message.content
    if not any(isinstance(part, Image) for part in message.content):
        return "\n".join(part for part in message.content if isinstance(part, str))
    if not vision:
        raise ValueError("this model has no vision (model_info['vision'] is False) but a user message holds an image")
    return [
        {"type": "text", "text": part}
        if isinstance(part, str)
        else {"type": "image_url", "image_url": {"url": part.data_uri}}
        for part in message.content
    ]


def to_openai_tools(tools: Sequence[ToolSchema]) -> list[dict[str, Any]]:
    """Tool schemas (handoff tools included) as Chat Completions ``function`` tools."""
    converted = []
    for tool in tools:
        function: dict[str, Any] = {"name": tool["name"]}
        if tool.get("description"):
            function["description"] = tool["description"]
        function["parameters"] = tool.get("parameters") or {"type": "object", "properties": {}}
        if "strict" in tool:
            function["strict"] = bool(tool["strict"])
        converted.append({"type": "function", "function": function})
    return converted


def strict_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of ``model`` as structured outputs want it: every object closed, every key required."""

    def close(node: Any) -> Any:
        if isinstance(node, dict):
            node = {key: close(value) for key, value in node.items()}
            if node.get("type") == "object" and "properties" in node:
                node["additionalProperties"] = False
                node["required"] = list(node["properties"])
            return node
        if isinstance(node, list):
            return [close(item) for item in node]
        return node

    schema: dict[str, Any] = close(model.model_json_schema())
    return schema


def response_format(json_output: bool | type[BaseModel] | None, info: ModelInfo) -> dict[str, Any] | None:
    """The ``response_format`` parameter for ``json_output`` (``None``: none sent; ``False``: plain text
    asked for, as AutoGen's client asks, whatever the create args say)."""
    if json_output is None:
        return None
    if json_output is False:
        return {"type": "text"}
    if json_output is True:
        if not info.get("json_output", False):
            raise ValueError("this model has no JSON mode (model_info['json_output'] is False)")
        return {"type": "json_object"}
    if isinstance(json_output, type) and issubclass(json_output, BaseModel):
        if not info.get("structured_output", False):
            raise ValueError(
                f"this model has no structured output (model_info['structured_output'] is False), "
                f"so it cannot be asked for a {json_output.__name__}"
            )
        return {
            "type": "json_schema",
            "json_schema": {"name": json_output.__name__, "schema": strict_json_schema(json_output), "strict": True},
        }
    raise TypeError(f"json_output is a bool or a pydantic model class, got {json_output!r}")


# --------------------------------------------------------------------------- response assembly


def split_think(text: str) -> tuple[str | None, str]:
    """``(thought, rest)`` when ``text`` starts with a ``<think>...</think>`` block, else ``(None, text)``."""
    stripped = text.lstrip()
    if not stripped.startswith(_THINK_OPEN):
        return None, text
    end = stripped.find(_THINK_CLOSE)
    if end < 0:
        return stripped[len(_THINK_OPEN) :].strip(), ""
    return stripped[len(_THINK_OPEN) : end].strip(), stripped[end + len(_THINK_CLOSE) :].lstrip()


def _reasoning_of(obj: Any) -> str | None:
    """The ``reasoning_content`` / ``reasoning`` field compatible servers add to a stream's deltas."""
    extra = getattr(obj, "model_extra", None) or {}
    for name in _REASONING_FIELDS:
        value = extra[name] if name in extra else getattr(obj, name, None)
        if isinstance(value, str) and value:
            return value
    return None


def _reasoning_in(message: dict[str, Any]) -> str | None:
    """The ``reasoning_content`` / ``reasoning`` field of a completion's message (its JSON)."""
    for name in _REASONING_FIELDS:
        value = message.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def _join_thoughts(*parts: str | None) -> str | None:
    text = "\n".join(part for part in parts if part)
    return text or None


def _finish_reason(reason: str | None, has_calls: bool) -> FinishReason:
    if has_calls:
        return "function_calls"
    return _FINISH_REASONS.get(reason or "", "unknown")


class _MalformedError(ValueError):
    """A completion (or a stream's part) of a shape it cannot have: what is wrong with it."""


def _usage(usage: Any) -> RequestUsage:
    if usage is None:
        return UnreportedUsage()
    return usage_of(
        _tokens("prompt_tokens", usage.prompt_tokens), _tokens("completion_tokens", usage.completion_tokens)
    )


def _usage_in(usage: object) -> RequestUsage:
    """:func:`_usage` of a completion's JSON."""
    if usage is None:
        return UnreportedUsage()
    if not isinstance(usage, dict):
        raise _MalformedError(f"its usage is {check.short_repr(usage)}, not an object")
    return usage_of(
        _tokens("prompt_tokens", usage.get("prompt_tokens")),
        _tokens("completion_tokens", usage.get("completion_tokens")),
    )


def _tokens(name: str, count: object) -> int:
    """A usage's token count: an int, or a float that is one (none given: 0)."""
    if type(count) is int:
        return count
    if count is None:
        return 0
    if type(count) is float and count.is_integer():
        return int(count)
    raise _MalformedError(f"its usage.{name} is {check.short_repr(count)}, not a number of tokens")


def _kind_for_status(status: int) -> type[ModelError]:
    if status in (401, 403):
        return ModelAuthenticationError
    if status == 404:
        return ModelNotFoundError
    if status == 429:
        return ModelRateLimitError
    if status >= 500:
        return ModelServerError
    if status >= 400:
        return ModelBadRequestError
    return ModelError


#: Error codes and types servers put in an error event of a stream (OpenAI's codes, llama.cpp's and
#: Anthropic-style types), by the kind of error they mean.
_CODE_KINDS: dict[str, type[ModelError]] = {
    **dict.fromkeys(
        ("invalid_api_key", "authentication_error", "invalid_authentication", "permission_error", "unauthorized"),
        ModelAuthenticationError,
    ),
    **dict.fromkeys(("model_not_found", "not_found_error", "not_found"), ModelNotFoundError),
    **dict.fromkeys(("rate_limit_exceeded", "rate_limit_error", "insufficient_quota"), ModelRateLimitError),
    **dict.fromkeys(
        ("context_length_exceeded", "exceed_context_size_error", "invalid_request_error", "bad_request"),
        ModelBadRequestError,
    ),
    **dict.fromkeys(
        ("server_error", "internal_server_error", "api_error", "overloaded_error", "unavailable_error"),
        ModelServerError,
    ),
}


def _kind_for_code(code: object, type_: object) -> tuple[type[ModelError], int | None]:
    """The error class (and HTTP status, for a numeric code) of an in-stream error's code or type."""
    for value in (code, type_):
        if isinstance(value, bool):
            continue
        if isinstance(value, int) or (isinstance(value, str) and value.isdigit() and len(value) == 3):
            status = int(value)
            return _kind_for_status(status), status
        if isinstance(value, str) and value.lower() in _CODE_KINDS:
            return _CODE_KINDS[value.lower()], None
    return ModelError, None


def retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """The seconds an error answer asks to wait: ``retry-after-ms``, else ``retry-after`` (seconds or
    an HTTP date); ``None`` when it gives neither (or a value that is no time)."""
    if not headers:
        return None
    try:
        milliseconds = headers.get("retry-after-ms")
        value = headers.get("retry-after")
        if milliseconds is not None:
            seconds = float(milliseconds) / 1000
        elif value is None:
            return None
        else:
            try:
                seconds = float(value)
            except ValueError:
                from email.utils import parsedate_to_datetime

                seconds = parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError, OverflowError):
        return None
    return max(seconds, 0.0) if seconds == seconds and seconds != float("inf") else None


_MAX_SERVER_WORDS = 500
_WORD_KEYS = ("message", "detail", "msg", "error_message")


def server_words(error: Any) -> str | None:
    """What the server said in an error, whatever the shape of its body.

    OpenAI's ``{"error": {"message": ...}}``, FastAPI's ``{"detail": "..."}`` (llama-cpp-python,
    LiteLLM) and its validation errors (``{"detail": [{"loc": ..., "msg": ...}]}``), Express-style
    ``{"error": "TypeError", "message": "..."}``, or a plain-text body. ``None`` when it said nothing.
    """
    response = getattr(error, "response", None)
    text: str | None = None
    if response is not None:
        try:
            text = response.text
        except Exception:  # a stream's body that was never read
            text = None
    if text:
        try:
            data: Any = json.loads(text)
        except ValueError:
            data = text
        words = _words_of(data)
        if words:
            return words
    return _words_of(getattr(error, "body", None))


def _words_of(data: Any, depth: int = 0) -> str | None:
    if depth > 4:
        return None
    if isinstance(data, str):
        text = " ".join(data.split())
        return (text[:_MAX_SERVER_WORDS] + "...") if len(text) > _MAX_SERVER_WORDS else (text or None)
    if isinstance(data, list):
        parts = [words for item in data[:5] if (words := _words_of(item, depth + 1))]
        return "; ".join(parts) or None
    if not isinstance(data, dict):
        return None
    words = next(
        (
            found
            for key in ("message", "detail", "msg", "error_message")
            if (found := _words_of(data.get(key), depth + 1))
        ),
        None,
    )
    if words and isinstance(data.get("loc"), list):  # one FastAPI validation error
        words = f"{'.'.join(str(part) for part in data['loc'])}: {words}"
    inner = data.get("error")
    if isinstance(inner, dict):
        return _words_of(inner, depth + 1) or words
    if isinstance(inner, str) and inner.strip():
        name = inner.strip()
        return f"{name}: {words}" if words and words != name else name
    return words


class _ThinkFilter:
    """Holds back streamed text while it may still be a leading ``<think>`` block; passes the rest on."""

    def __init__(self) -> None:
        self.state = "undecided"  # -> "thinking" -> "after" (skipping blank space) -> "text"
        self.held = ""
        self.thought: str | None = None

    def feed(self, piece: str) -> str:
        """The text to show now for ``piece`` (maybe empty)."""
        if self.state == "text":
            return piece
        if self.state == "after":
            piece = piece.lstrip()
            if piece:
                self.state = "text"
            return piece
        self.held += piece
        if self.state == "undecided":
            stripped = self.held.lstrip()
            if _THINK_OPEN.startswith(stripped):
                return ""
            if not stripped.startswith(_THINK_OPEN):
                self.state, out, self.held = "text", self.held, ""
                return out
            self.state = "thinking"
        end = self.held.find(_THINK_CLOSE)
        if end < 0:
            return ""
        self.thought, rest = split_think(self.held)
        self.state, self.held = ("text" if rest else "after"), ""
        return rest

    def finish(self) -> str:
        """At the end of the stream: the text still held back (a lone ``<think>`` is all thought)."""
        if self.state == "thinking":
            self.thought, _ = split_think(self.held)
            self.held = ""
            return ""
        out, self.held = self.held, ""
        return out


class OpenAIChatCompletionClientConfig(BaseModel):
    """The constructor's arguments (AutoGen's config fields); other fields are create arguments
    (``temperature``, ``seed``...). ``api_key`` is written only by ``dump_component(include_secrets=True)``."""

    model_config = ConfigDict(extra="allow", protected_namespaces=())

    model: str
    api_key: SecretStr | None = None
    base_url: str | None = None
    organization: str | None = None
    default_headers: dict[str, str] | None = None
    timeout: float | None = None
    max_retries: int | None = None
    model_info: dict[str, Any] | None = None
    model_capabilities: dict[str, Any] | None = None
    """AutoGen's older name of ``model_info``."""
    parallel_tool_calls: bool | None = None
    add_name_prefixes: bool | None = None
    """AutoGen's; nbagent never prefixes names (as AutoGen's default), so only ``False`` is supported."""
    include_name_in_message: bool | None = None
    """AutoGen's; nbagent sends no ``name`` field, and ignores it."""


class OpenAIChatCompletionClient(ChatCompletionClient):
    """A model behind the Chat Completions API (OpenAI or any compatible server via ``base_url``).

    ``api_key`` defaults to ``OPENAI_API_KEY`` (with a :class:`KeyFromEnvironmentWarning` when
    ``base_url`` names another server); a local server that needs no key only needs ``base_url``,
    and ``api_key=""`` sends no key whatever the environment holds (no ``Authorization`` header).
    ``timeout`` bounds a whole call, streamed or not (retries, and a stream's every chunk to the
    last, included): past it the call raises ``ModelTimeoutError``. ``max_retries`` goes to the SDK
    (it retries 408/409/429/5xx and broken connections with backoff, honouring ``Retry-After``),
    except inside a :class:`~nbagent.Batch`, which retries runs itself. ``model_info`` overrides the
    table of known models. Extra keyword arguments (``temperature``, ``max_tokens``, ``seed``...)
    are sent with every request. ``last_time_to_first_token`` holds the seconds from the request
    to the first streamed delta of the last stream.
    """

    # The OpenAI API, whichever server base_url names (vLLM, Ollama...): the conventions ask for the
    # client's best knowledge; the model name tells the rest.
    provider = "openai"
    component_config_schema = OpenAIChatCompletionClientConfig
    component_provider_override = "nbagent.OpenAIChatCompletionClient"
    key_variable = "OPENAI_API_KEY"
    """The environment variable a config without a key reads its key from."""
    component_aliases = (
        "autogen_ext.models.openai.OpenAIChatCompletionClient",
        "openai_chat_completion_client",  # AutoGen's well-known provider names
        "OpenAIChatCompletionClient",
    )

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        organization: str | None = None,
        default_headers: Mapping[str, str] | None = None,
        timeout: float | None = 60.0,
        max_retries: int = 2,
        model_info: ModelInfo | None = None,
        parallel_tool_calls: bool | None = None,
        **create_args: Any,
    ) -> None:
        super().__init__()
        where = "OpenAIChatCompletionClient"
        check.string(where, "model", model, empty=False)
        for param, value in (("api_key", api_key), ("base_url", base_url), ("organization", organization)):
            check.string(where, param, value, none=True)
        check.mapping(where, "default_headers", default_headers, "a dict of header names to values", none=True)
        check.number(where, "timeout", timeout, positive=True, none=True)
        check.integer(where, "max_retries", max_retries, minimum=0)
        check.mapping(where, "model_info", model_info, "a ModelInfo dict", none=True)
        check.boolean(where, "parallel_tool_calls", parallel_tool_calls, none=True)
        check.mapping(
            where,
            "stream_options",
            create_args.get("stream_options"),
            'a dict like {"include_usage": False}',
            none=True,
        )
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        given_url = base_url
        base_url, sdk_headers, url_secrets = _url_credentials(base_url, default_headers, key, api_key is None)
        if api_key is None and key and base_url is not None and not _is_openai(base_url):
            warnings.warn(
                f"OPENAI_API_KEY from the environment is sent to {base_url}, which is not OpenAI's API: "
                "pass that server's own api_key=..., or api_key='' to send no key",
                KeyFromEnvironmentWarning,
                stacklevel=2,
            )
        # No key (a local server that needs none): no Authorization header at all. A placeholder
        # would be sent as "Bearer <placeholder>", which some servers take for a wrong key
        # (LiteLLM answers 400 "No connected db." instead of its 401).
        self._keyless = not key
        if not key:
            if base_url is None and api_key is None:  # api_key="" is taken, as AutoGen does: the server says 401
                raise ValueError(
                    "no API key: pass api_key=... or set OPENAI_API_KEY (a local server that needs no "
                    "key only needs base_url=...)"
                )
            key = "no-key"  # the SDK insists on one; it is never sent (see _send_args)
        if model_info is None and base_url is None and not os.environ.get("OPENAI_BASE_URL") and not known_model(model):
            # AutoGen's error for a name OpenAI's API does not serve; another server names its models freely.
            raise ValueError("model_info is required when model name is not a valid OpenAI model")
        self._model = model
        self._config_args: dict[str, Any] = {  # what the constructor was given, for dump_component
            "model": model,
            "base_url": given_url,
            "organization": organization,
            "default_headers": dict(default_headers) if default_headers else None,
            "timeout": None if timeout == 60.0 else timeout,
            "max_retries": None if max_retries == 2 else max_retries,
            "model_info": dict(model_info) if model_info else None,
            "parallel_tool_calls": parallel_tool_calls,
            **create_args,
        }
        self._key_given = api_key is not None
        own_secrets = [
            None if self._keyless else key,
            *url_secrets,
            *_secret_values(default_headers),
            *_secret_values(create_args.get("extra_headers")),
        ]
        hold_secrets(own_secrets)  # masked in every artefact of the process, wherever they turn up
        self._secrets = known_secrets(own_secrets)
        self._client_args: dict[str, Any] = {
            "api_key": key,
            "base_url": base_url,  # the URL's user:password@ never reaches the SDK (see _url_credentials)
            "organization": organization,
            "default_headers": sdk_headers,
            "timeout": timeout,
            "max_retries": max_retries,
        }
        self._send_args: dict[str, Any] = (
            {"extra_headers": {"Authorization": _omit()()}}
            if self._keyless and not any(name.lower() == "authorization" for name in sdk_headers or {})
            else {}
        )
        self._client = self._new_sdk_client()
        self._client_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None
        self._closed = False
        self._timeout = timeout
        self.model_info = model_info_for(model) | (model_info or {})
        self.parallel_tool_calls = parallel_tool_calls
        self.create_args = dict(create_args)
        self.last_time_to_first_token: float | None = None

    def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[ToolSchema | Tool] = (),
        tool_choice: ToolChoice | Tool = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
        max_consecutive_empty_chunk_tolerance: int = 0,
        include_usage: bool | None = None,
    ) -> AsyncIterator[str | CreateResult]:
        """:meth:`ChatCompletionClient.create_stream` with AutoGen's OpenAI client's keywords: ``include_usage``
        (the stream's ``stream_options``; nbagent asks for the usage unless told ``False``; a different
        ``include_usage`` in ``extra_create_args['stream_options']`` is a ``ValueError``) and the deprecated
        ``max_consecutive_empty_chunk_tolerance`` (a ``DeprecationWarning``: empty chunks are skipped)."""
        if max_consecutive_empty_chunk_tolerance != 0:
            warnings.warn(
                "The 'max_consecutive_empty_chunk_tolerance' parameter is deprecated and will be removed in the "
                "future releases. Empty chunks are skipped.",
                DeprecationWarning,
                stacklevel=2,
            )
        if include_usage is not None:
            extra = dict(extra_create_args or {})
            options = dict(extra.get("stream_options") or {})
            if options.get("include_usage", include_usage) != include_usage:
                raise ValueError(
                    "include_usage and extra_create_args['stream_options']['include_usage'] are both set, but "
                    "differ in value."
                )
            extra["stream_options"] = {**options, "include_usage": include_usage}
            extra_create_args = extra
        return super().create_stream(
            messages,
            tools=tools,
            tool_choice=tool_choice,
            json_output=json_output,
            extra_create_args=extra_create_args,
            cancellation_token=cancellation_token,
        )

    @property
    def model_name(self) -> str:
        return self._model

    @property
    def base_url(self) -> str:
        return str(self._client.base_url)

    @property
    def context_window(self) -> int | None:
        """The model's context window in tokens (:data:`TOKEN_LIMITS`), ``None`` when nbagent does not know it
        (a model of another server, a name not in the table)."""
        return token_limit_for(self._model)

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Any] = ()) -> int:
        """AutoGen's: the tokens left in the model's context window once ``messages`` and ``tools`` are sent
        (:meth:`count_tokens`' estimate). A ``ValueError`` when the window is not known (:attr:`context_window`):
        a ``TokenLimitedChatCompletionContext`` then needs ``token_limit=...``."""
        window = self.context_window
        if window is None:
            raise ValueError(
                f"OpenAIChatCompletionClient: the context window of {self._model!r} is not known, so the tokens "
                "remaining cannot be told: give TokenLimitedChatCompletionContext a token_limit=..."
            )
        return window - self.count_tokens(messages, tools=tools)

    def __repr__(self) -> str:
        return f"OpenAIChatCompletionClient(model={self._model!r}, base_url={self.base_url!r})"

    def __getstate__(self) -> None:
        raise TypeError("OpenAIChatCompletionClient holds an API key and is not picklable")

    def _to_config(self) -> OpenAIChatCompletionClientConfig:
        args = dict(self._config_args)
        secrets = include_secrets()
        headers = args.get("default_headers")
        if headers and not secrets:
            args["default_headers"] = {name: v for name, v in headers.items() if not is_secret_name(name)} or None
        extra = args.get("extra_headers")
        if isinstance(extra, Mapping) and not secrets:  # a create argument: its secret headers left out too
            args["extra_headers"] = {name: v for name, v in extra.items() if not is_secret_name(str(name))} or None
        if self._keyless and self._key_given:
            args["api_key"] = ""  # api_key="": send no key, whatever the environment holds (no secret)
        elif secrets and self._key_given:
            args["api_key"] = self._client_args["api_key"]  # asked for: dump_component(include_secrets=True)
        return OpenAIChatCompletionClientConfig(**args)

    @classmethod
    def _from_config(cls, config: OpenAIChatCompletionClientConfig) -> Self:
        args = config.model_dump(exclude_none=True)
        args.pop("api_key", None)
        key = config.api_key.get_secret_value() if config.api_key is not None else None
        masked = key == MASKED_SECRET
        if masked:
            key = None
        if key is None:
            _check_environment_key(args.get("base_url"), masked)
        if masked:
            warnings.warn(
                "the config's api_key is masked ('**********', as a JSON export writes a SecretStr): "
                f"the key is read from {cls.key_variable} instead",
                UserWarning,
                stacklevel=3,
            )
        capabilities = args.pop("model_capabilities", None)
        if capabilities:
            args["model_info"] = {**capabilities, **args.get("model_info", {})}
        if args.pop("add_name_prefixes", False):
            warnings.warn(
                "OpenAIChatCompletionClient: add_name_prefixes=True is not supported (names are not prefixed)",
                UserWarning,
                stacklevel=3,
            )
        args.pop("include_name_in_message", None)
        return cls(api_key=key, **args)

    async def close(self) -> None:
        """Close its connections; a later call opens new ones."""
        await self._client.close()
        self._closed = True

    @property
    def reopens(self) -> bool:
        """``True``: a call after :meth:`close` opens new connections."""
        return True

    def _new_sdk_client(self) -> Any:
        # A plain HTTP client (the SDK's default one closes itself on the running loop when
        # dropped, which fails for a client left behind by a finished loop).
        return _sdk().AsyncOpenAI(**self._client_args, http_client=sdk_http_client())

    def _sdk_client(self) -> Any:
        """The SDK client for the running event loop.

        Its connections belong to the loop that opened them, so a client used from a new loop (a
        script calling ``nbagent.run`` twice runs two loops), or used again after :meth:`close`, gets a
        fresh SDK client.
        """
        loop = asyncio.get_running_loop()
        bound = self._client_loop() if self._client_loop is not None else None
        if bound is not loop or self._closed:
            if self._client_loop is not None or self._closed:
                self._client = self._new_sdk_client()
            self._client_loop, self._closed = weakref.ref(loop), False
        return self._client

    # ------------------------------------------------------------------ requests

    def build_request(self, call: ModelRequest, *, stream: bool = False) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for this call (no secrets in it)."""
        tools, tool_choice = call.tools, call.tool_choice
        messages: Sequence[LLMMessage] = call.messages
        if self.model_info.get("multiple_system_messages") is False:  # one system message, as AutoGen merges
            messages = merge_system_messages(messages)
        # The client's stream_options (AutoGen's switch) are for streams: OpenAI's API refuses them without one.
        create_args = {name: value for name, value in self.create_args.items() if name != "stream_options"}
        request: dict[str, Any] = {
            "model": self._model,
            "messages": to_openai_messages(messages, vision=bool(self.model_info.get("vision"))),
            **create_args,
        }
        if tools:
            if not self.model_info.get("function_calling", False):
                raise ValueError("this model has no function calling (model_info['function_calling'] is False)")
            request["tools"] = to_openai_tools(tools)
            names = {tool["name"] for tool in tools}
            if tool_choice in ("auto", "required", "none"):
                request["tool_choice"] = tool_choice
            elif tool_choice in names:
                request["tool_choice"] = {"type": "function", "function": {"name": tool_choice}}
            else:
                raise ValueError(f"tool_choice {tool_choice!r} is neither auto/required/none nor an offered tool")
            if self.parallel_tool_calls is not None:
                request["parallel_tool_calls"] = self.parallel_tool_calls
        if stream:
            request["stream"] = True
            request["stream_options"] = {"include_usage": True, **(self.create_args.get("stream_options") or {})}
        request.update(call.extra_create_args)
        fmt = response_format(call.json_output, self.model_info)
        if fmt is not None:  # json_output wins over a response_format of the create args, as in AutoGen
            given = request.get("response_format")
            if given is not None and given != fmt and not _is_model_class(given) and _is_model_class(call.json_output):
                warnings.warn(
                    "response_format is found in extra_create_args while json_output is set to a Pydantic "
                    "model class. Skipping the response_format in extra_create_args in favor of the "
                    "json_output. Structured output will be used.",
                    UserWarning,
                    stacklevel=4,
                )
            request["response_format"] = fmt
        return request

    def _structured(self, call: ModelRequest, *, warn: bool = True) -> ModelRequest:
        """``call`` with a pydantic class given as ``response_format`` in the create args (AutoGen's older
        spelling, with its ``DeprecationWarning``) as its ``json_output``; a ``ValueError`` when
        ``json_output`` is a class too. Any other ``call`` as it is."""
        given = call.extra_create_args.get("response_format", self.create_args.get("response_format"))
        if not _is_model_class(given):
            return call
        if _is_model_class(call.json_output):
            raise ValueError(
                "response_format and json_output cannot be set to a Pydantic model class at the same time."
            )
        if warn:
            warnings.warn(
                "Using response_format to specify the BaseModel for structured output type will be deprecated. "
                "Use json_output in create and create_stream instead.",
                DeprecationWarning,
                stacklevel=4,
            )
        extra = {name: value for name, value in call.extra_create_args.items() if name != "response_format"}
        return ModelRequest(call.messages, call.tools, call.tool_choice, given, extra)

    def request_parameters(self, call: ModelRequest, *, stream: bool = False) -> dict[str, Any]:
        """The parameters the request for ``call`` puts in the JSON body besides its messages and tool
        definitions, as the server receives them: ``model``, the client's create args, ``tool_choice``
        and ``parallel_tool_calls`` as sent, ``response_format``, the stream options and the call's
        ``extra_create_args``, with an ``extra_body``'s keys merged in (the SDK merges them into the
        body, where they win). Headers, query parameters and the timeout are not in the body.

        What a trace records of an LLM call (``llm_calls_df``'s ``tool_choice`` and ``request_params``).
        Raises what :meth:`build_request` raises for a request that cannot be sent.
        """
        bare = self._structured(
            ModelRequest([], call.tools, call.tool_choice, call.json_output, call.extra_create_args), warn=False
        )
        body, options = self._post_arguments(self.build_request(bare, stream=stream))
        extra = options.get("extra_json")
        if isinstance(extra, Mapping):
            body.update(extra)
        body.pop("messages", None)
        body.pop("tools", None)
        return body

    def _error(self, error: BaseException) -> ModelError:
        """The nbagent error for an SDK or decoding error, secrets masked."""
        openai = _sdk()
        where = f"{self._model} at {self.base_url}"
        kind: type[ModelError] = ModelError
        status: int | None = None
        retry_after: float | None = None
        if isinstance(error, openai.APIStatusError):
            status = error.status_code
            kind = _kind_for_status(status)
            message = f"{where}: HTTP {status}: {server_words(error) or error.message}"
            retry_after = retry_after_s(getattr(error.response, "headers", None))
        elif isinstance(error, openai.APITimeoutError):
            kind = ModelTimeoutError
            message = f"{where}: no answer within the timeout ({self._timeout} s)"
        elif isinstance(error, openai.APIConnectionError):
            kind = ModelConnectionError
            cause = error.__cause__ or error.__context__
            message = f"{where}: connection failed or broke: {cause or error.message}"
        elif isinstance(error, openai.APIError):
            # An error event inside a 200 stream: its code (or type) says what kind it is.
            kind, status = _kind_for_code(error.code, error.type)
            label = next((str(x) for x in (error.code, error.type) if x not in (None, "")), None)
            words = server_words(error) or error.message
            message = f"{where}: the server reported an error{f' ({label})' if label else ''}: {words}"
        elif isinstance(error, json.JSONDecodeError):
            kind = ModelResponseError
            message = f"{where}: malformed JSON in the response: {error.msg} in {error.doc[:200]!r}"
        elif isinstance(error, UnicodeDecodeError):
            kind = ModelResponseError
            message = f"{where}: the response is not UTF-8 text ({error.reason} at byte {error.start})"
        elif isinstance(error, _MalformedError):
            kind = ModelResponseError
            message = f"{where}: malformed response: {error}"
        elif isinstance(error, ValidationError):
            kind = ModelResponseError
            first = error.errors()[0]
            place = ".".join(str(part) for part in first["loc"])
            message = f"{where}: malformed response: {error.title}.{place}: {first['msg']}"
        else:
            kind = ModelResponseError
            message = f"{where}: unusable response: {type(error).__name__}: {error}"
        message = mask(message, process_secrets(self._secrets))  # the one rule: any secret of the process
        return kind(message, status=status, model=self._model, retry_after=retry_after)

    def _overtime(self, streaming: bool = False) -> ModelTimeoutError:
        """The error of a call that took longer than the client's ``timeout`` in all."""
        what = "the stream did not end" if streaming else "no answer"
        message = f"{self._model} at {self.base_url}: {what} within the timeout ({self._timeout} s)"
        return ModelTimeoutError(mask(message, process_secrets(self._secrets)), model=self._model)

    def _post_arguments(self, sent: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The JSON body and the SDK's request options that ``chat.completions.create(**sent)`` (with
        this client's own send arguments) posts to ``/chat/completions``.

        ``create()`` first runs its arguments through the SDK's transform by their type hints, which
        changes nothing in the JSON-ready dicts :meth:`build_request` makes (the chat parameters have
        no aliases or formats) and costs 0.1-0.4 ms of CPU a request, more than the rest of nbagent's
        call. The SDK's own ``post()`` sends the same request (same body, headers, auth, retries,
        timeouts and errors) without it. As in ``create()``, ``NotGiven``/``Omit`` values are left out.
        """
        not_given = _sdk().NotGiven
        unset = (not_given, _omit())
        body: dict[str, Any] = {}
        options: dict[str, Any] = {"security": {"bearer_auth": True}}
        headers: dict[str, Any] = {}
        # The client's own send arguments first: the caller's extra headers win over them (an
        # Authorization of their own on a keyless client is sent, not omitted), names without case.
        for name, value in (*self._send_args.items(), *sent.items()):
            if name == "extra_headers":
                headers = _merged_headers(headers, value)
            elif name == "extra_query":
                if value is not None:
                    options["params"] = value
            elif name == "extra_body":
                if value is not None:
                    options["extra_json"] = value
            elif name == "timeout":
                if not isinstance(value, not_given):
                    options["timeout"] = value
            elif name == "response_format" and isinstance(value, type):
                # a pydantic class became the json_output (_structured); another class is no format
                raise TypeError(
                    f"OpenAIChatCompletionClient: response_format is the class {value.__name__}, neither a "
                    "response_format dict nor a pydantic model class: give the agent output_content_type=..., "
                    "or the call json_output=..., and nbagent sends its JSON schema"
                )
            elif not isinstance(value, unset):
                body[name] = value
        if headers:
            options["headers"] = headers
        if OUTER_RETRIES.get():  # a caller that retries itself (a Batch): each of its tries is one request
            options["max_retries"] = 0
        return body, options

    async def complete(
        self, request: ModelRequest, cancellation_token: CancellationToken | None = None
    ) -> CreateResult:
        request = self._structured(request)
        sent = self.build_request(request)
        body, options = self._post_arguments(sent)
        completions = self._sdk_client().chat.completions
        parse = _is_model_class(request.json_output) and _replaced("parse", completions)
        try:
            # The completion's bytes (the SDK's status errors, retries and timeouts as for create()),
            # read here as JSON, without the SDK's models of it, which cost more CPU than the rest of
            # the conversion (a batch of short calls is CPU-bound). The timeout bounds the whole call,
            # however slowly the answer trickles in (the SDK's timeout bounds each read).
            async with asyncio.timeout(self._timeout):
                if parse or _replaced("create", completions):  # patched or mocked by the user's code
                    completions, args = self._completions(), self._create_arguments(sent)
                    if parse:  # as AutoGen calls it for a structured output: the class as response_format
                        call = completions.parse(**{**args, "response_format": request.json_output})
                    else:
                        call = completions.create(**args)
                    answer = await guarded(call, cancellation_token)
                else:
                    answer = await guarded(
                        self._sdk_client().post("/chat/completions", cast_to=bytes, body=body, options=options),
                        cancellation_token,
                    )
        except TimeoutError:
            raise self._overtime() from None
        except (_sdk().OpenAIError, AttributeError, TypeError) as error:  # the answer's JSON is read below
            raise self._error(error) from None
        try:
            completion = json.loads(answer) if isinstance(answer, bytes) else _json_of(answer)
            result = self._result(completion)
        except (ValueError, AttributeError, TypeError, LookupError) as error:
            # ValueError: malformed JSON, a body that is not UTF-8 text, a value the result's models reject
            raise self._error(error) from None
        self._count_usage(result.usage, actual=True)
        tools = sent.get("tools", ())
        tell(
            lambda: CallEvent(
                "call", sent["messages"], completion, result.usage, tools, self._quirks(result, completion)
            )
        )
        return result

    def _quirks(self, result: CreateResult, completion: Any = None) -> tuple[Quirk, ...]:
        """What was odd in an answer read as ``result`` (from ``completion``'s JSON when not streamed)."""
        found: list[Quirk] = []
        choice: Any = completion["choices"][0] if isinstance(completion, dict) else {}
        calls = (choice.get("message") or {}).get("tool_calls") or ()
        if calls and choice.get("finish_reason") != "tool_calls":
            found.append(Quirk("finish_reason", str(choice.get("finish_reason"))))
        for call in calls:
            arguments = (call.get("function") or {}).get("arguments")
            if isinstance(arguments, dict):
                found.append(Quirk("arguments", str(arguments)))
        if isinstance(result.content, str) and result.thought is None and self.model_info.get("family") == "r1":
            found.append(Quirk("no_think"))
        return tuple(found)

    def _completions(self) -> Any:
        """The SDK client's ``chat.completions`` for the running loop; inside a caller that retries itself,
        one of a copy that does not retry (as :meth:`_post_arguments` says), unless the user's code set
        a method on the client's own (a mock is called where it was set)."""
        completions = self._sdk_client().chat.completions
        if not OUTER_RETRIES.get() or {"create", "parse"} & vars(completions).keys():
            return completions
        return self._sdk_client().with_options(max_retries=0).chat.completions

    def _create_arguments(self, sent: dict[str, Any]) -> dict[str, Any]:
        """``sent`` (:meth:`build_request`) with this client's own send arguments: the keyword arguments of
        ``chat.completions.create``, for an SDK method the user's code replaced (:func:`_replaced`)."""
        own = self._send_args.get("extra_headers")
        if not own:
            return sent
        return {**sent, "extra_headers": _merged_headers(own, sent.get("extra_headers"))}

    def _result(self, completion: Any) -> CreateResult:
        """The ``CreateResult`` of a completion's JSON (a shape that is not one raises ``ModelResponseError``)."""
        choices = completion.get("choices") if isinstance(completion, dict) else None
        if not choices:
            raise ModelResponseError(
                f"{self._model} at {self.base_url}: the response has no choices", model=self._model
            )
        choice = choices[0]
        message = choice["message"]
        text = message.get("content")
        if text is None:
            text = message.get("refusal") or ""
        think, text = split_think(text)
        thought = _join_thoughts(_reasoning_in(message), think)
        calls = []
        for call in message.get("tool_calls") or ():
            function = call.get("function")
            name, arguments = (function.get("name"), function.get("arguments")) if function else (None, "")
            calls.append(self._function_call(call.get("id"), name, arguments))
        response_model, response_id = _answered_by_json(completion)
        usage = _usage_in(completion.get("usage"))
        if calls:
            return share_fields_set(
                CreateResult(
                    finish_reason="function_calls",
                    content=calls,
                    usage=usage,
                    thought=_join_thoughts(thought, text),
                    response_model=response_model,
                    response_id=response_id,
                )
            )
        return share_fields_set(
            CreateResult(
                finish_reason=_finish_reason(choice.get("finish_reason"), False),
                content=text,
                usage=usage,
                thought=thought,
                response_model=response_model,
                response_id=response_id,
            )
        )

    def _function_call(self, call_id: object, name: object, arguments: object) -> FunctionCall:
        """A tool call as the server gave it: an int id as its text, arguments given as a JSON object
        (some compatible servers) as their JSON text; a call of another shape is an error."""
        if not name:
            raise ModelResponseError(
                f"{self._model} at {self.base_url}: a tool call has no function name", model=self._model
            )
        if type(name) is not str:
            raise _MalformedError(f"a tool call's function name is {check.short_repr(name)}, not a string")
        if type(call_id) is int:
            call_id = str(call_id)
        elif call_id is not None and type(call_id) is not str:
            raise _MalformedError(f"the id of tool call {name!r} is {check.short_repr(call_id)}, not a string")
        if isinstance(arguments, dict):
            arguments = json.dumps(arguments, ensure_ascii=False)
        elif arguments is not None and type(arguments) is not str:
            raise _MalformedError(
                f"the arguments of tool call {name!r} are {check.short_repr(arguments)}, not a JSON string"
            )
        return function_call(call_id or f"call_{new_id()}", name, arguments or "")

    async def complete_stream(
        self,
        request: ModelRequest,
        cancellation_token: CancellationToken | None = None,
        stream: ModelStream | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        request = self._structured(request)
        sent = self.build_request(request, stream=True)
        body, options = self._post_arguments(sent)
        structured = _is_model_class(request.json_output) and _replaced("__aenter__")
        started = time.perf_counter()
        # The timeout bounds the whole call: the request and every chunk to the last (a stream that
        # trickles comments or chunks for ever ends with ModelTimeoutError; the SDK's bounds each read).
        deadline = None if self._timeout is None else asyncio.get_running_loop().time() + self._timeout
        self.last_time_to_first_token = None
        try:
            openai = _sdk()
            chat = openai.types.chat
            async with asyncio.timeout_at(deadline):
                if structured:  # the user's code replaced the SDK's stream manager: AutoGen's call for a class
                    args = {**self._create_arguments(sent), "response_format": request.json_output}
                    del args["stream"]
                    manager = self._completions().stream(**args)
                    response: Any = _chunk_events(manager, await guarded(manager.__aenter__(), cancellation_token))
                elif _replaced("create", self._sdk_client().chat.completions):  # patched or mocked: called
                    call = self._completions().create(**self._create_arguments(sent))
                    response = await guarded(call, cancellation_token)
                else:
                    response = await guarded(
                        self._sdk_client().post(
                            "/chat/completions",
                            cast_to=chat.ChatCompletion,
                            body=body,
                            options=options,
                            stream=True,
                            stream_cls=openai.AsyncStream[chat.ChatCompletionChunk],
                        ),
                        cancellation_token,
                    )
        except TimeoutError:
            raise self._overtime() from None
        except _sdk().OpenAIError as error:
            raise self._error(error) from None
        chunks = response.__aiter__()
        assembly = _StreamAssembly()
        try:
            while True:
                try:
                    async with asyncio.timeout_at(deadline):
                        chunk = await guarded(chunks.__anext__(), cancellation_token)
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    raise self._overtime(streaming=True) from None
                if not assembly.chunks:
                    tell(lambda: CallEvent("stream_start", sent["messages"]))
                shown = assembly.feed(chunk)
                if assembly.first_delta_perf is not None and self.last_time_to_first_token is None:
                    self.last_time_to_first_token = assembly.first_delta_perf - started
                    if stream is not None:
                        stream.first_chunk_perf = assembly.first_delta_perf
                for piece in shown:
                    yield piece
            rest = assembly.finish()
            if rest:
                yield rest
        except (_sdk().OpenAIError, json.JSONDecodeError, AttributeError, TypeError) as error:
            raise self._error(error) from None
        finally:
            await _close(response)
        try:
            result = self._stream_result(assembly)
        except ValueError as error:  # a usage or a tool call of a shape it cannot have
            raise self._error(error) from None
        self._count_usage(result.usage, actual=True)
        tell(lambda: CallEvent("stream_end", response=result, usage=result.usage, quirks=self._quirks(result)))
        yield result

    def _stream_result(self, assembly: _StreamAssembly) -> CreateResult:
        """The result a finished stream assembled, or the error for a stream that did not finish."""
        where = f"{self._model} at {self.base_url}"
        if not assembly.saw_choice:
            raise ModelResponseError(f"{where}: the stream ended without any choice", model=self._model)
        if assembly.finish_reason is None:
            raise ModelResponseError(
                f"{where}: the stream ended before the model finished (no finish_reason)", model=self._model
            )
        usage = _usage(assembly.usage)
        thought = _join_thoughts("".join(assembly.reasoning), assembly.think.thought)
        text = "".join(assembly.text)
        if assembly.calls:
            return CreateResult(
                finish_reason="function_calls",
                content=[
                    self._function_call(slot["id"], slot["name"], slot["arguments"])
                    for _, slot in sorted(assembly.calls.items())
                ],
                usage=usage,
                thought=_join_thoughts(thought, text),
                response_model=assembly.response_model,
                response_id=assembly.response_id,
            )
        return CreateResult(
            finish_reason=_finish_reason(assembly.finish_reason, False),
            content=text,
            usage=usage,
            thought=thought,
            response_model=assembly.response_model,
            response_id=assembly.response_id,
        )


def _merged_headers(first: Mapping[str, Any], then: Mapping[str, Any] | None) -> dict[str, Any]:
    """``first``'s headers, then ``then``'s, which win over ``first``'s of the same name (names without case)."""
    if not then:
        return dict(first)
    given = {name.lower() for name in then}
    return {**{name: v for name, v in first.items() if name.lower() not in given}, **then}


def _is_model_class(json_output: object) -> bool:
    return isinstance(json_output, type) and issubclass(json_output, BaseModel)


def _json_of(completion: Any) -> Any:
    """A completion an SDK method the user's code replaced answered (the SDK's model, or a dict), as JSON data."""
    dump = getattr(completion, "model_dump", None)
    return dump(mode="json") if callable(dump) else completion


async def _chunk_events(manager: Any, events: Any) -> AsyncGenerator[Any, None]:
    """The chunks of an SDK stream manager's events (``type == "chunk"``); the manager closed at the end."""
    try:
        async for event in events:
            if getattr(event, "type", None) == "chunk":
                yield event.chunk
    finally:
        await manager.__aexit__(None, None, None)


async def _close(response: Any) -> None:
    """Close a stream: the SDK's (``close()``), or an async generator a replaced SDK method gave (``aclose()``)."""
    close = getattr(response, "close", None) or getattr(response, "aclose", None)
    closed = close() if callable(close) else None
    if inspect.isawaitable(closed):
        await closed


def _answered_by(chunk: Any) -> tuple[str | None, str | None]:
    """The model and id a server gave a stream's chunk, where it gave them."""
    return _named(getattr(chunk, "model", None), getattr(chunk, "id", None))


def _answered_by_json(completion: dict[str, Any]) -> tuple[str | None, str | None]:
    """The model and id a server gave a completion (its JSON), where it gave them."""
    return _named(completion.get("model"), completion.get("id"))


def _named(model: object, answer_id: object) -> tuple[str | None, str | None]:
    return (
        model if isinstance(model, str) and model else None,
        answer_id if isinstance(answer_id, str) and answer_id else None,
    )


class _StreamAssembly:
    """What the chunks of one stream add up to: text, reasoning, tool calls, finish reason, usage."""

    def __init__(self) -> None:
        self.think = _ThinkFilter()
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.reasoning_open = False  # a reasoning field's pieces are being streamed inside <think>
        self.calls: dict[int, dict[str, str]] = {}
        self.finish_reason: str | None = None
        self.usage: Any = None
        self.saw_choice = False
        self.first_delta_perf: float | None = None
        self.response_model: str | None = None
        self.response_id: str | None = None
        self.chunks = 0

    def feed(self, chunk: Any) -> tuple[str, ...]:
        """Take one chunk (:attr:`chunks` counts them); the pieces of text to stream now (maybe none), as
        AutoGen's client streams them: a reasoning field's pieces inside ``<think>``...``</think>``
        (closed by the first delta without one), then the text as it comes, a ``<think>`` block in it
        included. The result's text and thought are assembled apart (the block taken out of the text)."""
        self.chunks += 1
        if self.response_id is None:  # every chunk of a stream names the same answer: read the first
            self.response_model, self.response_id = _answered_by(chunk)
        if chunk.usage is not None:
            self.usage = chunk.usage
        if not chunk.choices:
            return ()
        self.saw_choice = True
        choice = chunk.choices[0]
        if choice.finish_reason is not None:
            self.finish_reason = choice.finish_reason
        delta = choice.delta
        if delta is None:
            return ()
        reasoning = _reasoning_of(delta)
        streamed = ""
        if reasoning:
            self.reasoning.append(reasoning)
            streamed = reasoning if self.reasoning_open else _THINK_OPEN + reasoning
            self.reasoning_open = True
        elif reasoning is None and self.reasoning_open:
            streamed, self.reasoning_open = _THINK_CLOSE, False
        for call in delta.tool_calls or []:
            self._add_call(call)
        if self.first_delta_perf is None and (reasoning or delta.content or delta.tool_calls):
            self.first_delta_perf = time.perf_counter()
        if not delta.content:
            return (streamed,) if streamed else ()
        visible = self.think.feed(delta.content)
        if visible:
            self.text.append(visible)
        return (streamed, delta.content) if streamed else (delta.content,)

    def _add_call(self, call: Any) -> None:
        slot = self.calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
        if call.id:
            slot["id"] = call.id
        if call.function is not None:
            if call.function.name:
                slot["name"] += call.function.name
            arguments = call.function.arguments
            if isinstance(arguments, dict):  # some servers stream the arguments as one JSON object
                arguments = json.dumps(arguments, ensure_ascii=False)
            if arguments:
                slot["arguments"] += arguments

    def finish(self) -> str:
        """At the end of the stream: nothing more to stream (every piece went as it came); the text
        the ``<think>`` filter still held joins the result's."""
        rest = self.think.finish()
        if rest:
            self.text.append(rest)
        return ""
