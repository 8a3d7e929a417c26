"""CPU of an SSE event that arrives in many small pieces: the splitter against the one before.

vLLM writes one event per engine step, each in one piece. A slow network or another upstream
can cut a large event (a chunk with long logprobs, an error with a traceback) into many small
reads. The splitter holds the partial event until its terminator comes; before, it joined the
held bytes with each new piece and searched them all again, so an event of n bytes in pieces of
p cost O(n^2 / p) on the event loop, which every stream shares. Now the partial event grows in
place and only the new bytes are searched. Both run here side by side on the same pieces
(the old one, `Rejoining`, kept below as it was), with the event also fed whole as the floor.

    .venv/bin/python benchmarks/sse_pieces.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from specwatch.proxy.sse import SseSplitter

KIB = 1024
# (event size, piece size); the old splitter only where it finishes in seconds
CASES = ((64 * KIB, KIB), (KIB * KIB, KIB), (KIB * KIB, 64), (4 * KIB * KIB, KIB))
LARGE = (16 * KIB * KIB, KIB)  # the default event limit (limits.max_response_bytes): new only


class Rejoining:
    """The splitter before: pending bytes joined with each piece and searched from the start
    (`\n\n` only: the benchmark's event has no `\r`)."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        data = self._pending + chunk if self._pending else chunk
        events, start = [], 0
        while (end := data.find(b"\n\n", start)) >= 0:
            events.append(data[start : end + 2])
            start = end + 2
        self._pending = data[start:]
        return events


def cpu_ms(feed: Callable[[bytes], list[bytes]], pieces: list[bytes], rounds: int) -> float:
    """The least CPU time of `rounds` runs over the pieces, in ms; checks one event came out."""
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        events = [event for piece in pieces for event in feed(piece)]
        best = min(best, (time.process_time() - started) * 1000.0)
        assert 1 == len(events), "the event did not come out whole"
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"{'event':>8} {'pieces of':>9} {'whole':>9} {'in pieces':>10} {'before':>10} ratio")
    for size, piece in (*CASES, LARGE):
        event = b"data: " + b"x" * (size - 8) + b"\n\n"
        pieces = [event[i : i + piece] for i in range(0, len(event), piece)]
        whole = cpu_ms(SseSplitter(2 * size).feed, [event], args.rounds)
        now = cpu_ms(SseSplitter(2 * size).feed, pieces, args.rounds)  # idle after each event
        before = "" if (size, piece) == LARGE else f"{cpu_ms(Rejoining().feed, pieces, 1):.1f}"
        ratio = f"{float(before) / now:.0f}x" if before else "(too slow to run)"
        print(
            f"{size // KIB:>6}Ki {piece:>8}B {whole:>7.2f}ms {now:>8.1f}ms "
            f"{before + ('ms' if before else ''):>10} {ratio}"
        )


if __name__ == "__main__":
    main()
