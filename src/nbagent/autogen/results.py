"""nbagent's ``TaskResult`` that is AutoGen's too, for AutoGen's code that checks its class.

AutoGen's ``Console`` (and any code of AutoGen's users) ends a stream on
``isinstance(item, autogen_agentchat.base.TaskResult)``, a pydantic model whose metaclass answers
``isinstance`` from the class's bases only: registering a virtual subclass changes nothing. So once
AutoGen is imported, the result nbagent's ``run``/``run_stream`` give is a :class:`TaskResult` of
this module: a subclass of nbagent's and of AutoGen's class. For nbagent's users it is nbagent's
result: the same fields holding nbagent's messages, ``isinstance(result, nbagent.TaskResult)``,
nbagent's repr and str (the class is named ``TaskResult`` too), equality with nbagent's result of the same
fields (both ways), and a pickle that loads as nbagent's plain ``TaskResult`` (AutoGen need not be
installed where it is loaded).
"""

from __future__ import annotations

from typing import Any

from autogen_agentchat.base import TaskResult as AgTaskResult

from .. import messages


class TaskResult(messages.TaskResult, AgTaskResult):  # type: ignore[misc]  # a dataclass and a pydantic model
    """nbagent's ``TaskResult`` (its fields, repr and equality) that is also AutoGen's ``TaskResult``."""

    def __init__(self, messages: Any, stop_reason: str | None = None) -> None:
        # nbagent's messages are not AutoGen's: set as they are, as pydantic's model_construct sets them
        made = type(self).model_construct(messages=messages, stop_reason=stop_reason)
        for slot in ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"):
            object.__setattr__(self, slot, getattr(made, slot))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, messages.TaskResult):
            return NotImplemented
        return (self.messages, self.stop_reason) == (other.messages, other.stop_reason)

    def __str__(self) -> str:  # nbagent's (its repr), not pydantic's
        return repr(self)

    __hash__ = None  # type: ignore[assignment]  # as nbagent's and AutoGen's: a result is mutable

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as nbagent's plain ``TaskResult``."""
        return (messages.TaskResult, (self.messages, self.stop_reason))


def shared(result: messages.TaskResult) -> TaskResult:
    """``result`` (nbagent's) as the :class:`TaskResult` both libraries take."""
    return TaskResult(result.messages, result.stop_reason)
