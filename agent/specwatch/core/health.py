"""Counters about specwatch itself: what it could not read, dropped, or folded.

Sources count here; export reads a copy. Keys are bounded: sources use fixed reason strings.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass

from specwatch.conventions import PROXY_OVERHEAD_BUCKETS
from specwatch.core.histogram import Histogram


@dataclass(frozen=True, slots=True)
class HealthSnapshot:
    parse_errors: dict[tuple[str, str], int]
    dropped: int
    dropped_by_variant: dict[str, int]
    internal_errors: int
    cycle_log_errors: int
    passthrough: dict[str, int]
    proxy_overhead: Histogram
    # per observed path: the time specwatch added to each request answered whole (its span
    # less the upstream's, proxy/proxy.py)
    added: dict[str, Histogram]
    upstream_up: bool | None
    shadow_comparisons: dict[str, int]
    shadow_divergences: dict[str, int]
    shadow_skipped: dict[str, int]
    in_flight: dict[str, int]  # observed requests in flight through the proxy, per variant
    tasks: int  # the event loop's tasks (0 when read outside one: a test, a CLI)
    held_bytes: int | None = None  # the proxy's byte budget (proxy/budget.py): held, limit
    held_limit_bytes: int | None = None


class Health:
    def __init__(self) -> None:
        self.parse_errors: dict[tuple[str, str], int] = defaultdict(int)
        self.dropped = 0
        self.dropped_by_variant: dict[str, int] = defaultdict(int)
        self.internal_errors = 0
        self.cycle_log_errors = 0
        self.passthrough: dict[str, int] = defaultdict(int)
        self.proxy_overhead = Histogram(PROXY_OVERHEAD_BUCKETS)
        self.added: dict[str, Histogram] = {}
        self.upstream_up: bool | None = None  # None: not probed yet
        self.in_flight: dict[str, int] = defaultdict(int)  # per A/B variant
        self.shadow_comparisons: dict[str, int] = defaultdict(int)  # per model
        self.shadow_divergences: dict[str, int] = defaultdict(int)
        self.shadow_skipped: dict[str, int] = defaultdict(int)  # per reason

    def drop(self, variant: str) -> None:
        self.dropped += 1
        self.dropped_by_variant[variant] += 1

    def added_time(self, path: str, seconds: float) -> None:
        """The time the proxy added to one request to `path` (an observed path: few)."""
        histogram = self.added.get(path)
        if histogram is None:
            histogram = self.added[path] = Histogram(PROXY_OVERHEAD_BUCKETS)
        histogram.observe(max(0.0, seconds))

    def parse_error(self, source: str, reason: str) -> None:
        self.parse_errors[source, reason] += 1

    def readiness(self, draining: bool) -> tuple[bool, str]:
        """/readyz: ready while vLLM's /health answers and the proxy is not draining."""
        if draining:
            return False, "draining"
        if self.upstream_up:
            return True, "ready"
        if self.upstream_up is None:
            return False, "upstream not probed yet"
        return False, "upstream /health is failing"

    def snapshot(self, held: int | None = None, limit: int | None = None) -> HealthSnapshot:
        """A copy; `held` and `limit`: the proxy's byte budget, when there is a proxy."""
        return HealthSnapshot(
            parse_errors=dict(self.parse_errors),
            dropped=self.dropped,
            dropped_by_variant=dict(self.dropped_by_variant),
            internal_errors=self.internal_errors,
            cycle_log_errors=self.cycle_log_errors,
            passthrough=dict(self.passthrough),
            proxy_overhead=self.proxy_overhead.copy(),
            added={path: histogram.copy() for path, histogram in sorted(self.added.items())},
            upstream_up=self.upstream_up,
            shadow_comparisons=dict(self.shadow_comparisons),
            shadow_divergences=dict(self.shadow_divergences),
            shadow_skipped=dict(self.shadow_skipped),
            in_flight=dict(self.in_flight),
            tasks=_task_count(),
            held_bytes=held,
            held_limit_bytes=limit,
        )


def _task_count() -> int:
    try:
        return len(asyncio.all_tasks())
    except RuntimeError:  # no running loop here
        return 0
