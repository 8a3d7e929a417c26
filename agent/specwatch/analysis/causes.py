"""Why a slice's acceptance is poor or suspicious: named causes, each with its own rule.

A zone says whether speculation pays in a slice; a cause says what to do about it. Each
detector reads what the analysis already has (the steps' own positions, per-request sums, the
config) and states its rule and its minimum evidence here; its detection rate on data that has
the cause and its false rate on overdispersed healthy traffic are measured by
benchmarks/causes.py (docs/causes.md has the figures and the runbook has each cause's fix).

- `draft_context_limit`: vLLM zero-pads drafts past the drafter's context limit and still
  counts them (vllm-project/vllm#34734). By absolute position (prompt + tokens before the
  step, 64-token bins), the first position from which on acceptance is at most 1% over at
  least 200 drafted tokens of at least 3 requests (in its first bin too), while before it
  acceptance is at least 10% over at least 200 drafted tokens. Since the start, per model;
  every slice whose ctx bucket reaches past that position carries it.
- `no_acceptance`: the window's request-level upper bound of alpha-hat is at most 0.02, past
  the zone gates (`zones.min_requests`, `zones.min_trials`), and no context limit explains it.
- `repetition_suspected`: requests that accept nearly everything (alpha-hat >= 0.99 over at
  least 32 trials: the `high` extreme, vLLM#44487) lift the slice over a zone threshold: at
  least 3 in the window, without them the slice's alpha-hat is at least 0.05 lower, and a
  threshold (`zones.green` or `zones.red`) lies between the two, past the zone gates. A
  healthy slice of high acceptance has many near-perfect requests too; only a lift that
  changes the verdict is the cause an operator must know of.
- `synthetic_verifier` / `lossy_verifier`: from the config (`rejection_sample_method:
  synthetic`; a relaxed acceptance rule): acceptance is not the target's; such slices get zone
  `not_applicable` and no alert.
- `schedule_not_applied`: a `num_speculative_tokens_per_batch_size` schedule is configured but
  the steps of requests started at a batch size it gives a shorter K drafted more than that K
  in at least half of at least 200 such steps from at least 10 requests (vLLM drops the
  schedule under data parallelism). The batch size is the requests the proxy had in flight at
  that upstream: a vLLM also serving others runs larger batches, at which a decreasing schedule
  gives a shorter K still, so an applied schedule is not flagged for it.
- `engine_disagreement`: vLLM's per-request `mean_acceptance_length` differs from 1 + accepted
  / steps of its own arrays by more than 0.01 (rounding) in at least 5 requests and 5% of
  those that report it, since the start (vLLM#56101 over-counts at EOS in some versions).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from dataclasses import dataclass, field
from itertools import accumulate, repeat
from operator import add
from typing import Any

from specwatch import conventions as C
from specwatch.analysis.counts import Counts
from specwatch.analysis.slicing import CtxBuckets
from specwatch.analysis.stats import SliceStats
from specwatch.model import SliceKey, SpecConfig, SpecDecodeBlock
from specwatch.settings import Settings

Kind = C.CauseKind

# draft_context_limit
POSITION_BIN = 64
POSITION_BINS = 1024  # 64k tokens; later positions count in the last bin
CLIFF_MIN_DRAFTED = 200
CLIFF_MIN_REQUESTS = 3
CLIFF_AFTER_MAX = 0.01
CLIFF_BEFORE_MIN = 0.10
# no_acceptance
NO_ACCEPTANCE_UPPER = 0.02
# extremes and repetition_suspected
EXTREME_MIN_TRIALS = 32
EXTREME_HIGH = 0.99
EXTREME_LOW = 0.03
REPETITION_MIN_REQUESTS = 3
REPETITION_MIN_SHIFT = 0.05
MAX_EXTREMES_KEPT = 10_000  # per slice, in the window
# schedule_not_applied
SCHEDULE_MIN_STEPS = 200
SCHEDULE_MIN_REQUESTS = 10
SCHEDULE_OVER_SHARE = 0.5
# engine_disagreement
TAU_TOLERANCE = 0.01
DISAGREEMENT_MIN_REQUESTS = 5
DISAGREEMENT_MIN_SHARE = 0.05

_VERIFIER_CAUSES = {"synthetic": Kind.SYNTHETIC_VERIFIER, "lossy": Kind.LOSSY_VERIFIER}


@dataclass(frozen=True, slots=True)
class Cause:
    kind: str
    detail: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.detail}


def extreme_kind(accepted: int, trials: int, drafted: int) -> str | None:
    """`high` / `low` for a request that accepted nearly all / nearly none of what it tried."""
    if trials >= EXTREME_MIN_TRIALS and accepted >= EXTREME_HIGH * trials:
        return C.Extreme.HIGH
    if drafted >= EXTREME_MIN_TRIALS and accepted <= EXTREME_LOW * trials:
        return C.Extreme.LOW
    return None


class _Positions:
    """One model's drafted and accepted tokens by the absolute position of their step."""

    __slots__ = ("_cliff", "accepted", "drafted", "reach", "version")

    def __init__(self) -> None:
        self.drafted = [0] * POSITION_BINS
        self.accepted = [0] * POSITION_BINS
        self.reach = [0] * POSITION_BINS  # requests whose last step is in the bin
        self.version = 0
        self._cliff: tuple[int, int | None] = (-1, None)

    def add(self, prompt: int, spec: SpecDecodeBlock) -> None:
        """The request's steps into the bins of their positions: each step's position from
        one C-level running sum, each bin's share by bisection, summed in C (a Python loop per
        step cost ~10% of the analysis' throughput)."""
        drafted, accepted = spec.drafted, spec.accepted
        n, last = len(accepted), POSITION_BINS - 1
        positions = list(accumulate(map(add, accepted, repeat(1)), initial=prompt + 1))
        lo = 0
        for b in range(min(positions[0] // POSITION_BIN, last), last + 1):
            if lo >= n:
                break
            hi = n if b == last else bisect_left(positions, (b + 1) * POSITION_BIN, lo, n)
            if hi > lo:
                self.drafted[b] += sum(drafted[lo:hi])
                self.accepted[b] += sum(accepted[lo:hi])
            lo = hi
        self.reach[min((positions[n] - 1) // POSITION_BIN, last)] += 1
        self.version += 1

    def cliff(self) -> int | None:
        """The position from which on acceptance is ~0 (the rule above); None when none."""
        if self._cliff[0] == self.version:
            return self._cliff[1]
        total_d, total_a = sum(self.drafted), sum(self.accepted)
        before_d = before_a = 0
        after_r = sum(self.reach)
        found = None
        for i in range(1, POSITION_BINS):
            before_d += self.drafted[i - 1]
            before_a += self.accepted[i - 1]
            after_r -= self.reach[i - 1]
            after_d, after_a = total_d - before_d, total_a - before_a
            if after_d < CLIFF_MIN_DRAFTED or after_r < CLIFF_MIN_REQUESTS:
                break  # later cut points only have less after them
            if (
                before_d >= CLIFF_MIN_DRAFTED
                and before_a >= CLIFF_BEFORE_MIN * before_d
                and after_a <= CLIFF_AFTER_MAX * after_d
                # and the fall is here: the first bin after it accepts (almost) nothing too
                and self.accepted[i] <= max(1.0, CLIFF_AFTER_MAX * self.drafted[i])
            ):
                found = i * POSITION_BIN
                break
        self._cliff = (self.version, found)
        return found


class _Extremes:
    """A slice's extreme requests in the window: (ts, kind, accepted, trials)."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: deque[tuple[float, str, int, int]] = deque(maxlen=MAX_EXTREMES_KEPT)

    def recent(self, since: float, kind: str) -> tuple[int, int, int]:
        """(requests, accepted, trials) of the `kind` extremes at or after `since`."""
        entries = self.entries
        while entries and entries[0][0] < since:
            entries.popleft()
        n = accepted = trials = 0
        for _, k, a, t in entries:
            if k == kind:
                n, accepted, trials = n + 1, accepted + a, trials + t
        return n, accepted, trials


@dataclass(slots=True)
class _ModelTally:
    """Since the start, per model: the schedule's compliance and vLLM's own tau."""

    schedule_steps: int = 0
    schedule_over: int = 0
    schedule_requests: int = 0
    reported: int = 0  # requests that reported a mean acceptance length
    disagreeing: int = 0
    reported_sum: float = 0.0  # of the disagreeing ones
    recomputed_sum: float = 0.0
    extremes: dict[str, int] = field(default_factory=dict)  # kind -> requests, since start


class CauseTracker:
    """What the detectors need, kept as requests arrive; `causes` reads a slice's at a moment."""

    def __init__(self, buckets: CtxBuckets, settings: Settings) -> None:
        zones = settings.zones
        self._thresholds = (zones.green, zones.red)  # a lift over one is a changed verdict
        self._buckets = buckets
        self._window = settings.window.length_seconds
        self._config: SpecConfig | None = None
        self._positions: dict[str, _Positions] = {}
        self._extremes: dict[SliceKey, _Extremes] = {}
        self._models: dict[str, _ModelTally] = {}

    def set_config(self, config: SpecConfig | None) -> None:
        self._config = config

    @property
    def verifier_cause(self) -> Cause | None:
        """A synthetic or lossy verifier: every slice's acceptance is not comparable."""
        config = self._config
        kind = None if config is None else _VERIFIER_CAUSES.get(config.verifier)
        if config is None or kind is None:
            return None
        return Cause(kind, {"rejection_sample_method": config.rejection_sample_method})

    @property
    def models(self) -> list[str]:
        return sorted(self._models)

    def extremes(self, model: str) -> dict[str, int]:
        tally = self._models.get(model)
        return {} if tally is None else dict(tally.extremes)

    def add(
        self,
        model: str,
        ts: float,
        prompt: int | None,
        spec: SpecDecodeBlock,
        parts: dict[SliceKey, Counts],
        in_flight: int | None,
    ) -> None:
        """One speculative request: `parts` its counts per slice, the model's rollup (its
        whole counts) included."""
        whole = parts[SliceKey(model, C.ALL, C.ALL)]
        tally = self._models.get(model)
        if tally is None:
            tally = self._models[model] = _ModelTally()
        if prompt is not None:
            positions = self._positions.get(model)
            if positions is None:
                positions = self._positions[model] = _Positions()
            positions.add(prompt, spec)
        kind = extreme_kind(whole.accepted, whole.trials, whole.drafted)
        if kind is not None:
            tally.extremes[kind] = tally.extremes.get(kind, 0) + 1
            for key, counts in parts.items():
                extremes = self._extremes.get(key)
                if extremes is None:
                    extremes = self._extremes[key] = _Extremes()
                extremes.entries.append((ts, kind, counts.accepted, counts.trials))
        if spec.reported_tau is not None and spec.steps:
            recomputed = 1.0 + sum(spec.accepted) / spec.steps
            tally.reported += 1
            if abs(spec.reported_tau - recomputed) > TAU_TOLERANCE:
                tally.disagreeing += 1
                tally.reported_sum += spec.reported_tau
                tally.recomputed_sum += recomputed
        self._schedule(tally, spec, in_flight)

    def _schedule(self, tally: _ModelTally, spec: SpecDecodeBlock, in_flight: int | None) -> None:
        config = self._config
        if config is None or not config.schedule or in_flight is None:
            return
        longest = max(k for _, _, k in config.schedule)
        planned = next((k for lo, hi, k in config.schedule if lo <= in_flight <= hi), None)
        if planned is None or planned >= longest:
            return  # at that batch size the schedule drafts the most: nothing to tell by
        tally.schedule_steps += spec.steps
        tally.schedule_over += sum(1 for d in spec.drafted if d > planned)
        tally.schedule_requests += 1

    def causes(
        self, key: SliceKey, window: Counts, stats: SliceStats, gates: tuple[int, int], now: float
    ) -> tuple[Cause, ...]:
        """The causes of `key` at `now`, from its window's `window` counts and `stats`;
        `gates`: the zone gates (requests, trials) no_acceptance needs."""
        out: list[Cause] = []
        verifier = self.verifier_cause
        if verifier is not None:
            out.append(verifier)
        rollup = key.ctx_bucket == C.ALL
        positions = self._positions.get(key.model)
        cliff = None if positions is None else positions.cliff()
        if cliff is not None and (rollup or self._reaches(key.ctx_bucket, cliff)):
            out.append(Cause(Kind.DRAFT_CONTEXT_LIMIT, {"position": cliff}))
        alpha = stats.alpha
        if (
            cliff is None
            and alpha is not None
            and alpha.upper <= NO_ACCEPTANCE_UPPER
            and window.requests >= gates[0]
            and window.trials >= gates[1]
        ):
            out.append(Cause(Kind.NO_ACCEPTANCE, {"upper": alpha.upper}))
        repetition = self._repetition(key, window, now, gates)
        if repetition is not None:
            out.append(repetition)
        tally = self._models.get(key.model)
        if tally is not None:
            out.extend(self._model_causes(tally, rollup))
        return tuple(out)

    def _reaches(self, label: str, position: int) -> bool:
        """Whether the ctx bucket `label` holds positions at or past `position`."""
        try:
            index = self._buckets.labels.index(label)
        except ValueError:  # unknown_ctx: no position known
            return False
        bounds = self._buckets.bounds
        return index >= len(bounds) or bounds[index] > position

    def _repetition(
        self, key: SliceKey, window: Counts, now: float, gates: tuple[int, int]
    ) -> Cause | None:
        extremes = self._extremes.get(key)
        if extremes is None or window.requests < gates[0] or window.trials < gates[1]:
            return None  # no verdict below the gates: none to be lifted
        n, accepted, trials = extremes.recent(now - self._window, C.Extreme.HIGH)
        rest = window.trials - trials
        if n < REPETITION_MIN_REQUESTS or rest <= 0:
            return None
        alpha = window.accepted / window.trials
        without = (window.accepted - accepted) / rest
        if alpha - without < REPETITION_MIN_SHIFT:
            return None
        if not any(without < threshold <= alpha for threshold in self._thresholds):
            return None
        share = n / window.requests if window.requests else 1.0
        return Cause(
            Kind.REPETITION_SUSPECTED,
            {"requests": n, "share": min(share, 1.0), "alpha": alpha, "alpha_without": without},
        )

    def _model_causes(self, tally: _ModelTally, rollup: bool) -> list[Cause]:
        out = []
        if (
            tally.schedule_steps >= SCHEDULE_MIN_STEPS
            and tally.schedule_requests >= SCHEDULE_MIN_REQUESTS
            and tally.schedule_over >= SCHEDULE_OVER_SHARE * tally.schedule_steps
        ):
            config = self._config
            out.append(
                Cause(
                    Kind.SCHEDULE_NOT_APPLIED,
                    {
                        "steps": tally.schedule_steps,
                        "over_share": tally.schedule_over / tally.schedule_steps,
                        "schedule": [] if config is None else [list(r) for r in config.schedule],
                    },
                )
            )
        if (
            rollup
            and tally.disagreeing >= DISAGREEMENT_MIN_REQUESTS
            and tally.disagreeing >= DISAGREEMENT_MIN_SHARE * tally.reported
        ):
            out.append(
                Cause(
                    Kind.ENGINE_DISAGREEMENT,
                    {
                        "requests": tally.disagreeing,
                        "share": tally.disagreeing / tally.reported,
                        "reported_tau": tally.reported_sum / tally.disagreeing,
                        "recomputed_tau": tally.recomputed_sum / tally.disagreeing,
                        "vllm_version": None if self._config is None else self._config.vllm_version,
                    },
                )
            )
        return out
