"""[compiled] Integer counts per slice: since start, and over a sliding window of time buckets.

Memory is bounded by slices x buckets per window, never by the number of requests.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Generator, Iterable
from typing import Generic, TypeVar

from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.sums import Sums
from specwatch.core.pacing import Pace
from specwatch.core.turns import finish

K = TypeVar("K")


class _Ring:
    """One key's buckets, oldest first; the sum of all but the newest (`settled`), of those
    that left the window (`expired`), and the window's total, summed when read."""

    __slots__ = ("buckets", "expired", "settled", "total", "version")

    def __init__(self, max_position: int) -> None:
        self.buckets: deque[tuple[int, Counts]] = deque()
        self.settled = Counts(max_position)
        self.expired = Counts(max_position)
        self.total: Counts | None = None  # settled + the newest bucket; None: to be summed
        self.version = 0  # bumped whenever the window's or the since-start total changes

    def window(self) -> Counts:
        total = self.total
        if total is None:
            total = self.total = self.settled.copy()
            if self.buckets:
                total.merge(self.buckets[-1][1])
        return total


class SlidingWindow(Generic[K]):
    """Counts per key over the last `length` seconds, in buckets of `bucket` seconds, and
    since the first record.

    Time comes from the records (so a replayed log is windowed by its own timestamps); the
    caller passes `now` when reading. A window covers whole buckets: the one holding `now`
    and enough before it to span `length`.

    A record is merged into its bucket only: one merge per record. A bucket joins the key's
    running sum of settled buckets when a newer one starts, leaves it (into the sum of
    expired ones) when it leaves the window; the window's total is the settled sum plus the
    newest bucket, summed when read, and since-start is that plus the expired sum. Reading
    costs O(keys), not O(keys x buckets); the counts are integers, so every total is exact.
    """

    def __init__(self, length: float, bucket: float, max_position: int) -> None:
        self.bucket = bucket
        self.n_buckets = max(1, round(length / bucket))
        self.max_position = max_position
        self._rings: dict[K, _Ring] = {}

    def _index(self, ts: float) -> int:
        return int(ts // self.bucket)

    def add(self, key: K, ts: float, counts: Counts) -> None:
        index = self._index(ts)
        ring = self._rings.get(key)
        if ring is None:
            ring = self._rings[key] = _Ring(self.max_position)
        buckets = ring.buckets
        if buckets and buckets[-1][0] == index:
            buckets[-1][1].merge(counts)
        elif not buckets or buckets[-1][0] < index:
            if buckets:
                ring.settled.merge(buckets[-1][1])  # once per bucket, as it settles
            buckets.append((index, counts.copy()))
            self._prune(ring, index)
        else:  # a late record (finished out of order): find its bucket, an older one
            for bucket_index, bucket_counts in buckets:
                if bucket_index == index:
                    bucket_counts.merge(counts)
                    break
            else:
                if index <= buckets[-1][0] - self.n_buckets:
                    ring.expired.merge(counts)  # older than the window: since start only
                    ring.version += 1
                    return
                buckets.append((index, counts.copy()))
                ring.buckets = deque(sorted(buckets, key=lambda item: item[0]))
            ring.settled.merge(counts)
        ring.total = None
        ring.version += 1

    def _prune(self, ring: _Ring, newest: int) -> None:
        oldest_kept = newest - self.n_buckets + 1
        buckets = ring.buckets
        if not buckets or buckets[0][0] >= oldest_kept:
            return
        settled = ring.settled
        while buckets and buckets[0][0] < oldest_kept:
            _, counts = buckets.popleft()
            ring.expired.merge(counts)
            if buckets:  # not the newest: it was settled
                settled.subtract(counts)
                if counts.max_drafted >= settled.max_drafted:  # it held the maximum
                    settled.max_drafted = _settled_max(buckets, counts.max_drafted)
        ring.total = None
        ring.version += 1

    def current(self, now: float) -> dict[K, Counts]:
        """The totals of the window ending at `now`, every key included: live objects owned
        by the window, to read before the next `add` (`totals` for copies)."""
        return finish(self.current_in_turns(now, math.inf))

    def current_in_turns(self, now: float, step: float) -> Generator[None, None, dict[K, Counts]]:
        """`current`, yielding after about every `step` seconds (turns.py); nothing may be
        added until it returns."""
        newest = self._index(now)
        out = {}
        pace = Pace(step)
        # a copy: a key added between turns is for the caller's guard to find, not the loop
        for key, ring in tuple(self._rings.items()):
            if pace.due():
                yield
                pace.restart()
            self._prune(ring, newest)
            out[key] = ring.window()
        return out

    def totals(self, now: float) -> dict[K, Counts]:
        """Counts per key within the window ending at `now`; keys with nothing in it included."""
        return {key: counts.copy() for key, counts in self.current(now).items()}

    def since_start(self, key: K) -> Counts:
        """Everything the key was given, in the window or not: a new object."""
        ring = self._rings[key]
        out = ring.window().copy()
        out.merge(ring.expired)
        return out

    def version(self, key: K) -> int:
        """Changes whenever the key's window or since-start total does: what a cache of its
        counts and statistics keys on."""
        ring = self._rings.get(key)
        return -1 if ring is None else ring.version

    def keys(self) -> Iterable[K]:
        return self._rings.keys()


def _settled_max(buckets: deque[tuple[int, Counts]], left: int) -> int:
    """The largest K of the settled buckets (all but the newest) after one that reached
    `left` went: `left` again as soon as one bucket has it (at one K, the first looked at),
    so a bucket leaving costs O(1) in the usual case, not O(buckets)."""
    top = 0
    for i in range(len(buckets) - 1):
        k = buckets[i][1].max_drafted
        if k == left:
            return left
        top = max(top, k)
    return top


class WindowedRatio:
    """Sums over the last `length` seconds, in buckets of `bucket` seconds."""

    __slots__ = ("_bucket", "_buckets", "_cached", "_n", "_version")

    def __init__(self, length: float, bucket: float) -> None:
        self._bucket = bucket
        self._n = max(1, round(length / bucket))
        self._buckets: deque[tuple[int, Sums]] = deque()
        self._version = 0
        self._cached: tuple[int, int, Sums] | None = None  # (oldest, version, total)

    def add(self, ts: float, x: float, y: float) -> None:
        self._version += 1
        index = int(ts // self._bucket)
        if self._buckets and self._buckets[-1][0] == index:
            self._buckets[-1][1].add(x, y)
        elif not self._buckets or self._buckets[-1][0] < index:
            sums = Sums()
            sums.add(x, y)
            self._buckets.append((index, sums))
            while self._buckets and self._buckets[0][0] <= index - self._n:
                self._buckets.popleft()
        # a late value for an older bucket is dropped: one request of many

    def total(self, now: float) -> Sums:
        """The sums over the window ending at `now`: not to be changed by the caller (one
        evaluation asks for the same total once per slice: it is summed once, exactly)."""
        oldest = int(now // self._bucket) - self._n + 1
        cached = self._cached
        if cached is not None and cached[0] == oldest and cached[1] == self._version:
            return cached[2]
        out = Sums()
        for index, sums in self._buckets:
            if index >= oldest:
                out.merge(sums)
        self._cached = (oldest, self._version, out)
        return out
