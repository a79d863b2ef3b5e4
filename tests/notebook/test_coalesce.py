"""The chunk coalescer: bounded sink calls, exact final text, trailing flush on the event loop."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st

from nbagent.notebook.coalesce import Coalescer


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_first_piece_goes_out_at_once_then_one_flush_per_interval() -> None:
    clock = FakeClock()
    sent: list[str] = []
    coalescer = Coalescer(sent.append, interval=0.04, clock=clock)
    for index in range(1000):  # 1,000 pieces over 1 s: one every millisecond
        clock.now = index * 0.001
        coalescer.append(f"{index},")
    assert coalescer.close() == "".join(f"{index}," for index in range(1000))
    # t=0, then every 40 ms up to 0.96 s (25 flushes), then the close: 26 sink calls in all.
    assert len(sent) == 26 == coalescer.flushes
    assert sent[0] == "0,"
    assert sent[1] == "".join(f"{index}," for index in range(1, 41))
    assert "".join(sent) == coalescer.text


def test_flush_without_pending_pieces_sends_nothing() -> None:
    sent: list[str] = []
    coalescer = Coalescer(sent.append, clock=FakeClock())
    coalescer.flush()
    coalescer.append("a")
    coalescer.flush()
    coalescer.close()
    assert sent == ["a"]


@given(st.lists(st.text(), max_size=60), st.lists(st.floats(0, 0.1), min_size=60, max_size=60))
def test_final_text_is_exact_whatever_the_timing(pieces: list[str], gaps: list[float]) -> None:
    clock = FakeClock()
    sent: list[str] = []
    coalescer = Coalescer(sent.append, interval=0.04, clock=clock)
    for piece, gap in zip(pieces, gaps):
        clock.now += gap
        coalescer.append(piece)
    final = coalescer.close()
    assert final == "".join(pieces) == "".join(sent)
    assert all(sent)


async def test_trailing_flush_sends_the_last_pieces_without_close() -> None:
    sent: list[str] = []
    coalescer = Coalescer(sent.append, interval=0.02)
    for piece in ("a", "b", "c"):
        coalescer.append(piece)
    assert sent == ["a"]
    await asyncio.sleep(0.1)
    assert sent == ["a", "bc"]
    coalescer.close()
    assert sent == ["a", "bc"]
