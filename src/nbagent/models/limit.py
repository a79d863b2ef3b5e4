"""A limit on the model requests of many runs at once, set by the caller that runs them.

A runner that shares one limit among its runs (:func:`nbagent.spark.run_batch`: every executor of a
Spark job asks the driver's limiter) sets :data:`REQUEST_LIMIT` in its context; the agent's loop asks
it for a slot before each model request and gives the slot back when the request has ended (answered,
failed or cancelled). With none set (the default) a request waits for nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Protocol

__all__ = ["REQUEST_LIMIT", "RequestLimit"]


class RequestLimit(Protocol):
    """Slots for model requests: :meth:`acquire` waits for one (its own deadline: it raises rather than
    wait for ever) and returns the function that gives it back."""

    def acquire(self) -> Awaitable[Callable[[], None]]: ...


REQUEST_LIMIT: ContextVar[RequestLimit | None] = ContextVar("nbagent_request_limit", default=None)
"""The limit the model requests made in this context wait for (``None``: none)."""
