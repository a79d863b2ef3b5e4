"""nbagent's model calls on AutoGen's event logger, as AutoGen's OpenAI client logs its own.

AutoGen's tracing and cost tools read ``LLMCallEvent``, ``LLMStreamStartEvent`` and ``LLMStreamEndEvent``
(``autogen_core.logging``) from the logger ``autogen_core.EVENT_LOGGER_NAME``; its client also warns
(``UserWarning``) about an answer's quirks. :func:`call_event` listens to the core's
``models.base.CALL_EVENT`` and, once AutoGen is imported, does both with the same fields and words
(the events find the AutoGen agent they run under themselves: ``agent_id``). :func:`tool_ran` listens to
``tools.TOOL_RAN`` and logs each returned tool call as AutoGen's tools do (``ToolCallEvent``).
"""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Mapping
from typing import Any

from ..messages import CreateResult, RequestUsage
from ..models.base import CallEvent, Quirk
from ..tools import BaseTool


def _warning(quirk: Quirk) -> str:
    """AutoGen's words for ``quirk``."""
    if quirk.kind == "finish_reason":
        return (
            f"Finish reason mismatch: {quirk.detail} != tool_calls when tool_calls are present. Finish reason may "
            "not be accurate. This may be due to the API used that is not returning the correct finish reason."
        )
    if quirk.kind == "arguments":
        return (
            f"Tool call function arguments field is not a string: {quirk.detail}.This is unexpected and may due to "
            "the API used not returning the correct type. Attempting to convert it to string."
        )
    return "Could not find <think>..</think> field in model response content. No thought was extracted."


def call_event(event: CallEvent) -> None:
    """Log ``event`` on AutoGen's event logger and warn its quirks, once AutoGen is imported."""
    events = sys.modules.get("autogen_core.logging")
    core = sys.modules.get("autogen_core")
    if events is None or core is None:
        return
    for quirk in event.quirks:
        warnings.warn(_warning(quirk), UserWarning, stacklevel=2)
    logger = logging.getLogger(core.EVENT_LOGGER_NAME)
    if not logger.isEnabledFor(logging.INFO):
        return
    usage = event.usage or RequestUsage()
    if event.kind == "stream_start":
        logger.info(events.LLMStreamStartEvent(messages=list(event.messages)))
        return
    response = event.response
    data = response.model_dump(mode="json") if isinstance(response, CreateResult) else dict(response or {})
    if event.kind == "call":
        logger.info(
            events.LLMCallEvent(
                messages=list(event.messages),
                response=data,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                tools=list(event.tools),
            )
        )
    else:
        logger.info(
            events.LLMStreamEndEvent(
                response=data, prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens
            )
        )


def tool_ran(tool: BaseTool[Any, Any], args: Mapping[str, Any], value: object) -> None:
    """Log a tool call that returned as AutoGen's ``BaseTool.run_json`` does, once AutoGen is imported
    and its event logger takes ``INFO`` (only then is the result's text made)."""
    events = sys.modules.get("autogen_core.logging")
    core = sys.modules.get("autogen_core")
    if events is None or core is None:
        return
    logger = logging.getLogger(core.EVENT_LOGGER_NAME)
    if logger.isEnabledFor(logging.INFO):
        result = tool.return_value_as_string(value)
        logger.info(events.ToolCallEvent(tool_name=tool.name, arguments=dict(args), result=result))
