"""Fast uuid4 strings and UTC timestamps for messages and events.

``str(uuid.uuid4())`` costs about 3 us here, more than a whole streamed chunk may; this module draws
random bytes in bulk and formats them as RFC 4122 version-4 ids.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone

_POOL: list[str] = []
_BATCH = 256


def _refill() -> None:
    digits = os.urandom(16 * _BATCH).hex()
    variant = "89ab"
    _POOL.extend(
        f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{variant[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"
        for h in (digits[i : i + 32] for i in range(0, len(digits), 32))
    )


os.register_at_fork(after_in_child=_POOL.clear)


def new_id() -> str:
    """A random uuid4 as a string."""
    if not _POOL:
        _refill()
    return _POOL.pop()


def utc_now() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(timezone.utc)
