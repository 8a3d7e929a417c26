"""Latency objectives: per model (optionally per task) a time-to-first-token and a
time-per-output-token threshold that a share of requests meets over a period
(docs/latency-slos.md says what counts as a request, and why TPOT is never ITL)."""

from __future__ import annotations

from pydantic import Field, model_validator

from specwatch.settings.base import Part

# the fastest burn the generated alerts page on (the SRE workbook's 14.4x over 1h and 5m)
FASTEST_BURN = 14.4


class LatencyObjective(Part):
    """One SLO: a request is good when its TTFT is at most `ttft_ms` and its TPOT at most
    `tpot_ms`; `objective` of the requests must be good over `period_days`."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$")  # a label value: `slo`
    model: str = "*"  # a model name as served, or * for every model
    task: str | None = None  # None: every task
    ttft_ms: float = Field(gt=0)
    tpot_ms: float = Field(gt=0)
    objective: float = Field(default=0.99, gt=0, lt=1)
    period_days: float = Field(default=28.0, gt=0, le=366)

    @model_validator(mode="after")
    def _burns_can_page(self) -> LatencyObjective:
        needed = FASTEST_BURN * (1.0 - self.objective)
        if needed >= 1.0:
            least = 1.0 - 1.0 / FASTEST_BURN
            raise ValueError(
                f"objective {self.objective:g}: a {FASTEST_BURN:g}x burn would need an error "
                f"ratio of {needed:.3g}, which is never reached; give at least {least:.3f}"
            )
        return self

    def covers(self, model: str, task: str) -> bool:
        return (self.model == "*" or self.model == model) and self.task in (None, task)


def unique_names(objectives: tuple[LatencyObjective, ...]) -> tuple[LatencyObjective, ...]:
    names = [objective.name for objective in objectives]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"each latency SLO needs a name of its own: {', '.join(twice)} twice")
    return objectives
