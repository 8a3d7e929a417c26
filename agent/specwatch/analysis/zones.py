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
- A slice whose gain is surely below 1 (the whole interval: speculation slower than none) at
  every evaluation for `slower_seconds` (a window's length: the verdict rests on fresh data,
  not on one unlucky window) is red, whatever its acceptance. It leaves that red only on
  evidence of the same kind (a measured gain is not overruled by a modelled one): the gain's
  estimate at 1 or above at every evaluation for as long, and `exit_evaluations` of them at
  least; then the acceptance rules apply again. A window without that evidence holds the red.

The intervals are request-level (analysis/stats.py), so a slice is green only when the lower
bound clears `green` with requests, not tokens, as the sampling unit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog

from specwatch.analysis.speedup import MEASURED, Gain
from specwatch.analysis.stats import Interval
from specwatch.conventions import Zone
from specwatch.settings import ZoneSettings

if TYPE_CHECKING:
    from specwatch.analysis.counts import Counts
    from specwatch.model import SliceKey

log = structlog.get_logger("specwatch.analysis")


@dataclass(slots=True)
class ZoneState:
    zone: str = Zone.INSUFFICIENT
    since: float | None = None  # when the current zone was entered
    last_verdict_change: float | None = None
    exit_streak: int = 0
    slow_method: str | None = None  # red because speculation was slower (by this method)
    slower_since: float | None = None  # every evaluation since then found the gain below 1
    recovering_since: float | None = None  # ... found it at 1 or above again (when slow)


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
    gain: Gain | None = None,
) -> ZoneChange | None:
    """Advance one slice's state by one evaluation; return the change, if any.

    `enough`: the acceptance evidence passes the sample gates. A measured gain has gates of
    its own (enough requests on both sides), so it can make or hold a red without them; a
    modelled one rests on acceptance and needs them.
    """
    previous = state.zone
    judged = interval if enough else None
    slower = _slower_for_long(state, gain, now, cfg) and (enough or _measured(gain))
    if slower:
        state.exit_streak = 0
        dwelt = previous == Zone.INSUFFICIENT or _dwelt(state, now, cfg)
        target = Zone.RED if dwelt else previous
    elif state.slow_method is not None and previous == Zone.RED:
        target = _still_slow(state, judged, gain, now, cfg)
    elif judged is None:
        target = Zone.INSUFFICIENT
        state.exit_streak = 0
    elif previous == Zone.INSUFFICIENT:
        target = _entry_verdict(judged, cfg)
    else:
        target = _held_or_left(state, judged, now, cfg)
    if slower and target == Zone.RED:
        assert gain is not None
        state.slow_method = gain.method
    elif target != Zone.RED:
        state.slow_method = state.recovering_since = None
    if target == previous:
        return None
    state.zone = target
    state.since = now
    if target != Zone.INSUFFICIENT:
        state.last_verdict_change = now
    state.exit_streak = 0
    return ZoneChange(previous, target)


def _measured(gain: Gain | None) -> bool:
    return gain is not None and gain.method == MEASURED


def _slower_for_long(state: ZoneState, gain: Gain | None, now: float, cfg: ZoneSettings) -> bool:
    """The gain's whole interval has been below 1 at every evaluation for `slower_seconds`."""
    if gain is None or not gain.slower:
        state.slower_since = None
        return False
    if state.slower_since is None:
        state.slower_since = now
    return now - state.slower_since >= cfg.slower_seconds


def _dwelt(state: ZoneState, now: float, cfg: ZoneSettings) -> bool:
    return (
        state.last_verdict_change is None
        or now - state.last_verdict_change >= cfg.min_dwell_seconds
    )


def _still_slow(
    state: ZoneState, interval: Interval | None, gain: Gain | None, now: float, cfg: ZoneSettings
) -> str:
    """Red because slower: held until the same kind of gain is back at 1 for long enough,
    or until there is no evidence of any kind left (insufficient)."""
    same = gain is not None and gain.method == state.slow_method
    if not same and interval is None:
        state.exit_streak = 0
        return Zone.INSUFFICIENT
    recovering = same and gain is not None and gain.ratio >= 1.0
    state.exit_streak = state.exit_streak + 1 if recovering else 0
    if not recovering:
        state.recovering_since = None
    elif state.recovering_since is None:
        state.recovering_since = now
    long_enough = recovering and now - (state.recovering_since or now) >= cfg.slower_seconds
    if not long_enough or state.exit_streak < cfg.exit_evaluations or not _dwelt(state, now, cfg):
        return Zone.RED
    state.slow_method = None  # from here on, acceptance decides
    return Zone.INSUFFICIENT if interval is None else _entry_verdict(interval, cfg)


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
    if not (leaving and _dwelt(state, now, cfg)):
        return zone
    target = _entry_verdict(interval, cfg)
    # Leaving green/red on the exit rule but not yet past the other side's entry: yellow.
    return target if target != zone else Zone.YELLOW


def log_change(
    key: SliceKey,
    change: ZoneChange,
    metric: str,
    interval: Interval | None,
    counts: Counts,
    source: str,
    gain: Gain | None,
) -> None:
    """`zone_changed`, with the evidence the verdict rests on."""
    log.info(
        "zone_changed",
        model=key.model,
        ctx_bucket=key.ctx_bucket,
        task=key.task,
        previous=change.previous,
        zone=change.current,
        metric=metric,
        estimate=None if interval is None else round(interval.estimate, 4),
        lower=None if interval is None else round(interval.lower, 4),
        upper=None if interval is None else round(interval.upper, 4),
        window_trials=counts.trials,
        window_requests=counts.requests,
        source=source,
        gain=None if gain is None else round(gain.ratio, 3),
        gain_lower=None if gain is None else round(gain.lower, 3),
        gain_upper=None if gain is None else round(gain.upper, 3),
        gain_method=None if gain is None else gain.method,
        design_effect=None
        if interval is None or interval.design_effect is None
        else round(interval.design_effect, 2),
    )
