"""[compiled] Context buckets, and the split of one request's steps into them; load buckets.

The context position of a step is the prompt length plus the tokens emitted before it. vLLM
lists only the steps that drafted something; the first token comes from prefill, so step j of
the list starts at prompt + 1 + sum over earlier listed steps of (accepted + 1). Single-token
steps that drafted nothing (ngram without a match) are not listed and their place is unknown:
they are taken to come after the listed ones, which can shift a step by a few tokens at most
per unmatched step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from specwatch import conventions as C
from specwatch.analysis.counting.counts import Counts
from specwatch.core.records import RequestKey, SliceKey, SpecDecodeBlock, SpecTotals
from specwatch.core.search import first_above, first_at_least

_TUPLE_NEW = tuple.__new__


# One object per distinct key: a dict keyed by slices (half a dozen a request: windows,
# evidence, drift, causes, load, goodput) then finds it by identity, where a new tuple each
# time is compared with the stored one field by field. Looked up by its strings (their hashes
# are cached); bounded like the labels (models past the cap fold into `other`), and past
# INTERNED keys are made fresh rather than kept.
INTERNED = 1 << 16
_slices: dict[str, dict[str, dict[str, SliceKey]]] = {}
_requests: dict[str, dict[str, dict[str, dict[str, RequestKey]]]] = {}
_interned = [0]


def slice_key(model: str, ctx_bucket: str, task: str) -> SliceKey:
    """SliceKey(model, ctx_bucket, task), interned (above); made by tuple's own constructor
    (a named tuple's __new__ is a Python function)."""
    by_ctx = _slices.get(model)
    by_task = None if by_ctx is None else by_ctx.get(ctx_bucket)
    key = None if by_task is None else by_task.get(task)
    if key is None:
        key = _TUPLE_NEW(SliceKey, (model, ctx_bucket, task))
        if _interned[0] < INTERNED:
            _interned[0] += 1
            _slices.setdefault(model, {}).setdefault(ctx_bucket, {})[task] = key
    return key


def request_key(model: str, ctx_bucket: str, task: str, variant: str) -> RequestKey:
    """RequestKey(model, ctx_bucket, task, variant), as `slice_key`."""
    by_ctx = _requests.get(model)
    by_task = None if by_ctx is None else by_ctx.get(ctx_bucket)
    by_variant = None if by_task is None else by_task.get(task)
    key = None if by_variant is None else by_variant.get(variant)
    if key is None:
        key = _TUPLE_NEW(RequestKey, (model, ctx_bucket, task, variant))
        if _interned[0] < INTERNED:
            _interned[0] += 1
            in_ctx = _requests.setdefault(model, {}).setdefault(ctx_bucket, {})
            in_ctx.setdefault(task, {})[variant] = key
    return key


def _short(n: int) -> str:
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


class CtxBuckets:
    """Upper bounds -> labels like `0-512`, `512-2k`, `32k+`."""

    __slots__ = ("bounds", "labels")

    def __init__(self, bounds: Sequence[int]) -> None:
        self.bounds = tuple(bounds)
        lows = (0, *self.bounds)
        self.labels = (
            *(f"{_short(lo)}-{_short(hi)}" for lo, hi in zip(lows, self.bounds, strict=False)),
            f"{_short(self.bounds[-1])}+",
        )

    def label(self, position: int) -> str:
        return self.labels[self.index(position)]

    def index(self, position: int) -> int:
        """The bucket `position` falls in (bisect_right on the bounds: core/search.py)."""
        return first_above(self.bounds, position)

    def reaches(self, label: str, position: int) -> bool:
        """Whether the bucket `label` holds positions at or past `position` (unknown: no)."""
        if label not in self.labels:
            return False
        index = self.labels.index(label)
        return index >= len(self.bounds) or self.bounds[index] > position


def split_steps(
    spec: SpecDecodeBlock, prompt_tokens: int, buckets: CtxBuckets, max_position: int
) -> dict[str, Counts]:
    """Per ctx bucket label, the counts of this request's steps that started in it, each
    marked as one request's contribution to that bucket (`Counts.as_request`)."""
    drafted, accepted = spec.drafted, spec.accepted
    position = prompt_tokens + 1
    # Fast path: the whole request stays in one bucket (the common case).
    end = position + sum(accepted) + len(accepted)
    first = buckets.index(position)
    if first == buckets.index(end):
        return {buckets.labels[first]: Counts.of_request(drafted, accepted, max_position)}
    out: dict[int, tuple[list[int], list[int]]] = {}
    for d, a in zip(drafted, accepted, strict=True):
        index = buckets.index(position)
        steps = out.get(index)
        if steps is None:
            steps = out[index] = ([], [])
        steps[0].append(d)
        steps[1].append(a)
        position += a + 1
    return {
        buckets.labels[index]: Counts.of_request(ds, as_, max_position)
        for index, (ds, as_) in out.items()
    }


def request_parts(
    model: str,
    task: str,
    prompt_tokens: int | None,
    spec: SpecDecodeBlock,
    buckets: CtxBuckets,
    max_position: int,
) -> dict[SliceKey, Counts]:
    """The counts one request's steps add to each slice they started in (`split_steps`; the
    unknown bucket without a prompt length), and, last, to its model's rollup."""
    if prompt_tokens is None:
        whole = Counts.of_request(spec.drafted, spec.accepted, max_position)
        parts: dict[str, Counts] = {C.UNKNOWN_CTX: whole}
    else:
        parts = split_steps(spec, prompt_tokens, buckets, max_position)
    keyed = {slice_key(model, label, task): counts for label, counts in parts.items()}
    if len(parts) == 1:  # the usual case: the rollup gets the same counts (read, not kept)
        (rollup,) = parts.values()
    else:
        # One request, one sampling unit: its moments are those of its whole accepted tokens
        # and trials, not the sum of its parts' (which would drop the covariance between its
        # buckets). Prometheus gets the same from the per-model counters.
        rollup = Counts.of_request(spec.drafted, spec.accepted, max_position)
    keyed[slice_key(model, C.ALL, C.ALL)] = rollup
    return keyed


def totals_parts(
    model: str,
    task: str,
    prompt_tokens: int | None,
    totals: SpecTotals,
    buckets: CtxBuckets,
    max_position: int,
) -> dict[SliceKey, Counts]:
    """A request known by its totals (an engine without per-step data): its slice, in the ctx
    bucket its prompt starts in (its steps cannot be placed), and, last, its model's rollup."""
    counts = Counts.of_totals(totals.drafted, totals.accepted, totals.steps, max_position)
    label = C.UNKNOWN_CTX if prompt_tokens is None else buckets.label(prompt_tokens + 1)
    return {slice_key(model, label, task): counts, slice_key(model, C.ALL, C.ALL): counts}


class SliceOrder:
    """Slices in the exposition's order (model, ctx bucket's place, task): sorted again only
    when the set of slices changed."""

    def __init__(self, buckets: CtxBuckets) -> None:
        self._place = {label: i for i, label in enumerate(buckets.labels)}
        self._keys: set[SliceKey] = set()
        self._order: list[SliceKey] = []

    def __call__(self, slices: Mapping[SliceKey, object]) -> list[SliceKey]:
        if slices.keys() != self._keys:
            place, last = self._place, len(self._place)
            self._order = sorted(
                slices, key=lambda k: (k.model, place.get(k.ctx_bucket, last), k.task)
            )
            self._keys = set(slices)
        return self._order


class LoadBuckets:
    """Upper bounds (inclusive) -> labels like `1`, `2-4`, `65+`."""

    __slots__ = ("bounds", "labels", "ranges")

    def __init__(self, bounds: Sequence[int]) -> None:
        self.bounds = tuple(bounds)
        lows = (1, *(b + 1 for b in self.bounds))
        # the last range is open (None), not math.inf: the bounds stay ints, so a label
        # reads `2-4` whether this module runs as Python or compiled (mypyc would make them
        # floats in a tuple typed by math.inf)
        highs: tuple[int | None, ...] = (*self.bounds, None)
        self.ranges = tuple(zip(lows, highs, strict=True))
        self.labels = tuple(
            f"{lo}+" if hi is None else str(lo) if lo == hi else f"{lo}-{hi}"
            for lo, hi in self.ranges
        )

    def index(self, in_flight: int) -> int:
        """The bucket `in_flight` requests fall in (bisect_left on the upper bounds)."""
        return first_at_least(self.bounds, max(1, in_flight))

    def label(self, in_flight: int) -> str:
        return self.labels[self.index(in_flight)]
