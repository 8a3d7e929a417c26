"""The settings of the analysis: its window, zones, drift detector, speedup and load."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from specwatch.settings.base import MIN_STEP_SECONDS, Part


class WindowSettings(Part):
    """The sliding window every verdict is computed over."""

    length_seconds: float = Field(default=300.0, ge=MIN_STEP_SECONDS)
    bucket_seconds: float = Field(default=10.0, ge=MIN_STEP_SECONDS)

    @model_validator(mode="before")
    @classmethod
    def _buckets_follow_a_long_window(cls, data: Any) -> Any:
        """A window given without its bucket gets 10 s buckets, or 360 buckets when it is
        longer than an hour: `--window 86400` works without a second setting to raise."""
        if isinstance(data, dict) and "bucket_seconds" not in data:
            try:
                length = float(data["length_seconds"])
            except (KeyError, TypeError, ValueError):
                return data  # no length, or a bad one: its own validation speaks
            if length > 3600:
                return {**data, "bucket_seconds": length / 360}
        return data

    @model_validator(mode="after")
    def _whole_number_of_buckets(self) -> WindowSettings:
        if self.bucket_seconds > self.length_seconds:
            raise ValueError("bucket_seconds must not exceed length_seconds")
        if self.length_seconds / self.bucket_seconds > 3600:
            raise ValueError("more than 3600 buckets per window: raise bucket_seconds")
        return self


class ZoneSettings(Part):
    """Green / yellow / red thresholds, the evidence a verdict needs, gates and anti-flapping
    (analysis/verdicts/evidence.py, analysis/verdicts/zones.py)."""

    metric: Literal["alpha", "rate"] = "alpha"
    green: float = Field(default=0.70, gt=0, lt=1)
    red: float = Field(default=0.50, gt=0, lt=1)
    # the half-width of the indifference zone around each threshold: the sequential test
    # tells green - x from green + x; a truth closer to the threshold may go either way
    indifference: float = Field(default=0.02, gt=0, lt=0.5)
    # the log-likelihood ratio a green verdict needs to be entered, and the one against it that
    # ends it; red's own (None: green's). Set by benchmarks/zone_verdicts.py for an hour of
    # evaluations: red's lower bar buys the power green has at the same bar, since a slice at
    # 0.48 carries less information per request than one at 0.72 (fewer trials per step, more
    # spread between requests), while 0.52 is still called red less often than 0.69 green.
    evidence: float = Field(default=8.0, gt=0)
    exit_evidence: float = Field(default=4.0, gt=0)
    red_evidence: float | None = Field(default=6.0, gt=0)
    red_exit_evidence: float | None = Field(default=3.0, gt=0)
    # the log-likelihood ratio at which a shorter window's data count as a change from the
    # longer window's older rest: then the newer data decide (analysis/verdicts/evidence.py,
    # deciding)
    change_evidence: float = Field(default=12.0, gt=0)
    # red is entered within min_dwell_seconds of the last change only on evidence at least as
    # new as what decided that change, or when acceptance is surely below red - this margin
    collapse_margin: float = Field(default=0.05, ge=0, lt=1)
    # a verdict is left when the evidence says so about its threshold moved this far the other
    # way (below green, above red): at a threshold the verdict held is kept
    exit_margin: float = Field(default=0.01, ge=0, lt=0.5)
    # windows ending now, besides the verdict window, whose evidence counts: evidence of a
    # small difference accumulates over an hour that 5 minutes cannot show
    evidence_windows_seconds: tuple[float, ...] = (1800.0, 3600.0)
    exit_evaluations: int = Field(default=3, ge=1)  # leaving a red made by a slower gain
    min_dwell_seconds: float = Field(default=600.0, ge=0)
    min_trials: int = Field(default=1000, ge=1)
    min_requests: int = Field(default=30, ge=1)
    confidence: float = Field(default=0.95, gt=0.5, lt=1)
    # speculation surely slower than none (the gain's whole interval below 1) at every
    # evaluation for this long makes a slice red
    slower_seconds: float = Field(default=300.0, ge=0)
    evaluation_interval_seconds: float = Field(default=10.0, ge=MIN_STEP_SECONDS)

    def bar(self, threshold: str) -> float:
        """The evidence entering a verdict about `threshold` ("green" or "red") needs."""
        if threshold == "red" and self.red_evidence is not None:
            return self.red_evidence
        return self.evidence

    def exit_bar(self, threshold: str) -> float:
        """The evidence the other way that ends a verdict about `threshold`."""
        if threshold == "red" and self.red_exit_evidence is not None:
            return self.red_exit_evidence
        return self.exit_evidence

    @model_validator(mode="after")
    def _thresholds_are_ordered(self) -> ZoneSettings:
        if not self.red + self.indifference <= self.green - self.indifference:
            raise ValueError(
                "the indifference zones must not overlap: red + indifference <= green - "
                f"indifference, got {self.red} + {self.indifference} > {self.green} - "
                f"{self.indifference}"
            )
        if self.red + self.exit_margin + self.indifference >= (
            self.green - self.exit_margin - self.indifference
        ):
            raise ValueError("exit_margin must leave the two exit thresholds' zones apart")
        if self.red - self.collapse_margin - self.indifference <= 0:
            raise ValueError(
                "red - collapse_margin - indifference must be above 0, got "
                f"{self.red} - {self.collapse_margin} - {self.indifference}"
            )
        for threshold in ("green", "red"):
            if self.exit_bar(threshold) > self.bar(threshold):
                raise ValueError(
                    f"the exit evidence of {threshold} ({self.exit_bar(threshold)}) must not "
                    f"exceed its entry evidence ({self.bar(threshold)})"
                )
        if not self.evidence_windows_seconds or min(self.evidence_windows_seconds) <= 0:
            raise ValueError("evidence_windows_seconds needs at least one positive length")
        return self


class DriftSettings(Part):
    """The per-slice drift detector (analysis/drift/detector.py); defaults: docs/statistics.md,
    section "Drift, speedup and the draft length"."""

    bucket_seconds: float = Field(default=60.0, ge=MIN_STEP_SECONDS)
    baseline_buckets: int = Field(default=360, ge=2)  # 6 h of 1-minute buckets
    gap_buckets: int = Field(default=30, ge=0)  # the baseline ends this far before the bucket
    min_baseline_buckets: int = Field(default=60, ge=2)  # with evidence, for any verdict
    min_bucket_trials: int = Field(default=20, ge=1)
    false_alarms_per_week: float = Field(default=1.0, gt=0)  # per slice; sets the threshold
    k: float = Field(default=0.5, gt=0)
    min_delta: float = Field(default=0.03, ge=0, lt=1)
    end_buckets: int = Field(default=3, ge=1)
    recent_buckets: int = Field(default=30, ge=1)  # traffic-mix comparison: recent period

    @model_validator(mode="after")
    def _baseline_can_fill(self) -> DriftSettings:
        if self.min_baseline_buckets > self.baseline_buckets:
            raise ValueError("min_baseline_buckets must not exceed baseline_buckets")
        return self


class SpeedupSettings(Part):
    """How the gain of speculation is known: measured against a baseline, else modelled."""

    # c = draft step / target step, assumed where neither configured nor measured: the K advice
    # uses it; a modelled gain never does
    default_cost_ratio: float = Field(default=0.05, ge=0, lt=1)
    cost_ratio: dict[str, float] = Field(default_factory=dict)  # per served model
    baseline_tpot_ms: dict[str, float] = Field(default_factory=dict)  # per model, without spec
    # a measured gain needs this many requests with a time per output token on each side
    min_baseline_requests: int = Field(default=20, ge=2)
    # where the window has fewer, the gain is measured over this long (A/B baselines are a
    # small share of traffic), else it is `insufficient`
    lookback_seconds: float = Field(default=3600.0, ge=MIN_STEP_SECONDS)


class LoadSettings(Part):
    """The load dimension: requests in flight at the upstream when a request started."""

    # inclusive upper bounds of the batch-size buckets: 1, 2-4, 5-8, ... 33-64, 65+
    batch_edges: tuple[int, ...] = (1, 4, 8, 16, 32, 64)
    # the gain per bucket behind the gauges and SpecDecodeSlowerAtLoad (A/B baseline traffic
    # is a small share: an hour gathers the requests a measured gain needs)
    window_seconds: float = Field(default=3600.0, ge=MIN_STEP_SECONDS)

    @field_validator("batch_edges")
    @classmethod
    def _edges_increase(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if not value or value[0] < 1 or list(value) != sorted(set(value)):
            raise ValueError(f"batch edges must be >= 1 and strictly increasing: {value}")
        return value
