"""The families of specwatch itself: its health, the A/B router's state and what a replica
costs."""

from __future__ import annotations

from collections.abc import Iterator

from specwatch import conventions as C
from specwatch.analysis.views import Snapshot
from specwatch.core.health import HealthSnapshot
from specwatch.core.records import ABState
from specwatch.export.families import Family
from specwatch.export.model_families import Run
from specwatch.settings import CostSettings


def replica_cost(cost: CostSettings) -> Family:
    target = Family(C.REPLICA_COST_PER_HOUR)
    n = cost.accelerators_per_replica
    assert cost.price_per_accelerator_hour is not None
    target.add((C.Variant.SPEC,), cost.price_per_accelerator_hour * n)
    if cost.baseline_price_per_accelerator_hour is not None:
        target.add((C.Variant.BASELINE,), cost.baseline_price_per_accelerator_hour * n)
    return target


def ab(ab: ABState) -> Iterator[Family]:
    share, rolled = Family(C.AB_BASELINE_SHARE), Family(C.AB_ROLLED_BACK)
    share.add((), ab.baseline_percent / 100.0)
    rolled.add((), 1.0 if ab.rolled_back else 0.0)
    switches = Family(C.AB_SWITCHES)
    for (to, source), n in sorted(ab.switches.items()):
        switches.add((to, source), n)
    yield from (share, rolled, switches)


def health(snapshot: Snapshot, health: HealthSnapshot, run: Run) -> Iterator[Family]:
    errors = Family(C.PARSE_ERRORS)
    for (source, reason), n in sorted(health.parse_errors.items()):
        errors.add((source, reason), n)
    passthrough = Family(C.PASSTHROUGH_REQUESTS)
    for status_class, n in sorted(health.passthrough.items()):
        passthrough.add((status_class,), n)
    folded = Family(C.FOLDED_LABEL_VALUES)
    folded.add((C.Label.MODEL,), snapshot.folded_models)
    yield from (errors, passthrough, folded)
    scalars = [
        (C.ASYNCIO_TASKS, health.tasks),
        (C.CYCLE_LOG_ERRORS, health.cycle_log_errors),
        (C.INTERNAL_ERRORS, health.internal_errors),
    ]
    if health.held_bytes is not None and health.held_limit_bytes is not None:
        scalars += [
            (C.HELD_RESPONSE_BYTES, health.held_bytes),
            (C.HELD_RESPONSE_LIMIT_BYTES, health.held_limit_bytes),
        ]
    for name, value in scalars:
        target = Family(name)
        target.add((), value)
        yield target
    in_flight = Family(C.UPSTREAM_IN_FLIGHT)
    for variant, n in sorted(health.in_flight.items()):
        in_flight.add((variant,), n)
    yield in_flight
    overhead = Family(C.PROXY_OVERHEAD_SECONDS)
    overhead.add_histogram((), health.proxy_overhead)
    yield overhead
    added = Family(C.PROXY_ADDED_SECONDS)
    for path, histogram in health.added.items():
        added.add_histogram((path,), histogram)
    yield added
    if health.upstream_up is not None:
        up = Family(C.UPSTREAM_UP)
        up.add((), 1.0 if health.upstream_up else 0.0)
        yield up
    comparisons, divergences = Family(C.SHADOW_COMPARISONS), Family(C.OUTPUT_DIVERGENCE)
    for model, n in sorted(health.shadow_comparisons.items()):
        comparisons.add((model, *run), n)
        divergences.add((model, *run), health.shadow_divergences.get(model, 0))
    skipped = Family(C.SHADOW_SKIPPED)
    for reason, n in sorted(health.shadow_skipped.items()):
        skipped.add((reason,), n)
    yield from (comparisons, divergences, skipped)
