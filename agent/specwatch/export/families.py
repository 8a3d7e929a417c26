"""The families the collector fills: groups of samples, cheap to build and to compare.

A group is one labelled thing (a slice, a request slice's histogram, a model's bounds) and the
samples it expands to: a scalar, or a run of values along the family's last label (positions,
zones, bounds, histogram buckets). The text writer (export/exposition.py) keeps each group's
rendered lines from one scrape to the next and writes a group again only when its values
changed. A family with a group per slice that some slices lack (an interval not yet defined)
holds None in their place, so each slice's group stays where it was from one scrape to the
next: one slice losing its interval does not move every group after it. `to_metric` gives
prometheus-client's family of the same samples, which `generate_latest` writes byte for byte
like the writer (tests/unit/export/test_exposition.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate
from typing import Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    Metric,
)

from specwatch import conventions as C
from specwatch.analysis.counting.stats import Interval
from specwatch.core.histogram import Histogram

# (label values but the last, values of the last label, sample values); a scalar: None, (v,)
Group = tuple[tuple[str, ...], tuple[str, ...] | None, tuple[float, ...]]


class Family:
    """One family of the metric table and its groups, in the order added."""

    __slots__ = ("groups", "spec")

    def __init__(self, name: str) -> None:
        self.spec = C.METRICS[name]
        self.groups: list[Group | None] = []

    def add(self, labels: tuple[str, ...], value: float) -> None:
        """One sample; `labels` are all the family's label values."""
        self.groups.append((labels, None, (value,)))

    def add_histogram(self, labels: tuple[str, ...], histogram: Histogram) -> None:
        self.groups.append(histogram_group(labels, histogram))

    def to_metric(self) -> Metric:
        """The same samples as prometheus-client's family."""
        spec = self.spec
        if spec.kind == C.Kind.INFO:
            info = InfoMetricFamily(spec.name.removesuffix("_info"), spec.help)
            for labels, _, _ in self.present():
                info.add_metric([], dict(zip(spec.labels, labels, strict=True)))
            return info
        if spec.kind == C.Kind.HISTOGRAM:
            histogram = HistogramMetricFamily(spec.name, spec.help, labels=list(spec.labels))
            for labels, last, values in self.present():
                assert last is not None
                buckets = list(zip(last, values[:-1], strict=True))
                histogram.add_metric(list(labels), buckets, sum_value=values[-1])
            return histogram
        kind: Any = CounterMetricFamily if spec.kind == C.Kind.COUNTER else GaugeMetricFamily
        family = kind(spec.name, spec.help, labels=list(spec.labels))
        for labels, last, values in self.present():
            if last is None:
                family.add_metric(list(labels), values[0])
                continue
            for tail, value in zip(last, values, strict=True):
                family.add_metric([*labels, tail], value)
        return family  # type: ignore[no-any-return]

    def present(self) -> list[Group]:
        return [group for group in self.groups if group is not None]


_BOUNDS = (C.Bound.ESTIMATE.value, C.Bound.LOWER.value, C.Bound.UPPER.value)


def bounds_group(labels: tuple[str, ...], interval: Interval | None) -> Group | None:
    """An estimate and its bounds, a run along the `bound` label; None without an interval."""
    if interval is None:
        return None
    return (labels, _BOUNDS, (interval.estimate, interval.lower, interval.upper))


def bounds(target: Family, labels: tuple[str, ...], interval: Interval) -> None:
    target.groups.append(bounds_group(labels, interval))


def histogram_group(labels: tuple[str, ...], histogram: Histogram) -> Group:
    """Cumulative buckets (`le`), then the count and the sum, as Prometheus writes them."""
    return (labels, histogram.le(), (*accumulate(histogram.buckets), histogram.sum))


def run_labels(n: int) -> tuple[str, ...]:
    """ "1" .. "n": the position label of per-position runs."""
    return _POSITIONS[n] if n < len(_POSITIONS) else tuple(str(i + 1) for i in range(n))


_POSITIONS: Sequence[tuple[str, ...]] = [tuple(str(i + 1) for i in range(n)) for n in range(33)]
