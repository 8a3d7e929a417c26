"""[compiled] The sums of the zone windows (verdicts/evidence.py): per key, each window of a given
length ending at the latest read, kept in buckets.

The long windows keep, per key and per bucket of a minute, only the sums a proportion's
interval needs, and running totals per window: memory is keys x buckets, never requests. A
record is added to its bucket only; the open (newest) bucket joins the windows' totals when it
is sealed, and a read adds it to each total it belongs to: one sum per record instead of one
per window, the reads (every 10 s) paying what the records (every request) no longer do.
"""

from __future__ import annotations

import math
import operator
from array import array
from collections import deque
from typing import Generic, TypeVar

from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.sums import Sums

K = TypeVar("K")

# the fields a bucket keeps: requests, then (successes, trials, ss, st, tt) of alpha-hat and
# of the rate (accepted over drafted)
_FIELDS = 9


def _fields(counts: Counts) -> tuple[int, ...]:
    c = counts
    return (c.requests, c.accepted, c.trials, c.aa, c.at, c.tt, c.drafted, c.ad, c.dd)


def _pick(values: tuple[int, ...] | list[int], metric: str) -> Sums:
    n, a, t, aa, at, tt, d, ad, dd = values
    if metric == "alpha":
        return Sums(n, a, t, aa, at, tt)
    return Sums(n, a, d, aa, ad, dd)


def _add_counts(total: list[int], c: Counts) -> None:
    """`_fields(c)` added into `total` in place, without the tuple between (the usual case:
    a record joining the open bucket)."""
    total[0] += c.requests
    total[1] += c.accepted
    total[2] += c.trials
    total[3] += c.aa
    total[4] += c.at
    total[5] += c.tt
    total[6] += c.drafted
    total[7] += c.ad
    total[8] += c.dd


def _add_into(total: list[int], values: tuple[int, ...]) -> None:
    """`values` added into `total` in place: a loop the build compiles to integer arithmetic,
    where a map makes objects (about 5% of a replay, read by perf)."""
    for i in range(_FIELDS):
        total[i] += values[i]


class _Key:
    __slots__ = ("advanced", "buckets", "edges", "totals", "version")

    def __init__(self, windows: int) -> None:
        # oldest first. The newest bucket, which records join, is a list summed into in place;
        # it is sealed into an array (raw int64s: a key keeps up to an hour of buckets) when a
        # newer one starts.
        self.buckets: deque[tuple[int, list[int] | array[int]]] = deque()
        # per window, its sealed buckets' sums (the open one is added when read): few lists,
        # summed in place
        self.totals = [[0] * _FIELDS for _ in range(windows)]
        # per window, the oldest bucket index its total still holds (what a read moved to)
        self.edges: list[float] = [-math.inf] * windows
        self.version = 0
        self.advanced = -(2**62)  # the newest bucket index a read advanced the windows to


def _open(entry: _Key) -> tuple[int, list[int]] | None:
    """The open bucket (the newest, a list; sealed ones are arrays), if there is one."""
    if entry.buckets:
        index, values = entry.buckets[-1]
        if isinstance(values, list):
            return index, values
    return None


class EvidenceWindows(Generic[K]):
    """Per key, the sums of `Sums` over each window of `lengths` seconds ending at the time of
    the latest read, in buckets of `bucket` seconds.

    Time comes from the records and the reads, as in windows.SlidingWindow. A record joins its
    bucket and the total of every window that still holds that bucket; a read at `now` takes
    out of each window's total the buckets that have left it since the last read (reads move
    forward in time: a read earlier than the last one sees the later one's windows). Integer
    sums, so every total is exact.
    """

    def __init__(self, lengths: tuple[float, ...], bucket: float) -> None:
        self.lengths = tuple(sorted(lengths))  # the longest last: it keeps the buckets
        self.bucket = bucket
        self._spans = [max(1, round(length / bucket)) for length in self.lengths]
        self._keys: dict[K, _Key] = {}

    def add(self, key: K, ts: float, counts: Counts) -> None:
        if not self.lengths:  # a verdict window as long as every evidence window: it decides
            return
        entry = self._keys.get(key)
        if entry is None:
            entry = self._keys[key] = _Key(len(self.lengths))
        index = int(ts // self.bucket)
        buckets = entry.buckets
        opened = _open(entry)
        if opened is not None and opened[0] == index:
            _add_counts(opened[1], counts)  # the windows' totals get it when sealed or read
            entry.version += 1
            return
        values = _fields(counts)
        if not buckets or buckets[-1][0] < index:
            if opened is not None:
                self._seal(entry, opened[0], opened[1])
            buckets.append((index, list(values)))
        else:  # late: an older bucket, if the longest window still holds it
            for position, (bucket_index, held) in enumerate(buckets):
                if bucket_index == index:
                    buckets[position] = (index, array("q", map(operator.add, held, values)))
                    break
            else:
                if index < entry.edges[-1]:
                    return
                buckets.append((index, array("q", values)))
                entry.buckets = deque(sorted(buckets, key=lambda item: item[0]))
            for total, edge in zip(entry.totals, entry.edges, strict=True):
                if index >= edge:
                    _add_into(total, values)
        entry.version += 1

    @staticmethod
    def _seal(entry: _Key, index: int, values: list[int]) -> None:
        """The open bucket is settled: an array from now on, and in the totals of the windows
        that still hold it."""
        entry.buckets[-1] = (index, array("q", values))
        sealed = tuple(values)
        for total, edge in zip(entry.totals, entry.edges, strict=True):
            if index >= edge:
                _add_into(total, sealed)

    def read(self, key: K, now: float, metric: str) -> list[tuple[float, Sums]]:
        """Each window's sums at `now` (windows that hold nothing included), for `metric`
        (alpha: accepted over trials; rate: over drafted)."""
        entry = self._keys.get(key)
        if entry is None:
            return []
        self._advance(entry, int(now // self.bucket))
        opened = _open(entry)
        out = []
        for length, total, edge in zip(self.lengths, entry.totals, entry.edges, strict=True):
            values = total
            if opened is not None and opened[0] >= edge:
                values = [t + o for t, o in zip(total, opened[1], strict=True)]
            out.append((length, _pick(values, metric)))
        return out

    def _advance(self, entry: _Key, newest: int) -> None:
        # an evaluation reads a key's windows three or four times at one `now`: after the
        # first, nothing left them (the edges move only with `newest`; reads go forward)
        if newest <= entry.advanced:
            return
        entry.advanced = newest
        changed = False
        for w, span in enumerate(self._spans):
            edge = newest - span + 1
            if edge <= entry.edges[w]:
                continue
            total = entry.totals[w]
            for index, values in entry.buckets:
                if index >= edge:
                    break
                if index >= entry.edges[w]:
                    if not isinstance(values, list):  # the open bucket is in no total
                        total[:] = map(operator.sub, total, values)
                    changed = True
            entry.edges[w] = edge
        buckets = entry.buckets
        while buckets and buckets[0][0] < entry.edges[-1]:
            buckets.popleft()
        if changed:
            entry.version += 1

    def version(self, key: K, now: float) -> int:
        """Changes whenever one of the key's window totals does, reads at `now` included."""
        entry = self._keys.get(key)
        if entry is None:
            return -1
        self._advance(entry, int(now // self.bucket))
        return entry.version
