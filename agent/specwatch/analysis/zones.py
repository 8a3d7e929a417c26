"""Green / yellow / red verdicts per slice, with evidence gates and anti-flapping.

- A slice below the gates (trials, requests in the window) is `insufficient`: no evidence is
  no verdict, and never green or red. A slice with a verdict keeps it down to half the gates,
  so a slice whose traffic hovers at the gate does not flap in and out of `insufficient`.
- From `insufficient` the first verdict is given at once: green when the lower confidence bound
  reaches `green`, red when the upper bound is below `red`, yellow otherwise.
- Entering green or red needs the interval, not the point estimate, past the threshold.
- Leaving green needs the estimate at or below `green_exit` (leaving red: at or above
  `red_exit`) for `exit_evaluations` evaluations in a row.
- Between two verdict changes at least `min_dwell_seconds` pass.
- A slice whose gain is below 1 (speculation slower than none) is red, whatever its acceptance;
  it leaves red only once it is no longer slower and the exit rule holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from specwatch.analysis.stats import Interval
from specwatch.conventions import Zone
from specwatch.settings import ZoneSettings


@dataclass(slots=True)
class ZoneState:
    zone: str = Zone.INSUFFICIENT
    since: float | None = None  # when the current zone was entered
    last_verdict_change: float | None = None
    exit_streak: int = 0


@dataclass(frozen=True, slots=True)
class ZoneChange:
    previous: str
    current: str


def has_evidence(state: ZoneState, trials: int, requests: int, cfg: ZoneSettings) -> bool:
    """The sample gates, with hysteresis: entering a verdict needs them, keeping one half."""
    scale = 1.0 if state.zone == Zone.INSUFFICIENT else 0.5
    return trials >= cfg.min_trials * scale and requests >= cfg.min_requests * scale


def _entry_verdict(interval: Interval, cfg: ZoneSettings) -> str:
    if interval.lower >= cfg.green:
        return Zone.GREEN
    if interval.upper < cfg.red:
        return Zone.RED
    return Zone.YELLOW


def next_zone(
    state: ZoneState,
    interval: Interval | None,
    enough: bool,
    now: float,
    cfg: ZoneSettings,
    slower: bool = False,
) -> ZoneChange | None:
    """Advance one slice's state by one evaluation; return the change, if any.

    `slower`: the slice's gain is below 1.
    """
    previous = state.zone
    if not enough or interval is None:
        target = Zone.INSUFFICIENT
        state.exit_streak = 0
    elif previous == Zone.INSUFFICIENT:
        target = Zone.RED if slower else _entry_verdict(interval, cfg)
    elif slower:
        state.exit_streak = 0
        dwelt = (
            state.last_verdict_change is None
            or now - state.last_verdict_change >= cfg.min_dwell_seconds
        )
        target = Zone.RED if dwelt else previous
    else:
        target = _held_or_left(state, interval, now, cfg)
    if target == previous:
        return None
    state.zone = target
    state.since = now
    if target != Zone.INSUFFICIENT:
        state.last_verdict_change = now
    state.exit_streak = 0
    return ZoneChange(previous, target)


def _held_or_left(state: ZoneState, interval: Interval, now: float, cfg: ZoneSettings) -> str:
    zone = state.zone
    if zone == Zone.GREEN:
        leaving = interval.estimate <= cfg.green_exit
    elif zone == Zone.RED:
        leaving = interval.estimate >= cfg.red_exit
    else:
        leaving = _entry_verdict(interval, cfg) != Zone.YELLOW
    if zone in (Zone.GREEN, Zone.RED):
        state.exit_streak = state.exit_streak + 1 if leaving else 0
        leaving = state.exit_streak >= cfg.exit_evaluations
    dwelt = (
        state.last_verdict_change is None
        or now - state.last_verdict_change >= cfg.min_dwell_seconds
    )
    if not (leaving and dwelt):
        return zone
    target = _entry_verdict(interval, cfg)
    # Leaving green/red on the exit rule but not yet past the other side's entry: yellow.
    return target if target != zone else Zone.YELLOW
