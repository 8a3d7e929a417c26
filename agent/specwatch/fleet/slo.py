"""Latency objectives over cycle logs on DuckDB: per group, variant and objective the SLI's
events and the good ones, with the minute sums attainment's interval needs.

A request is judged as the sidecar judges it (analysis/counting/objectives.judged) on what a
cycle log holds: a client that left is no event; no TTFT, or no TPOT past the first token, is
`unmeasured` (no event); else good when its TTFT and its own TPOT are within the thresholds
(inclusive; one token: TTFT alone). The comparison is made in seconds, the line's milliseconds
divided as the sidecar divides them, so each request lands where replay puts it
(tests/integration/test_analyze_slo.py holds the counts equal). A cycle log holds no upstream
errors: attainment here is over the requests that were served.

Per group the requests are summed per minute (the minute each finished in) and the minutes'
squares kept: the sidecar's minute-robust Wilson interval (docs/latency-slos.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from specwatch.analysis.counting.objectives import budget_left
from specwatch.analysis.counting.slicing import CtxBuckets, LoadBuckets
from specwatch.analysis.counting.stats import Interval, proportion_interval
from specwatch.conventions import UNKNOWN_CTX
from specwatch.fleet.groups import label
from specwatch.fleet.sql import Buckets, dimension_sql, needed_columns, statuses
from specwatch.settings.slo import LatencyObjective

SUMS = ("m", "g", "n", "gg", "gn", "nn")  # per objective, after the group's dimensions


def needed(dimensions: Sequence[str]) -> frozenset[str]:
    """The columns the query reads for these dimensions: the lines' own classification's
    (fleet/sql.py), and the latency fields."""
    return needed_columns(dimensions, False) | {"ttft_ms", "tpot_ms", "outcome"}


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _judged(objective: LatencyObjective) -> str:
    """1 good, 0 bad, NULL no event (outside the objective, a client gone, unmeasured)."""
    covered = ["true"]
    if objective.model != "*":
        covered.append(f"model = {_literal(objective.model)}")
    if objective.task is not None:
        covered.append(f"task = {_literal(objective.task)}")
    ttft, tpot = objective.ttft_ms / 1000.0, objective.tpot_ms / 1000.0
    return (
        f"CASE WHEN NOT ({' AND '.join(covered)}) OR outcome IS NOT NULL THEN NULL "
        "WHEN ttft_ms IS NULL OR (tpot_ms IS NULL AND (completion_tokens IS NULL "
        "OR completion_tokens > 1)) THEN NULL "
        f"WHEN ttft_ms / 1000.0 <= {ttft!r} AND (tpot_ms IS NULL OR tpot_ms / 1000.0 <= "
        f"{tpot!r}) THEN 1 ELSE 0 END"
    )


def _dimension(name: str, ctx: Buckets, load_bounds: Sequence[int]) -> str:
    """A group's dimension; the ctx bucket is the request's own (its prompt's), -1 unknown."""
    if name == "ctx_bucket":
        return f"CASE WHEN prompt_tokens IS NULL THEN -1 ELSE {ctx.of('prompt_tokens')} END"
    return dimension_sql(name, load_bounds)


def query(
    source: str,
    dimensions: Sequence[str],
    objectives: Sequence[LatencyObjective],
    ctx_bounds: Sequence[int],
    load_bounds: Sequence[int],
    since: float | None,
    until: float | None,
) -> str:
    """Rows: the dimensions, the variant, then SUMS for each objective in turn. The lines
    counted are those analyze counts as requests (fleet/sql.py's statuses: spec, empty,
    baseline), within --since / --until."""
    ctx = Buckets(ctx_bounds)
    dims = [f"{_dimension(n, ctx, load_bounds)} AS g_{n}" for n in dimensions]
    keys = [f"g_{name}" for name in dimensions] + ["g_variant"]
    judged = [f"{_judged(o)} AS j{i}" for i, o in enumerate(objectives)]
    per_minute = [
        f"count(j{i}) AS n{i}, coalesce(sum(j{i}), 0) AS g{i}" for i in range(len(objectives))
    ]
    sums = [
        f"count(*) FILTER (WHERE n{i} > 0), sum(g{i}), sum(n{i}), sum(g{i} * g{i}), "
        f"sum(g{i} * n{i}), sum(n{i} * n{i})"
        for i in range(len(objectives))
    ]
    return (
        "\nWITH "
        + statuses(source, since, until)
        + f"""judged AS (
  SELECT {", ".join([*dims, "coalesce(variant, 'spec') AS g_variant"])},
    floor(ts / 60) AS minute, {", ".join(judged)}
  FROM rows
  WHERE status IN ('spec', 'empty', 'baseline')
),
minutes AS (
  SELECT {", ".join(keys)}, minute, {", ".join(per_minute)}
  FROM judged GROUP BY {", ".join(keys)}, minute
)
SELECT {", ".join(keys)}, {", ".join(sums)}
FROM minutes GROUP BY {", ".join(keys)}
"""
    )


@dataclass(frozen=True, slots=True)
class Attainment:
    """One objective over one group and variant: the SLI's events, the good ones, attainment
    with its interval."""

    key: tuple[str, ...]  # the group's dimensions as labels
    variant: str
    objective: LatencyObjective
    requests: int
    good: int
    interval: Interval

    def fields(self) -> dict[str, Any]:
        attainment = self.interval.estimate
        return {
            "variant": self.variant,
            "slo": self.objective.name,
            "objective": self.objective.objective,
            "requests": self.requests,
            "good": self.good,
            "attainment": attainment,
            "attainment_interval": [self.interval.lower, self.interval.upper],
            "error_budget_remaining": budget_left(attainment, self.objective.objective),
        }


def attainments(
    rows: list[tuple[Any, ...]],
    dimensions: Sequence[str],
    objectives: Sequence[LatencyObjective],
    buckets: tuple[CtxBuckets, LoadBuckets],
    confidence: float,
) -> list[Attainment]:
    """`query`'s rows read back, each dimension labelled as the sidecar labels it (a prompt
    of unknown length: ctx bucket `unknown`)."""
    ctx, load = buckets
    width = len(dimensions)
    out = []
    for row in rows:
        key = tuple(
            UNKNOWN_CTX
            if name == "ctx_bucket" and int(value) < 0
            else label(name, value, ctx, load)
            for name, value in zip(dimensions, row[:width], strict=True)
        )
        variant = str(row[width])
        for i, objective in enumerate(objectives):
            m, g, n, gg, gn, nn = row[width + 1 + i * len(SUMS) : width + 1 + (i + 1) * len(SUMS)]
            if not n:
                continue
            interval = proportion_interval(
                float(m), float(g), float(n), float(gg), float(gn), float(nn), confidence
            )
            if interval is not None:
                out.append(Attainment(key, variant, objective, int(n), int(g), interval))
    return sorted(out, key=lambda a: (a.objective.name, a.key, a.variant))
