"""What a metric family is (name, type, help, labels) and the table every family is entered in:
conventions/metrics.py enters them, the collector, the generators and docs/metrics.md's
table read METRICS."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"
    INFO = "info"


@dataclass(frozen=True, slots=True)
class Metric:
    """One family: `name` as registered (a counter's samples add `_total`, an info's
    `_info` is part of the name), its type, help text and label names."""

    name: str
    kind: Kind
    help: str
    labels: tuple[str, ...] = ()

    @property
    def exposed(self) -> str:
        """The name as it appears in /metrics and in queries."""
        return self.name + "_total" if self.kind == Kind.COUNTER else self.name


METRICS: dict[str, Metric] = {}


def _metric(name: str, kind: Kind, help: str, labels: tuple[str, ...] = ()) -> str:
    METRICS[name] = Metric(name, kind, help, labels)
    return name
