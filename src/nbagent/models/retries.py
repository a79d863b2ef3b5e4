"""Who retries a model call: the client (the openai SDK retries 429, 5xx and broken connections) or a
caller that retries whole runs itself (a :class:`~nbagent.Batch`), so that a call is never retried by
both (a Batch task against a server that always answers 429 makes ``1 + retries`` requests, not
``(1 + retries) * (1 + max_retries)``)."""

from __future__ import annotations

from contextvars import ContextVar

OUTER_RETRIES: ContextVar[bool] = ContextVar("nbagent_outer_retries", default=False)
"""True while a caller retries the calls made in its context: clients then send each call once."""
