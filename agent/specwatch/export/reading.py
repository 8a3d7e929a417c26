"""What export reads at one moment: one Reading, copied, shared by /status, /metrics and
replay's document (nothing in export touches a live object)."""

from __future__ import annotations

from dataclasses import dataclass

from specwatch.analysis.analyzer import Snapshot
from specwatch.analysis.compare.changes import ChangeView
from specwatch.core.health import HealthSnapshot
from specwatch.core.records import ABState, SpecConfig


@dataclass(frozen=True, slots=True)
class Reading:
    """Everything export reads at one moment, copied: the analysis, specwatch's own health
    (None on replay) and the A/B router's state (None without A/B)."""

    snapshot: Snapshot
    health: HealthSnapshot | None = None
    ab: ABState | None = None
    config: SpecConfig | None = None
    change: ChangeView | None = None  # a config change across a restart (analysis/compare/changes)
    config_changes: int = 0
