"""[compiled] Integer counts of one slice's steps: the sums every statistic is a ratio of.

See docs/architecture.md, section "Steps, as vLLM counts them", for what a step is.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from itertools import accumulate

# the second moments over a slice's requests, in the order `Counts.of_histogram` takes them
MOMENTS = ("aa", "at", "tt", "ad", "dd", "as_", "ss")


class Counts:
    """Step-level sums of one slice (their statistics: analysis/counting/stats.py), and the sums
    over requests of squares and products of each request's own sums in the slice.

    `by_position[i]` counts steps that accepted at least i + 1 tokens, i.e. whose draft
    position i + 1 was accepted; `drafted_by_position[i]` counts steps that drafted at least
    i + 1 tokens, its denominator. At one K the two differ only in the numerator; with
    variable K (a batch-size schedule, adaptive methods) a position beyond a step's draft is
    unobserved, not a rejection. Positions past `max_position` are not counted per position
    (the cap keeps the series bounded); every total still includes them. No step accepts
    past its draft, so `by_position` is 0 from `max_drafted` on: a merge adds (a subtraction
    takes) only the positions below the other's `max_drafted`, in place (`copy` shares no
    list, so no other Counts sees it).

    `steps_by_drafted[d]` / `accepted_by_drafted[d]` count steps that drafted d tokens and the
    tokens they accepted (d = `max_position` holds that many or more), so rate and tau can be
    read per drafted length; `drafted_by_position` follows from them. They are kept sparse
    (one key at one K), so merging a request costs what it did before variable K. A step that
    drafted nothing (d = 0: all its draft invalidated by a grammar in vLLM 0.32, which still
    counts it in `num_drafts`; K = 0 rows in newer builds' histograms) is a step: it emits one
    token, so it is in `steps` and tau, and in no trial.

    The second moments (`aa` = sum a_i^2, `at` = sum a_i t_i, `tt` = sum t_i^2, and likewise
    with drafted tokens d_i and steps s_i) are what a request-level (cluster-robust) variance
    of the ratios alpha-hat, rate and tau needs; `as_request()` fills them for a Counts that
    holds exactly one request's steps in one slice.
    """

    __slots__ = (
        "_accepted_at",
        "_steps_at",
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
        # per drafted length (capped at max_position): steps, and the tokens they accepted;
        # the two dicts always hold the same keys
        self._steps_at: dict[int, int] = {}
        self._accepted_at: dict[int, int] = {}
        self.aa = self.at = self.tt = 0  # accepted x accepted, x trials; trials x trials
        self.ad = self.dd = 0  # accepted x drafted, drafted x drafted
        self.as_ = self.ss = 0  # accepted x steps, steps x steps

    def add_steps(self, drafted: Sequence[int], accepted: Sequence[int]) -> None:
        n = len(accepted)
        if len(drafted) != n:
            raise ValueError("per-step drafted and accepted differ in length")
        if not n:
            return
        k = drafted[0]
        if k and drafted.count(k) == n:  # one K (the usual case)
            self._add_one_k(k, accepted)
            return
        by_length: dict[int, list[int]] = {}
        for d, a in zip(drafted, accepted, strict=True):
            by_length.setdefault(d, []).append(a)
        for d, accepted_at_d in sorted(by_length.items()):
            if d:
                self._add_one_k(d, accepted_at_d)
            else:  # nothing drafted: one token, no trial
                if any(accepted_at_d):
                    raise ValueError("a step accepted tokens it did not draft")
                self.steps += len(accepted_at_d)
                self.add_drafted_length(0, len(accepted_at_d), 0)

    def _add_one_k(self, k: int, accepted: Sequence[int]) -> None:
        """Steps that all drafted k >= 1 tokens."""
        n, total_a, trials, reached = _one_k(k, accepted, len(self.by_position))
        self.steps += n
        self.accepted += total_a
        self.drafted += k * n
        self.max_drafted = max(self.max_drafted, k)
        self.trials += trials
        self.add_drafted_length(min(k, len(self.by_position)), n, total_a)
        self.by_position = list(map(operator.add, self.by_position, reached))

    def add_drafted_length(self, length: int, steps: int, accepted: int) -> None:
        """Steps that drafted `length` tokens (already capped), and what they accepted."""
        self._steps_at[length] = self._steps_at.get(length, 0) + steps
        self._accepted_at[length] = self._accepted_at.get(length, 0) + accepted

    @property
    def steps_by_drafted(self) -> list[int]:
        return [self._steps_at.get(d, 0) for d in range(len(self.by_position) + 1)]

    @property
    def accepted_by_drafted(self) -> list[int]:
        return [self._accepted_at.get(d, 0) for d in range(len(self.by_position) + 1)]

    @property
    def drafted_by_position(self) -> list[int]:
        """Steps that drafted at least i + 1 tokens, per position i."""
        cap = len(self.by_position)
        if len(self._steps_at) == 1:  # one drafted length, the usual case (capped already)
            for length, steps in self._steps_at.items():
                return [steps] * length + [0] * (cap - length)
        at = [0] * (cap + 1)
        for d, n in self._steps_at.items():
            at[min(d, cap)] += n  # (lengths are capped when counted)
        at_least = list(accumulate(reversed(at)))  # [j]: drafted at least cap - j
        at_least.reverse()
        return at_least[1:]

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
        """One request's steps in one slice, marked as one request (`as_request`)."""
        n = len(accepted)
        k = drafted[0] if n and len(drafted) == n else 0
        if not k or drafted.count(k) != n:  # variable K, nothing drafted, or a bad pair
            counts = cls(max_position)
            counts.add_steps(drafted, accepted)
            return counts.as_request()
        # one K (the usual case): every field set once, not added to a fresh Counts
        n, a, t, reached = _one_k(k, accepted, max_position)
        d, length = k * n, min(k, max_position)
        out = cls(0)  # every field is set below (mypyc compiles no bare __new__)
        out.requests, out.steps, out.drafted, out.accepted, out.trials = 1, n, d, a, t
        out.max_drafted, out.by_position = k, reached
        out._steps_at, out._accepted_at = {length: n}, {length: a}
        out.aa, out.at, out.tt = a * a, a * t, t * t
        out.ad, out.dd = a * d, d * d
        out.as_, out.ss = a * n, n * n
        return out

    @classmethod
    def of_totals(cls, drafted: int, accepted: int, steps: int | None, max_position: int) -> Counts:
        """One request known only by its totals (core/records.SpecTotals): drafted, accepted
        and, where the engine says, steps. No trial (which step rejected is unknown) and no
        position: alpha-hat and the per-position rates have nothing from it, the rate has it
        all, tau has it when `steps` is known (else the request adds to neither side of tau)."""
        out = cls(max_position)
        out.requests, out.drafted, out.accepted = 1, drafted, accepted
        out.aa, out.ad, out.dd = accepted * accepted, accepted * drafted, drafted * drafted
        if steps is not None:
            out.steps, out.as_, out.ss = steps, accepted * steps, steps * steps
        return out

    @classmethod
    def of_histogram(
        cls,
        steps: Iterable[tuple[int, int, int]],
        requests: int,
        moments: Sequence[int],
        max_position: int,
    ) -> Counts:
        """The counts of steps given as (drafted, accepted, how many) triples, over `requests`
        request parts with the second `moments` (aa, at, tt, ad, dd, as_, ss) summed over
        them: what fleet analysis aggregates in SQL (fleet/sql.py), read as the sidecar
        counts it."""
        out = cls(max_position)
        out.requests = requests
        out.aa, out.at, out.tt, out.ad, out.dd, out.as_, out.ss = moments
        reached = out.by_position
        for d, a, n in steps:
            if a > d:
                raise ValueError("a step accepted more tokens than it drafted")
            out.steps += n
            out.drafted += d * n
            out.accepted += a * n
            out.trials += n * (a + 1 if a < d else a)
            out.max_drafted = max(out.max_drafted, d)
            out.add_drafted_length(min(d, max_position), n, a * n)
            for i in range(min(a, max_position)):
                reached[i] += n
        return out

    def merge(self, other: Counts) -> None:
        self.requests += other.requests
        self.steps += other.steps
        self.drafted += other.drafted
        self.accepted += other.accepted
        self.trials += other.trials
        k = other.max_drafted
        if k > self.max_drafted:
            self.max_drafted = k
        self.aa += other.aa
        self.at += other.at
        self.tt += other.tt
        self.ad += other.ad
        self.dd += other.dd
        self.as_ += other.as_
        self.ss += other.ss
        mine, theirs = self.by_position, other.by_position
        if len(mine) == len(theirs):  # in place, up to other's K: past it, its counts are 0
            for i in range(min(k, len(mine))):
                mine[i] += theirs[i]
        else:
            self.by_position = _combine(mine, theirs, operator.add)
        steps_at, accepted_at = self._steps_at, self._accepted_at
        for length, steps in other._steps_at.items():
            steps_at[length] = steps_at.get(length, 0) + steps
            accepted_at[length] = accepted_at.get(length, 0) + other._accepted_at[length]

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
        if len(mine) == len(theirs):  # as in merge
            for i in range(min(other.max_drafted, len(mine))):
                mine[i] -= theirs[i]
        else:
            self.by_position = _combine(mine, theirs, operator.sub)
        for length, steps in other._steps_at.items():
            left = self._steps_at[length] - steps
            if left:
                self._steps_at[length] = left
                self._accepted_at[length] -= other._accepted_at[length]
            else:  # none left at this length: the key goes, so equal counts compare equal
                del self._steps_at[length], self._accepted_at[length]

    def by_drafted_length(self) -> list[tuple[int, int, int]]:
        """(drafted length, steps, accepted tokens) for every length seen, 0 included."""
        return sorted((d, n, self._accepted_at[d]) for d, n in self._steps_at.items() if n)

    def copy(self) -> Counts:
        """An equal, independent Counts (field by field: a window is copied at every read)."""
        out = Counts(0)  # every field is set below
        out.requests, out.steps, out.drafted = self.requests, self.steps, self.drafted
        out.accepted, out.trials, out.max_drafted = self.accepted, self.trials, self.max_drafted
        out.aa, out.at, out.tt = self.aa, self.at, self.tt
        out.ad, out.dd, out.as_, out.ss = self.ad, self.dd, self.as_, self.ss
        out.by_position = self.by_position.copy()
        out._steps_at = self._steps_at.copy()
        out._accepted_at = self._accepted_at.copy()
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
            and self._steps_at == other._steps_at
            and self._accepted_at == other._accepted_at
            and self.moments() == other.moments()
        )

    __hash__ = None  # type: ignore[assignment]  # mutable: not hashable

    def __repr__(self) -> str:
        return f"Counts({self.as_dict()}, by_position={self.by_position})"


def _one_k(k: int, accepted: Sequence[int], cap: int) -> tuple[int, int, int, list[int]]:
    """Steps that all drafted k >= 1 tokens: their number, accepted tokens, trials (+ 1 per
    step that hit a rejection) and steps per position accepting it (the first `cap`), in one
    pass (compiled: a loop over a request's few steps costs less than a call of a builtin)."""
    n = len(accepted)
    by_count = [0] * (k + 1)  # steps by tokens accepted
    total_a = 0
    for a in accepted:
        if a > k or a < 0:
            raise ValueError("a step accepted more tokens than it drafted (or fewer than none)")
        by_count[a] += 1
        total_a += a
    # reached[i] counts steps with a > i: n less those that accepted i or fewer
    reached = [0] * cap
    left = n - by_count[0]
    for i in range(min(k, cap)):
        reached[i] = left
        left -= by_count[i + 1]
    return n, total_a, total_a + n - by_count[k], reached


def _combine(mine: list[int], theirs: list[int], op: Callable[[int, int], int]) -> list[int]:
    """Element-wise op; lists of different lengths (another max_position) keep mine's length."""
    if len(mine) == len(theirs):
        return list(map(op, mine, theirs))
    return [*map(op, mine, theirs), *mine[len(theirs) :]]
