"""One alert, written once: the rule, its annotations and its runbook section; and the
PromQL pieces alerts share."""

from __future__ import annotations

from dataclasses import dataclass, field

from specwatch.gen import promql as Q

ON_SLICE = f"on({Q.by(Q.SLICE)})"
SLICE_TEXT = "{{ $labels.model }} / {{ $labels.ctx_bucket }} / {{ $labels.task }}"

# Multi-window, multi-burn-rate pairs: (factor, long window, short window, severity).
BURN_RATES = (
    (14.4, "1h", "5m", "critical"),
    (6.0, "6h", "30m", "critical"),
    (3.0, "1d", "2h", "warning"),
    (1.0, "3d", "6h", "warning"),
)


class GenerateError(ValueError):
    """Settings that would produce rules which cannot work (e.g. an unreachable burn rate)."""


@dataclass(frozen=True)
class Variant:
    """The same alert at another severity, on a condition of its own: one runbook section,
    one rule per variant (`when` says in the runbook which applies)."""

    severity: str
    expr: str
    description: str
    when: str


@dataclass(frozen=True)
class Alert:
    name: str
    severity: str
    expr: str
    for_seconds: float
    summary: str
    description: str
    meaning: str
    confirm: tuple[str, ...]
    actions: tuple[str, ...]
    extra_labels: dict[str, str] = field(default_factory=dict)
    extra_annotations: dict[str, str] = field(default_factory=dict)
    when: str = ""  # with variants: when this severity applies
    variants: tuple[Variant, ...] = ()

    def rules(self) -> tuple[tuple[str, str, str], ...]:
        """(severity, expr, description) of each rule written under this alert's name."""
        first = (self.severity, self.expr, self.description)
        return (first, *((v.severity, v.expr, v.description) for v in self.variants))

    @property
    def anchor(self) -> str:
        return self.name.lower()


def looked_up(
    series: str,
    labels: tuple[str, ...],
    digits: int = 3,
    absent: str = "n/a",
    fixed: str = "",
    aggregate: str = "",
) -> str:
    """An annotation template that queries `series` with the alert's own `labels` (after the
    `fixed` matchers, inside `aggregate`) and prints its value with `digits` decimals, or
    `absent`."""
    selector = series + "{" + fixed + ",".join(f"{name}=%q" for name in labels) + "}"
    if aggregate:
        selector = f"{aggregate}({selector})"
    values = " ".join(f"$labels.{name}" for name in labels)
    return (
        '{{ with printf "' + selector + '" ' + values + " | query }}"
        '{{ . | first | value | printf "%.' + str(digits) + 'f" }}{{ else }}' + absent + "{{ end }}"
    )


def slice_value(series: str) -> str:
    """A template that looks `series` up for the alert's slice: its value with 3 decimals."""
    return looked_up(series, ("model", "ctx_bucket", "task"))
