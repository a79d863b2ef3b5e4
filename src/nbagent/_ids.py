"""Fast uuid4 strings and UTC timestamps for messages and events.

``str(uuid.uuid4())`` costs about 2.5 us here, more than a whole streamed chunk may. This module
draws random bytes in bulk, sets the version and variant bits of every id with ``translate``, lays
the hex digits out around the dashes with strided copies and cuts the ids apart with one ``split``,
so one id costs a list ``pop``.
"""

from __future__ import annotations

import binascii
import os
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial

_BATCH = 1024
_VERSION_4 = bytes((b & 0x0F) | 0x40 for b in range(256))
_VARIANT_RFC4122 = bytes((b & 0x3F) | 0x80 for b in range(256))
_DIGIT_POSITIONS = [i for i in range(36) if i not in (8, 13, 18, 23)]
_ID_STRIDE = 37  # 36 characters and a space
_LAYOUT = (b"-" * 36 + b" ") * _BATCH
_POOL: list[str] = []


def _refill() -> None:
    raw = bytearray(os.urandom(16 * _BATCH))
    raw[6::16] = raw[6::16].translate(_VERSION_4)
    raw[8::16] = raw[8::16].translate(_VARIANT_RFC4122)
    digits = binascii.hexlify(raw)
    laid_out = bytearray(_LAYOUT)
    for digit, position in enumerate(_DIGIT_POSITIONS):
        laid_out[position::_ID_STRIDE] = digits[digit::32]
    _POOL.extend(laid_out.decode("ascii").split())


os.register_at_fork(after_in_child=_POOL.clear)


def ids_pool() -> list[str]:
    """The pool itself, for a hot path that pops ids inline (``new_id()`` when it is empty)."""
    return _POOL


def new_id() -> str:
    """A random uuid4 as a string."""
    if not _POOL:
        _refill()
    return _POOL.pop()


utc_now: Callable[[], datetime] = partial(datetime.now, UTC)
"""The current time as an aware UTC datetime (``datetime.now(UTC)``; a ``partial``, not a function: the
records' default, made several times a run, without a Python call)."""
