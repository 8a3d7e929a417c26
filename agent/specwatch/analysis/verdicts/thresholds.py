"""[compiled] The zone settings as an evaluation reads them (verdicts/evidence.py,
verdicts/zones.py).

Copied once from `ZoneSettings` into a plain class, which the build compiles: a pydantic
model's every attribute read goes through its `__getattr__` hook, and an evaluation reads a
few dozen per slice (about 4% of a replay's CPU under perf, compiled build).
"""

from __future__ import annotations

from specwatch.settings import ZoneSettings


class Thresholds:
    """What the zone rules read of `settings` (its fields, and each threshold's bars)."""

    def __init__(self, settings: ZoneSettings) -> None:
        self.green = settings.green
        self.red = settings.red
        self.indifference = settings.indifference
        self.change_evidence = settings.change_evidence
        self.collapse_margin = settings.collapse_margin
        self.exit_margin = settings.exit_margin
        self.exit_evaluations = settings.exit_evaluations
        self.min_dwell_seconds = settings.min_dwell_seconds
        self.min_trials = settings.min_trials
        self.min_requests = settings.min_requests
        self.slower_seconds = settings.slower_seconds
        self.green_bar = settings.bar("green")
        self.red_bar = settings.bar("red")
        self.green_exit_bar = settings.exit_bar("green")
        self.red_exit_bar = settings.exit_bar("red")

    def bar(self, threshold: str) -> float:
        """`ZoneSettings.bar`: the evidence entering a verdict about `threshold` needs."""
        return self.red_bar if threshold == "red" else self.green_bar

    def exit_bar(self, threshold: str) -> float:
        """`ZoneSettings.exit_bar`: the evidence the other way that ends that verdict."""
        return self.red_exit_bar if threshold == "red" else self.green_exit_bar
