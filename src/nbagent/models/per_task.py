"""Close the model clients a runner made for one task when that task's run ends.

A runner of many tasks (:class:`nbagent.Batch`, and any other that makes an agent per task) is given a
factory that may make a fresh client for every task (``lambda task: AssistantAgent("a",
OpenAIChatCompletionClient(...))``). Left open, each such client holds its connections until garbage
collection: far more connections than the concurrency, open long after their task. A shared client
(one made once and given to every agent) keeps its connections, which is the faster way.

:class:`PerTaskClients` tells the two apart by use: a client seen in one task only is that task's, and
is closed as soon as no running task uses it; a client seen in a second task is shared from then on
and never closed by the runner (its owner closes it). Use cannot tell a shared client whose first task
ended before its second began (``concurrency=1``) from a task's own, so only a client that works after
``close()`` and whose close touches nothing else is closed (:attr:`ChatCompletionClient.reopens
<nbagent.models.base.ChatCompletionClient.reopens>`: nbagent's OpenAI clients, which open new
connections on their next call). An AutoGen client (its close is for good, and each task's agent
wraps it anew) or a wrapper (its close closes what it wraps) is left to its owner.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import Counter

from .base import ChatCompletionClient

__all__ = ["CLOSE_TIMEOUT_S", "PerTaskClients"]

CLOSE_TIMEOUT_S = 10.0
"""The longest a client's ``close()`` is waited for at its task's end."""


class PerTaskClients:
    """The model clients of a runner's tasks: :meth:`begin` as a task's run starts, :meth:`end` as it
    ends (closing the client when it was that task's own)."""

    def __init__(self) -> None:
        self._tasks: weakref.WeakKeyDictionary[ChatCompletionClient, int] = weakref.WeakKeyDictionary()
        self._running: Counter[int] = Counter()  # by id: the clients in use now are held by their agents
        self.closed = 0
        """How many clients were closed at their task's end."""

    def begin(self, client: ChatCompletionClient) -> None:
        """A task's run starts with ``client``."""
        self._tasks[client] = self._tasks.get(client, 0) + 1
        self._running[id(client)] += 1

    async def end(self, client: ChatCompletionClient) -> None:
        """A task's run with ``client`` ended: close it if it is that task's own and no other run uses it.
        Waits at most :data:`CLOSE_TIMEOUT_S`; a failing close ends nothing else (the task's row stays)."""
        self._running[id(client)] -= 1
        if self._running[id(client)] > 0:
            return
        del self._running[id(client)]
        if self._tasks.get(client, 0) != 1 or not client.reopens:
            return
        try:
            await asyncio.wait_for(client.close(), CLOSE_TIMEOUT_S)
        except Exception:  # noqa: BLE001, S110 (a connection already broken, a close past its deadline: nothing to keep)
            return
        self.closed += 1
