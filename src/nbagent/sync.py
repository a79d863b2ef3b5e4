"""Drive a coroutine to its end without ``await``: in a plain script and inside a notebook's running event loop.

A notebook cell already runs inside the kernel's event loop, where ``asyncio.run`` fails. There the
loop is patched with nest-asyncio2 (nest_asyncio 1.6 loses queued cells under ipykernel 7, so a
Run All would hang) and the coroutine is driven to its end with ``run_until_complete``. A kernel
interrupt (``KeyboardInterrupt``) cancels it, waits for it to end (a run leaves its context valid),
and raises a one-line ``KeyboardInterrupt`` (:func:`~nbagent.interrupts.run_interrupted`).

:class:`Pending` is the coroutine an entry point returns (``agent.run(...)``, ``nbagent.show``, a stepper's
moves, ``Console``, ``Batch.run``...: :func:`entry_point`): awaited, it is the coroutine; used as its result
by mistake (a forgotten ``await``), its error says to await it; dropped without being awaited (in a
script or a notebook), it warns in one line where it was called (:class:`NotAwaitedWarning`), naming the fix.

While it drives a running loop it enters the registered "while driving" hooks
(:func:`register_driving_hook`): inside a kernel, the notebook layer's comm pump dispatches the
kernel's comm messages (a widget's button click: the live view's Stop) as they come; without that
they would wait for the end of the run.

A generic driver: it knows no agent. ``AssistantAgent.run_sync`` and ``nbagent.run`` call it.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import sys
import threading
import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Generator, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from types import CodeType, TracebackType
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar

from .interrupts import run_interrupted

__all__ = [
    "DrivingHook",
    "NotAwaitedWarning",
    "Pending",
    "Stream",
    "driving_hooks",
    "entry_point",
    "register_driving_hook",
    "run_coroutine",
    "unregister_driving_hook",
]

T = TypeVar("T")


INTERRUPTED = "the run was interrupted (Ctrl-C or a kernel interrupt)"


def run_coroutine(factory: Callable[[], Awaitable[T]], interrupted: str | Callable[[], str] = INTERRUPTED) -> T:
    """Drive the awaitable that ``factory`` makes to its end, whether or not a loop is running.

    Ctrl-C or a kernel interrupt cancels it, waits for its end and raises a ``KeyboardInterrupt``
    (:func:`~nbagent.interrupts.run_interrupted`) saying ``interrupted`` (or what it returns, asked
    once the run has ended): one line in a notebook and at the end of a script.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        try:
            return asyncio.run(_as_coroutine(factory))
        except KeyboardInterrupt:  # asyncio.run cancelled the run, which has ended
            raise run_interrupted(_text(interrupted)) from None
    with nested(loop), _driving(loop):
        task = loop.create_task(_as_coroutine(factory))
        try:
            return loop.run_until_complete(task)
        except KeyboardInterrupt:
            task.cancel()
            try:
                loop.run_until_complete(task)
            except (asyncio.CancelledError, KeyboardInterrupt):
                pass
            raise run_interrupted(_text(interrupted)) from None


_MISSING = object()
_NESTING = threading.Lock()
_depth = 0  # the sync calls driving a running loop now, in any thread
_saved: dict[int, tuple[object, dict[str, object]]] = {}  # id of what nest_asyncio2 patches: it, its attributes


def _save(owner: object, *names: str) -> None:
    """Keep ``owner``'s own ``names`` (``_MISSING`` for those it inherits or lacks) to put back later."""
    if id(owner) not in _saved:
        own = vars(owner)
        _saved[id(owner)] = owner, {name: own.get(name, _MISSING) for name in names}


def _restore() -> None:
    for owner, values in _saved.values():
        for name, value in values.items():
            if value is _MISSING:
                if name in vars(owner):
                    delattr(owner, name)
            else:
                setattr(owner, name, value)
    _saved.clear()


_LOOP_NAMES = ("run_forever", "run_until_complete", "_run_once", "_check_running", "_check_runnung", "_nest_patched")
"""What nest_asyncio2 sets on the class of the loop it patches (nest_asyncio2 1.7: ``_patch_loop``) and is put
back: its methods and its mark. Its data (``_num_runs_pending``, ``_is_proactorloop``, ``_nest_deferred``,
``_nest_asyncio2``), which no method of asyncio's reads, stays on the class: a loop of that class that another
thread started meanwhile (an ipykernel subshell's) runs nest_asyncio2's ``run_forever`` to its end and reads it
then."""


@contextmanager
def nested(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """``loop``, already running, made re-entrant for the time of the block, then the process as it was.

    nest_asyncio2 (it has no undo) patches the whole process: ``asyncio.Task`` and ``asyncio.Future``
    become the pure-Python classes, ``asyncio.run`` and ``asyncio.get_event_loop`` its own (its
    ``asyncio.run`` does not close its loop), the event loop policy's class and the loop's class get
    its methods, and tornado's futures learn the pure-Python future. Every one of these is kept when
    the first sync call of the process begins and put back when the last one ends (nested calls and
    calls from other threads' loops share one patch). A task created meanwhile stays a pure-Python
    task, which the loop runs as any other. A loop nest_asyncio2 cannot patch (uvloop's) raises a
    ``RuntimeError`` saying to ``await``, with the process put back as it was.
    """
    global _depth
    import nest_asyncio2

    with _NESTING:
        if _depth == 0:
            _save(asyncio, "Task", "Future", "run", "get_event_loop", "_nest_patched", "_nest_asyncio2")
            _save(asyncio.tasks, "Task", "_CTask")
            _save(asyncio.futures, "Future", "_CFuture")
            _save(asyncio.events, "_get_event_loop", "get_event_loop")
            _save(type(asyncio.get_event_loop_policy()), "get_event_loop")
            _save(nest_asyncio2, "_run_close_loop")
            tornado = sys.modules.get("tornado.concurrent")
            if tornado is not None:
                _save(tornado, "Future", "FUTURES")
        _save(type(loop), *_LOOP_NAMES)
        try:
            nest_asyncio2.apply(loop)
        except ValueError as error:  # a loop it cannot patch (uvloop's): what it patched already is put back
            if _depth == 0:
                _restore()
            raise RuntimeError(
                f"a sync entry point cannot drive the running {type(loop).__module__}.{type(loop).__name__} "
                "loop (nest_asyncio2 patches only asyncio's own loops): write `await agent.run(...)` (or "
                "`await nbagent.show(...)`) in this async code"
            ) from error
        _depth += 1
    try:
        yield
    finally:
        with _NESTING:
            _depth -= 1
            if _depth == 0:
                _restore()


def _text(interrupted: str | Callable[[], str]) -> str:
    return interrupted if isinstance(interrupted, str) else interrupted()


async def _as_coroutine(factory: Callable[[], Awaitable[T]]) -> T:
    return await factory()


DrivingHook = Callable[[asyncio.AbstractEventLoop], AbstractContextManager[object]]
"""A context manager factory entered while :func:`run_coroutine` drives a running ``loop``."""

_DRIVING_HOOKS: list[DrivingHook] = []


def register_driving_hook(hook: DrivingHook) -> None:
    """Enter ``hook(loop)`` while :func:`run_coroutine` drives an already running loop (a notebook
    cell): the notebook layer's kernel comm pump (``nbagent.notebook.kernel.comms_meanwhile``),
    registered by ``nbagent`` at import. A hook registered twice is entered once."""
    if hook not in _DRIVING_HOOKS:
        _DRIVING_HOOKS.append(hook)


def unregister_driving_hook(hook: DrivingHook) -> None:
    """Stop entering ``hook``; a hook that is not registered is ignored."""
    if hook in _DRIVING_HOOKS:
        _DRIVING_HOOKS.remove(hook)


def driving_hooks() -> tuple[DrivingHook, ...]:
    """The registered driving hooks, in the order they are entered."""
    return tuple(_DRIVING_HOOKS)


@contextmanager
def _driving(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    with ExitStack() as stack:
        for hook in list(_DRIVING_HOOKS):
            stack.enter_context(hook(loop))
        yield


class NotAwaitedWarning(RuntimeWarning):
    """An entry point's coroutine was dropped without being awaited: it never ran (a forgotten ``await``)."""


_PACKAGE = __name__.partition(".")[0]  # nbagent: its modules' frames are not the caller's
_PACKAGE_DOT = _PACKAGE + "."


def _line(code: CodeType, offset: int) -> int:
    """The line of ``code`` its instruction at byte ``offset`` is on (what ``frame.f_lineno`` says)."""
    for start, end, line in code.co_lines():
        if start <= offset < end and line is not None:
            return line
    return code.co_firstlineno


class Pending(Coroutine[Any, Any, T], Generic[T]):
    """The coroutine of an entry point (``agent.run(...)``), whose mistakes say what to write.

    Awaited, scheduled (``asyncio.create_task``, ``gather``) or driven, it is the coroutine ``coro``.
    Read as if it were its result (a forgotten ``await``: ``agent.run(task=...).messages``), it
    raises an ``AttributeError`` naming ``await`` and the sync form; its repr says the same. Dropped
    without being awaited, it closes ``coro`` and warns (:class:`NotAwaitedWarning`) at the line that
    called the entry point: "``<call>`` was never awaited, so it did not run: write ``await <call>``...",
    in a script (on stderr) as in a notebook (under the cell), instead of Python's bare warning at exit.
    ``sync`` is the form without ``await``, if there is one.
    """

    __slots__ = ("_coro", "_call", "_sync", "_where", "_taken")

    def __init__(self, coro: Coroutine[Any, Any, T], call: str, sync: str | None = None) -> None:
        self._taken = False  # awaited, or driven: ``await f()`` drops this object before the coroutine starts
        self._coro = coro
        self._call = call
        self._sync = sync
        # Where the code outside nbagent that called the entry point (the function making this) is:
        # its code and instruction, made a line only for a warning. Every run makes a Pending: frames
        # are made objects only from the entry point's caller up (each costs about a microsecond).
        try:
            frame = sys._getframe(2)  # noqa: SLF001 (the standard way to find the caller; no public equivalent)
        except ValueError:  # made at a module's top level
            frame = sys._getframe(1)  # noqa: SLF001
        while (
            type(name := frame.f_globals.get("__name__")) is str
            and (name == _PACKAGE or name.startswith(_PACKAGE_DOT))
            and frame.f_back is not None  # (read last: reading it makes the frame above an object)
        ):
            frame = frame.f_back
        self._where = (frame.f_code, frame.f_lasti)

    def _fix(self) -> str:
        """What to write instead."""
        fix = f"write `await {self._call}` in a notebook cell or an async function"
        return fix + (f", or `{self._sync}` without await" if self._sync else " (in a script: inside asyncio.run)")

    def __del__(self) -> None:
        try:
            if self._taken:  # the usual end: awaited
                return
            coro, (code, offset) = self._coro, self._where
        except AttributeError:  # made without its arguments: __init__ did not run
            return
        if inspect.getcoroutinestate(coro) != inspect.CORO_CREATED:
            return
        coro.close()  # closed before it ran: Python's own "never awaited" warning is not given
        warnings.warn_explicit(
            f"{self._call} was never awaited, so it did not run: {self._fix()}",
            NotAwaitedWarning,
            code.co_filename,
            _line(code, offset),
        )

    def __await__(self) -> Generator[Any, None, T]:
        self._taken = True
        return self._coro.__await__()

    def send(self, value: Any) -> Any:
        self._taken = True
        return self._coro.send(value)

    def throw(
        self,
        kind: type[BaseException] | BaseException,
        value: object = None,
        traceback: TracebackType | None = None,
    ) -> Any:
        self._taken = True
        if value is None and traceback is None:
            return self._coro.throw(kind)
        return self._coro.throw(kind, value, traceback)  # type: ignore[arg-type]

    def close(self) -> None:
        self._taken = True
        self._coro.close()

    # The coroutine's own introspection, so that a task's repr, ``task.get_stack()``, ``inspect``'s
    # state functions and debuggers see the run's coroutine, not a wrapper without a name or frame.
    @property
    def __name__(self) -> str:  # (asyncio names a coroutine by it: a type's __qualname__ can't be a property)
        return str(getattr(self._coro, "__qualname__", type(self._coro).__name__))

    if not TYPE_CHECKING:  # hidden from type checkers: for them a forgotten await stays a type error

        def __getattr__(self, name: str) -> Any:
            if name.startswith("_"):
                raise AttributeError(name)
            if name.startswith("cr_"):  # the coroutine's frame, code and state (cr_frame, cr_suspended...)
                return getattr(self._coro, name)
            raise AttributeError(
                f"{self._call} gives a coroutine, not its result, so it has no attribute {name!r}: "
                + self._fix().replace("`await ", "`result = await ", 1),
                name=name,
                obj=self,
            )

    def __repr__(self) -> str:
        if inspect.getcoroutinestate(self._coro) != inspect.CORO_CREATED:  # awaited or scheduled: no mistake
            return repr(self._coro)
        return f"<coroutine {self._call}, not run: {self._fix()}>"


P = ParamSpec("P")


def entry_point(
    call: str, sync: str | None = None
) -> Callable[[Callable[P, Coroutine[Any, Any, T]]], Callable[P, Pending[T]]]:
    """Make an ``async def`` function or method an entry point: its calls return :class:`Pending`, so a
    forgotten ``await`` says what to write (``call``: how the call reads, ``sync``: the form without await)."""

    def wrap(function: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, Pending[T]]:
        @functools.wraps(function)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> Pending[T]:
            return Pending(function(*args, **kwargs), call, sync)

        if sys.version_info >= (3, 12):  # still a coroutine function to inspect (Python 3.11 has no mark)
            inspect.markcoroutinefunction(wrapper)
        return wrapper

    return wrap


Y = TypeVar("Y")


class Stream(AsyncGenerator[Y, None], Generic[Y]):
    """The async stream of an entry point (``agent.run_stream(...)``), whose mistakes say what to write.

    ``async for`` takes the items straight from the async generator ``agen`` (nothing in between);
    ``aclose``, ``asend`` and ``athrow`` are its own. Iterated with a plain ``for`` (a forgotten
    ``async``), it raises a ``TypeError`` naming ``async for`` and ``nbagent.Console``.
    """

    __slots__ = ("_agen", "_call")

    def __init__(self, agen: AsyncGenerator[Y, None], call: str) -> None:
        self._agen = agen
        self._call = call

    def __aiter__(self) -> AsyncGenerator[Y, None]:
        return self._agen

    def __anext__(self) -> Coroutine[Any, Any, Y]:
        return self._agen.__anext__()

    def asend(self, value: None) -> Coroutine[Any, Any, Y]:
        return self._agen.asend(value)

    def athrow(
        self,
        kind: type[BaseException] | BaseException,
        value: object = None,
        traceback: TracebackType | None = None,
    ) -> Coroutine[Any, Any, Y]:
        if value is None and traceback is None:
            return self._agen.athrow(kind)
        return self._agen.athrow(kind, value, traceback)  # type: ignore[arg-type]

    def aclose(self) -> Coroutine[Any, Any, None]:
        return self._agen.aclose()

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            if name.startswith("ag_"):  # the generator's frame, code and state, for inspect and debuggers
                return getattr(self._agen, name)
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}", name=name, obj=self)

    @property
    def __name__(self) -> str:  # (a type's __qualname__ can't be a property)
        return str(getattr(self._agen, "__qualname__", type(self._agen).__name__))

    def __iter__(self) -> Iterator[Y]:
        raise TypeError(
            f"{self._call} is an async stream: write `async for item in {self._call}:` in a notebook cell or "
            f"an async function, or print it with `await nbagent.Console({self._call})`"
        )

    def __repr__(self) -> str:
        return f"<async stream {self._call}: `async for item in ...`, or `await nbagent.Console(...)`>"
