"""nbagent's model calls on AutoGen's event logger, as AutoGen's OpenAI client logs its own.

AutoGen's tracing and cost tools read ``LLMCallEvent``, ``LLMStreamStartEvent`` and ``LLMStreamEndEvent``
(``autogen_core.logging``) from the logger ``autogen_core.EVENT_LOGGER_NAME``; its client also warns
(``UserWarning``) about an answer's quirks. :func:`call_event` listens to the core's
``models.base.CALL_EVENT`` and, once AutoGen is imported, does both with the same fields and words
(the events find the AutoGen agent they run under themselves: ``agent_id``).
"""

from __future__ import annotations

import logging
import sys
import warnings

from ..messages import CreateResult, RequestUsage
from ..models.base import CallEvent, Quirk


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
