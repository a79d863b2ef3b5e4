"""Model contexts: the agent's short-term memory, and the view of it the model is sent.

Every context keeps all messages added to it; ``get_messages`` returns the view the model gets:
everything (unbounded), the last N (buffered), what fits a token budget (token-limited), or the first
and last few (head and tail). A view never begins with tool results whose call was cut away, nor
ends its head with calls whose results were cut: the OpenAI API rejects both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from . import _check as check
from .messages import (
    AssistantMessage,
    FunctionCall,
    FunctionExecutionResultMessage,
    Image,
    LLMMessage,
    SystemMessage,
    UserMessage,
    llm_messages_adapter,
)

_LLM_MESSAGES = (SystemMessage, UserMessage, AssistantMessage, FunctionExecutionResultMessage)
_LLM_EXPECTED = "an LLM message (SystemMessage, UserMessage, AssistantMessage, FunctionExecutionResultMessage)"


def _initial(where: str, initial_messages: object) -> list[LLMMessage]:
    """``initial_messages``: None or a list of LLM messages."""
    if initial_messages is None:
        return []
    expected = "a list of LLM messages (UserMessage...) or None"
    items = check.sequence(where, "initial_messages", initial_messages, expected)
    for index, item in enumerate(items):
        check.instance(where, f"initial_messages[{index}]", item, _LLM_MESSAGES, _LLM_EXPECTED)
    return items


def message_text(message: LLMMessage) -> str:
    """The text of an LLM message as the model would read it (tool calls as JSON)."""
    content = message.content
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for item in content:
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, Image):
            parts.append(f"[image {item.mime_type}]")
        elif isinstance(item, FunctionCall):
            parts.append(item.to_text())
        else:
            parts.append(item.content)
    return "\n".join(parts)


def estimate_tokens(message: LLMMessage) -> int:
    """A model-independent token estimate: four characters a token plus a per-message overhead."""
    text = message_text(message)
    # isinstance, not getattr/hasattr: a missing attribute goes through pydantic's slow __getattr__.
    thought = (message.thought or "") if isinstance(message, AssistantMessage) else ""
    return (len(text) + len(thought) + 3) // 4 + 4


def _drop_orphan_results(messages: list[LLMMessage]) -> list[LLMMessage]:
    """Remove tool results at the start of a view: their call is not in it."""
    start = 0
    while start < len(messages) and isinstance(messages[start], FunctionExecutionResultMessage):
        start += 1
    return messages[start:]


def _drop_unanswered_calls(messages: list[LLMMessage]) -> list[LLMMessage]:
    """Remove tool calls at the end of a head: their results are not in it."""
    end = len(messages)
    while end and isinstance(messages[end - 1], AssistantMessage) and not isinstance(messages[end - 1].content, str):
        end -= 1
    return messages[:end]


class ChatCompletionContext:
    """Holds the messages of a conversation; subclasses decide what the model sees.

    ``_messages`` is only ever appended to; ``clear`` and ``load_state`` replace the list rather than
    change it, so that a trace can keep the lists as the history of the context without copying.
    """

    def __init__(self, initial_messages: Sequence[LLMMessage] | None = None) -> None:
        self._messages: list[LLMMessage] = _initial(type(self).__name__, initial_messages)

    async def add_message(self, message: LLMMessage) -> None:
        self._messages.append(message)

    async def get_messages(self) -> list[LLMMessage]:
        """The messages the model is sent."""
        return list(self._messages)

    @property
    def messages(self) -> list[LLMMessage]:
        """Every message held, in order (not only the view); a copy."""
        return list(self._messages)

    @property
    def message_log(self) -> list[LLMMessage]:
        """The list the messages are held in, not a copy: only ever appended to (``clear`` and
        ``load_state`` replace it), so a reader (the trace) can keep it as the context's history.
        Read it; never change it."""
        return self._messages

    async def clear(self) -> None:
        self._messages = []

    async def save_state(self) -> dict[str, Any]:
        return {"messages": llm_messages_adapter.dump_python(self._messages, mode="json")}

    async def load_state(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict) or not isinstance(state.get("messages"), list):
            raise ValueError("a context state is a dict with a 'messages' list")
        self._messages = llm_messages_adapter.validate_python(state["messages"])

    def __len__(self) -> int:
        return len(self._messages)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self._messages)} messages)"


class UnboundedChatCompletionContext(ChatCompletionContext):
    """The model sees every message."""


class BufferedChatCompletionContext(ChatCompletionContext):
    """The model sees the last ``buffer_size`` messages."""

    def __init__(self, buffer_size: int, initial_messages: Sequence[LLMMessage] | None = None) -> None:
        check.integer(type(self).__name__, "buffer_size", buffer_size, minimum=1)
        super().__init__(initial_messages)
        self.buffer_size = buffer_size

    async def get_messages(self) -> list[LLMMessage]:
        return _drop_orphan_results(self._messages[-self.buffer_size :])


class TokenLimitedChatCompletionContext(ChatCompletionContext):
    """The model sees the newest messages that fit in ``token_limit`` tokens.

    ``count_tokens`` counts one message; the default is :func:`estimate_tokens`.
    """

    def __init__(
        self,
        token_limit: int,
        count_tokens: Callable[[LLMMessage], int] = estimate_tokens,
        initial_messages: Sequence[LLMMessage] | None = None,
    ) -> None:
        where = type(self).__name__
        check.integer(where, "token_limit", token_limit, minimum=1)
        check.function(where, "count_tokens", count_tokens, "a function (message) -> int")
        super().__init__(initial_messages)
        self.token_limit = token_limit
        self.count_tokens = count_tokens

    async def get_messages(self) -> list[LLMMessage]:
        total = 0
        start = len(self._messages)
        while start > 0:
            cost = self.count_tokens(self._messages[start - 1])
            if total + cost > self.token_limit:
                break
            total += cost
            start -= 1
        return _drop_orphan_results(self._messages[start:])


class HeadAndTailChatCompletionContext(ChatCompletionContext):
    """The model sees the first ``head_size`` and last ``tail_size`` messages, with a note between."""

    def __init__(self, head_size: int, tail_size: int, initial_messages: Sequence[LLMMessage] | None = None) -> None:
        check.integer(type(self).__name__, "head_size", head_size, minimum=1)
        check.integer(type(self).__name__, "tail_size", tail_size, minimum=1)
        super().__init__(initial_messages)
        self.head_size = head_size
        self.tail_size = tail_size

    async def get_messages(self) -> list[LLMMessage]:
        messages = self._messages
        if len(messages) <= self.head_size + self.tail_size:
            return list(messages)
        head = _drop_unanswered_calls(messages[: self.head_size])
        tail = _drop_orphan_results(messages[-self.tail_size :])
        skipped = len(messages) - len(head) - len(tail)
        note = UserMessage(content=f"Skipped {skipped} messages.", source="System")
        return [*head, note, *tail]
