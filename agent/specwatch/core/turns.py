"""Work taken in turns on the event loop, and the analysis left alone meanwhile.

A reading of the analysis at full cardinality takes tens of milliseconds; taken in one go it
holds the event loop, and every proxied stream with it, that long at each scrape. The analysis
gives it as a generator instead (`Analyzer.snapshot_in_turns`: about a millisecond per turn) and
`ReadGate.read` returns to the loop between turns, so relaying goes on. What the turns read
must not change until the last one: while a reading is under way the loops that feed the
analysis wait (`ReadGate.clear`), and changes that cannot wait (callbacks: a vLLM log line, a
scrape of vLLM's counters) are held and made, in order, the moment it ends, before the next
reading starts. One reading at a time. An evaluation of the analysis (`Analyzer.evaluate_in_turns`,
10-30 ms at full cardinality) goes through the same gate: it changes only what it judges, and
nothing else may change or read the analysis until it is done.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import TypeVar, cast

T = TypeVar("T")


def finish(turns: Generator[None, None, T]) -> T:
    """Run `turns` to the end at once; what they return."""
    while True:
        try:
            next(turns)
        except StopIteration as done:
            return cast(T, done.value)


async def run(turns: Generator[None, None, T]) -> T:
    """Run `turns`, back on the event loop between them; what they return."""
    while True:
        try:
            next(turns)
        except StopIteration as done:
            return cast(T, done.value)
        await asyncio.sleep(0)


class ReadGate:
    """Readings (and evaluations) in turns, one at a time, with the analysis unchanged by
    anything else meanwhile.

    `failed` is told of a held change that raised (it is counted and logged there: the
    reading that held it is not the place to fail)."""

    def __init__(self, failed: Callable[[Exception], None]) -> None:
        self._failed = failed
        self._turn = asyncio.Lock()
        self._open = asyncio.Event()
        self._open.set()
        self._held: list[Callable[[], None]] = []

    @property
    def reading(self) -> bool:
        return not self._open.is_set()

    async def clear(self) -> None:
        """Return when no reading is under way (at once, but during one)."""
        while not self._open.is_set():
            await self._open.wait()

    def change(self, change: Callable[[], None]) -> None:
        """Make `change` now, or when the reading under way ends."""
        if self._open.is_set():
            change()
        else:
            self._held.append(change)

    async def read(self, start: Callable[[], Generator[None, None, T]]) -> T:
        """What the generator `start()` returns, back on the loop between its turns."""
        async with self._turn:
            self._open.clear()
            try:
                return await run(start())
            finally:
                held, self._held = self._held, []
                for change in held:
                    try:
                        change()
                    except Exception as error:  # one held change, not the others
                        self._failed(error)
                # waiters are woken before the next reading takes its turn: the lock's next
                # holder is woken after them
                self._open.set()
