"""Integer counts per slice: since start, and over a sliding window of time buckets.

Memory is bounded by slices x buckets per window, never by the number of requests.
"""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Generic, TypeVar

K = TypeVar("K")


class Counts:
    """Step-level sums of one slice (see docs/architecture.md, Definitions), and the sums over
    requests of squares and products of each request's own sums in the slice.

    `by_position[i]` counts steps that accepted at least i + 1 tokens, i.e. whose draft
    position i + 1 was accepted. Positions past `max_position` are not counted per position
    (the cap keeps the series bounded); every total still includes them.

    The second moments (`aa` = sum a_i^2, `at` = sum a_i t_i, `tt` = sum t_i^2, and likewise
    with drafted tokens d_i and steps s_i) are what a request-level (cluster-robust) variance
    of the ratios alpha-hat, rate and tau needs; `as_request()` fills them for a Counts that
    holds exactly one request's steps in one slice.
    """

    __slots__ = (
        "aa",
        "accepted",
        "ad",
        "as_",
        "at",
        "by_position",
        "dd",
        "drafted",
        "max_drafted",
        "requests",
        "ss",
        "steps",
        "trials",
        "tt",
    )

    def __init__(self, max_position: int) -> None:
        self.requests = 0
        self.steps = 0
        self.drafted = 0
        self.accepted = 0
        self.trials = 0
        self.max_drafted = 0  # the largest K seen: how many positions p_i is reported for
        self.by_position = [0] * max_position
        self.aa = self.at = self.tt = 0  # accepted x accepted, x trials; trials x trials
        self.ad = self.dd = 0  # accepted x drafted, drafted x drafted
        self.as_ = self.ss = 0  # accepted x steps, steps x steps

    def add_steps(self, drafted: Sequence[int], accepted: Sequence[int]) -> None:
        n = len(accepted)
        if len(drafted) != n:
            raise ValueError("per-step drafted and accepted differ in length")
        if not n:
            return
        self.steps += n
        total_a = sum(accepted)
        self.accepted += total_a
        k, most = drafted[0], max(accepted)
        if most <= k and drafted.count(k) == n:  # one K (the usual case): C loops only
            self.drafted += k * n
            self.max_drafted = max(self.max_drafted, k)
            rejected = n - accepted.count(k)  # a step accepting fewer than it drafted
        else:
            self.drafted += sum(drafted)
            self.max_drafted = max(self.max_drafted, max(drafted))
            rejected = sum(map(operator.lt, accepted, drafted))
        self.trials += total_a + rejected
        # by_position[i] counts steps with a > i: n less those that accepted i or fewer
        positions = self.by_position
        reached = n - accepted.count(0)
        for i in range(min(most, len(positions))):
            positions[i] += reached
            reached -= accepted.count(i + 1)

    def as_request(self) -> Counts:
        """Mark these counts as one request's contribution: one request, and its moments."""
        a, t, d, s = self.accepted, self.trials, self.drafted, self.steps
        self.requests = 1
        self.aa, self.at, self.tt = a * a, a * t, t * t
        self.ad, self.dd = a * d, d * d
        self.as_, self.ss = a * s, s * s
        return self

    @classmethod
    def of_request(
        cls, drafted: Sequence[int], accepted: Sequence[int], max_position: int
    ) -> Counts:
        counts = cls(max_position)
        counts.add_steps(drafted, accepted)
        return counts.as_request()

    def merge(self, other: Counts) -> None:
        self.requests += other.requests
        self.steps += other.steps
        self.drafted += other.drafted
        self.accepted += other.accepted
        self.trials += other.trials
        self.max_drafted = max(self.max_drafted, other.max_drafted)
        self.aa += other.aa
        self.at += other.at
        self.tt += other.tt
        self.ad += other.ad
        self.dd += other.dd
        self.as_ += other.as_
        self.ss += other.ss
        mine, theirs = self.by_position, other.by_position
        if len(mine) == len(theirs):
            self.by_position = list(map(operator.add, mine, theirs))
        else:
            for i in range(min(len(mine), len(theirs))):
                mine[i] += theirs[i]

    def subtract(self, other: Counts) -> None:
        """Take back what `merge(other)` added (all but `max_drafted`, which is a maximum)."""
        self.requests -= other.requests
        self.steps -= other.steps
        self.drafted -= other.drafted
        self.accepted -= other.accepted
        self.trials -= other.trials
        self.aa -= other.aa
        self.at -= other.at
        self.tt -= other.tt
        self.ad -= other.ad
        self.dd -= other.dd
        self.as_ -= other.as_
        self.ss -= other.ss
        mine, theirs = self.by_position, other.by_position
        if len(mine) == len(theirs):
            self.by_position = list(map(operator.sub, mine, theirs))
        else:
            for i in range(min(len(mine), len(theirs))):
                mine[i] -= theirs[i]

    def copy(self) -> Counts:
        out = Counts(len(self.by_position))
        out.merge(self)
        return out

    @classmethod
    def total(cls, parts: Iterable[Counts], max_position: int) -> Counts:
        out = cls(max_position)
        for part in parts:
            out.merge(part)
        return out

    def as_dict(self) -> dict[str, int]:
        return {
            "requests": self.requests,
            "spec_steps": self.steps,
            "draft_tokens": self.drafted,
            "accepted_tokens": self.accepted,
            "trials": self.trials,
        }

    def moments(self) -> tuple[int, ...]:
        return (self.aa, self.at, self.tt, self.ad, self.dd, self.as_, self.ss)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Counts) and (
            self.as_dict() == other.as_dict()
            and self.by_position == other.by_position
            and self.moments() == other.moments()
        )

    __hash__ = None  # type: ignore[assignment]  # mutable: not hashable

    def __repr__(self) -> str:
        return f"Counts({self.as_dict()}, by_position={self.by_position})"


class _Ring:
    """One key's buckets, oldest first, and their running total."""

    __slots__ = ("buckets", "total", "version")

    def __init__(self, max_position: int) -> None:
        self.buckets: deque[tuple[int, Counts]] = deque()
        self.total = Counts(max_position)
        self.version = 0  # bumped whenever the total changes


class SlidingWindow(Generic[K]):
    """Counts per key over the last `length` seconds, in buckets of `bucket` seconds.

    Time comes from the records (so a replayed log is windowed by its own timestamps); the
    caller passes `now` when reading. A window covers whole buckets: the one holding `now`
    and enough before it to span `length`.

    Each key keeps a running total: a record is added to its bucket and to the total, and a
    bucket that leaves the window is subtracted from it. Reading a window costs O(keys), not
    O(keys x buckets); the counts are integers, so the total is exact.
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
            buckets.append((index, counts.copy()))
            self._prune(ring, index)
        else:  # a late record (finished out of order): find its bucket
            for bucket_index, bucket_counts in buckets:
                if bucket_index == index:
                    bucket_counts.merge(counts)
                    break
            else:
                if index <= buckets[-1][0] - self.n_buckets:
                    return  # older than the window: counted since start, not here
                buckets.append((index, counts.copy()))
                ring.buckets = deque(sorted(buckets, key=lambda item: item[0]))
        ring.total.merge(counts)
        ring.version += 1

    def _prune(self, ring: _Ring, newest: int) -> None:
        oldest_kept = newest - self.n_buckets + 1
        buckets = ring.buckets
        if not buckets or buckets[0][0] >= oldest_kept:
            return
        while buckets and buckets[0][0] < oldest_kept:
            ring.total.subtract(buckets.popleft()[1])
        ring.total.max_drafted = max((c.max_drafted for _, c in buckets), default=0)
        ring.version += 1

    def current(self, now: float) -> dict[K, Counts]:
        """The running totals of the window ending at `now`, every key included: live objects
        owned by the window, to read before the next `add` (`totals` for copies)."""
        newest = self._index(now)
        out = {}
        for key, ring in self._rings.items():
            self._prune(ring, newest)
            out[key] = ring.total
        return out

    def totals(self, now: float) -> dict[K, Counts]:
        """Counts per key within the window ending at `now`; keys with nothing in it included."""
        return {key: counts.copy() for key, counts in self.current(now).items()}

    def version(self, key: K) -> int:
        """Changes whenever the key's window total does: what a cache of its statistics keys on."""
        ring = self._rings.get(key)
        return -1 if ring is None else ring.version

    def keys(self) -> Iterable[K]:
        return self._rings.keys()


class Histogram:
    """Fixed-bound histogram counts (non-cumulative per bucket; +Inf last)."""

    __slots__ = ("bounds", "buckets", "count", "sum")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.buckets = [0] * (len(self.bounds) + 1)
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        index = len(self.bounds)
        for i, bound in enumerate(self.bounds):
            if value <= bound:
                index = i
                break
        self.buckets[index] += 1
        self.count += 1
        self.sum += value

    def cumulative(self) -> list[tuple[str, int]]:
        """Prometheus' form: (le, cumulative count), ending with +Inf."""
        out, running = [], 0
        for bound, n in zip((*map(str, self.bounds), "+Inf"), self.buckets, strict=True):
            running += n
            out.append((bound, running))
        return out

    def copy(self) -> Histogram:
        out = Histogram(self.bounds)
        out.buckets = list(self.buckets)
        out.count, out.sum = self.count, self.sum
        return out


class RatioSums:
    """Sums over requests of x_i, y_i and their squares and product: a ratio sum(x) / sum(y)
    and its request-level variance (e.g. decode seconds over decode tokens)."""

    __slots__ = ("n", "x", "xx", "xy", "y", "yy")

    def __init__(self) -> None:
        self.n = 0
        self.x = self.y = self.xx = self.xy = self.yy = 0.0

    def add(self, x: float, y: float) -> None:
        self.n += 1
        self.x += x
        self.y += y
        self.xx += x * x
        self.xy += x * y
        self.yy += y * y

    def merge(self, other: RatioSums) -> None:
        self.n += other.n
        self.x += other.x
        self.y += other.y
        self.xx += other.xx
        self.xy += other.xy
        self.yy += other.yy


class WindowedRatio:
    """RatioSums over the last `length` seconds, in buckets of `bucket` seconds."""

    __slots__ = ("_bucket", "_buckets", "_cached", "_n", "_version")

    def __init__(self, length: float, bucket: float) -> None:
        self._bucket = bucket
        self._n = max(1, round(length / bucket))
        self._buckets: deque[tuple[int, RatioSums]] = deque()
        self._version = 0
        self._cached: tuple[int, int, RatioSums] | None = None  # (oldest, version, total)

    def add(self, ts: float, x: float, y: float) -> None:
        self._version += 1
        index = int(ts // self._bucket)
        if self._buckets and self._buckets[-1][0] == index:
            self._buckets[-1][1].add(x, y)
        elif not self._buckets or self._buckets[-1][0] < index:
            sums = RatioSums()
            sums.add(x, y)
            self._buckets.append((index, sums))
            while self._buckets and self._buckets[0][0] <= index - self._n:
                self._buckets.popleft()
        # a late value for an older bucket is dropped: one request of many

    def total(self, now: float) -> RatioSums:
        """The sums over the window ending at `now`: not to be changed by the caller (one
        evaluation asks for the same total once per slice: it is summed once, exactly)."""
        oldest = int(now // self._bucket) - self._n + 1
        cached = self._cached
        if cached is not None and cached[0] == oldest and cached[1] == self._version:
            return cached[2]
        out = RatioSums()
        for index, sums in self._buckets:
            if index >= oldest:
                out.merge(sums)
        self._cached = (oldest, self._version, out)
        return out
