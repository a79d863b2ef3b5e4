"""A writer the atomic-write tests kill: ``python -m tests.trace.kill_writer MODE``, then lines of
``<KILL_AT> <ROOT>`` on stdin; each forks a writer (the imports are paid once) and answers ``STATUS <code>``.

MODE ``trace`` writes a trace of two tool runs (trace id ``s1``) with ``trace.to_parquet(ROOT)``; MODE
``batch`` runs a Batch of three tasks with ``output=ROOT``. Every file operation on a path under ROOT
(``open`` for writing, each ``write``, ``os.replace``, ``os.unlink``, ``os.mkdir``, ``shutil.rmtree``) is
counted, and at the KILL_AT-th the writer sends itself SIGKILL (a ``write`` writes half its bytes first,
as a torn write would). KILL_AT 0: no kill; the operations are printed, one a line, as ``OPS <n> <what>``.
"""

from __future__ import annotations

import asyncio
import builtins
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

ROOT = Path()
KILL_AT = 0
_count = 0
_real_open = builtins.open
_real_replace = os.replace
_real_unlink = os.unlink
_real_mkdir = os.mkdir
_real_rmtree = shutil.rmtree


def _ours(path: Any) -> bool:
    try:
        return Path(os.fsdecode(path)).resolve().is_relative_to(ROOT)
    except (TypeError, ValueError):
        return False


def _op(what: str, path: Any) -> bool:
    """Count an operation; True when this is the one to die at."""
    global _count
    _count += 1
    if KILL_AT == 0:
        print(f"OPS {_count} {what} {Path(os.fsdecode(path)).relative_to(ROOT)}", flush=True)
    return _count == KILL_AT


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class _File:
    def __init__(self, inner: Any, path: Any) -> None:
        self._inner = inner
        self._path = path

    def write(self, data: bytes) -> int:
        if _op("write", self._path):
            self._inner.write(data[: len(data) // 2])
            self._inner.flush()
            _die()
        return int(self._inner.write(data))

    def __enter__(self) -> _File:
        return self

    def __exit__(self, *exc: object) -> None:
        self._inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
    if isinstance(file, (str, bytes, os.PathLike)) and any(c in mode for c in "wax") and _ours(file):
        if _op("open", file):
            _real_open(file, mode, *args, **kwargs).close()  # created, empty
            _die()
        return _File(_real_open(file, mode, *args, **kwargs), file)
    return _real_open(file, mode, *args, **kwargs)


def _replace(src: Any, dst: Any, **kwargs: Any) -> None:
    if _ours(dst) and _op("replace", dst):
        _die()
    _real_replace(src, dst, **kwargs)


def _unlink(path: Any, **kwargs: Any) -> None:
    if _ours(path) and _op("unlink", path):
        _die()
    _real_unlink(path, **kwargs)


def _mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
    if _ours(path) and _op("mkdir", path):
        _die()
    _real_mkdir(path, *args, **kwargs)


def _rmtree(path: Any, *args: Any, **kwargs: Any) -> None:
    if _ours(path) and _op("rmtree", path):
        _die()
    _real_rmtree(path, *args, **kwargs)


def _patch() -> None:
    builtins.open = _open
    os.replace = _replace
    os.unlink = _unlink
    os.mkdir = _mkdir
    shutil.rmtree = _rmtree


def _write(mode: str, root: Path, trace: Any) -> None:
    """In a forked child: write with every operation under ``root`` counted, then exit."""
    global ROOT
    ROOT = root.resolve()
    _patch()
    if mode == "trace":
        trace.to_parquet(root)
    else:
        from nbagent import Batch
        from tests.batch.helpers import Factory

        asyncio.run(Batch(Factory(), ["Oslo", "Lima", "Pune"], concurrency=3, output=root, progress=None).run())
    print(f"DONE {_count}", flush=True)
    os._exit(0)


def main() -> None:
    """Read ``<kill_at> <root>`` lines; for each, fork a writer and print ``STATUS <wait status>``."""
    import pyarrow.pandas_compat  # noqa: F401  (imported once, before the forks: a fork pays no import)
    import pyarrow.parquet  # noqa: F401

    mode = sys.argv[1]
    if mode == "batch":
        import nbagent  # noqa: F401
        import tests.batch.helpers  # noqa: F401
    trace = None
    if mode == "trace":
        from tests.trace.test_atomic_writes import two_runs

        trace = asyncio.run(two_runs("s1"))
    for line in sys.stdin:
        kill_at, root = line.split(" ", 1)
        global KILL_AT
        KILL_AT = int(kill_at)
        pid = os.fork()
        if pid == 0:
            try:
                _write(mode, Path(root.strip()), trace)
            finally:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        print(f"STATUS {os.waitstatus_to_exitcode(status)}", flush=True)


if __name__ == "__main__":
    main()
