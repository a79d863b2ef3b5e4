"""The text view of a run as it goes: what :func:`nbagent.Console` and ``show`` outside a notebook print.

:class:`TextLog` turns each run item into the text to write, through :func:`~nbagent.render.to_text`
(``full=True``): a heading and the whole text of each event and message, streamed text as it comes
(one heading, then the pieces on one line), its controls, bidi and zero-width marks shown as
:func:`~nbagent.printable.printable` shows them, and with ``output_stats`` the tokens of each message and
a summary at the end, as AutoGen's ``Console`` prints them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..messages import BaseAgentEvent, BaseChatMessage, ModelClientStreamingChunkEvent, RequestUsage, Response
from ..printable import printable
from ..records import Move
from ..redact import mask
from .dispatch import heading, memory_skipped_line, to_text

__all__ = ["TextLog"]

HOLD = 128
"""Characters of streamed text the console holds back until more arrives (see ``TextLog._release``)."""


@dataclass
class TextLog:
    """The text of each item of one run's stream, in order (it keeps the state between items)."""

    output_stats: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    _stream_id: str | None = None  # the id of the message being streamed (its chunks printed so far)
    _streaming: bool = False
    _held: str = ""  # streamed text not printed yet: a secret may go on in the next chunk
    _last_move: str | None = None  # the name of the last move printed (STEP 1 then STEP 3: STEP 2 skipped)

    def text(self, item: object) -> str:
        """What to write for ``item`` (an empty string for nothing); every line ends with a newline,
        but streamed text, which goes on on the same line until the next item."""
        if type(item) is str or type(item) is ModelClientStreamingChunkEvent:
            return self._chunk(item)
        before = self.close()  # the streamed line ends here
        message = item.chat_message if isinstance(item, Response) else item
        if self._stream_id is not None and getattr(message, "id", None) == self._stream_id:
            return before + self._usage(item)  # the message the chunks built: its text is printed already
        body = to_text(item, True)
        if isinstance(item, Move):
            if item.name == "message_id" and self._last_move == "add_messages" and body is not None:
                body = f"{memory_skipped_line()}\n{body}"
            self._last_move = item.name
        if body is None:
            return before
        return f"{before}{body}\n{self._usage(item)}"

    def close(self) -> str:
        """What ends the output: the end of a streamed line still open (with the text held back)."""
        if not self._streaming:
            return ""
        self._streaming = False
        rest, self._held = printable(mask(self._held)), ""
        return rest + "\n"

    def _chunk(self, item: str | ModelClientStreamingChunkEvent) -> str:
        if isinstance(item, str):
            piece, message_id, head = item, None, "streaming"
        else:
            piece, message_id, head = item.content, item.full_message_id, f"{type(item).__name__} ({item.source})"
        start = ""
        if not self._streaming or message_id != self._stream_id:
            start = (self.close() if self._streaming else "") + heading(head) + "\n"
            self._streaming, self._stream_id = True, message_id
        return start + self._release(piece)

    def _release(self, piece: str) -> str:
        """The streamed text that can be printed now, secrets masked: all but the last ``HOLD``
        characters, cut at white space, so a secret split over chunks is masked whole (a secret is a
        run of at most ``HOLD`` characters without white space)."""
        held = self._held + piece
        cut = len(held) - HOLD
        if cut <= 0:
            self._held = held
            return ""
        space = max(held.rfind(" ", 0, cut + 1), held.rfind("\n", 0, cut + 1))
        if space > 0:
            cut = space - (held[space - 1] == "\r")  # a CRLF stays whole: printable() keeps it, escapes a bare CR
        elif len(held) < 2 * HOLD:  # no white space yet: wait a little longer
            self._held = held
            return ""
        self._held = held[cut:]
        return printable(mask(held[:cut]))

    def _usage(self, item: object) -> str:
        message = item.chat_message if isinstance(item, Response) else item
        usage = message.models_usage if isinstance(message, (BaseAgentEvent, BaseChatMessage)) else None
        if not isinstance(usage, RequestUsage):
            return ""
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        if not self.output_stats:
            return ""
        return f"[Prompt tokens: {usage.prompt_tokens}, Completion tokens: {usage.completion_tokens}]\n"

    def summary(self, duration_s: float, *counts: str) -> str:
        """The closing summary (``output_stats``): ``counts`` (the result's number of messages and finish
        reason, or the response's number of inner messages), the tokens of the messages printed, the time.
        A finish reason is a termination condition's words, which may quote a message: shown, never obeyed."""
        lines = [
            heading("Summary"),
            *map(printable, counts),
            f"Total prompt tokens: {self.prompt_tokens}",
            f"Total completion tokens: {self.completion_tokens}",
            f"Duration: {duration_s:.2f} seconds",
        ]
        return "\n".join(lines) + "\n"
