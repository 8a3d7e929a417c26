"""[compiled] Green / yellow / red verdicts per slice, on evidence that holds over many looks.

- The evidence (analysis/verdicts/evidence.py) is, per window ending now (the verdict window and the
  longer `evidence_windows`) and per threshold, a log-likelihood ratio with an indifference
  zone; where windows disagree, the shortest one sure at a bar decides. A window counts only
  past the sample gates (trials and requests): the whole gates to enter a verdict, half of
  them to keep or leave one. A slice without such a window is `insufficient`: no evidence is
  no verdict, and never green or red; a slice with a verdict keeps being judged down to half
  the gates, so one whose traffic hovers at the gate does not flap in and out of it.
- Entering: red when the deciding evidence at the bar `evidence` says below `red`, else green
  when it says above `green`, else yellow.
- Leaving: green when the deciding evidence at the bar `exit_evidence` says below `green` -
  `exit_margin` (or red's entry holds), red when it says above `red` + `exit_margin` (or
  green's entry holds). A verdict stands until the data turns against it; one estimate past a
  far exit is not that, nor an estimate that wanders around the threshold itself (the more
  data, the smaller the wander that crosses a fixed evidence gap: the margin is in
  acceptance, which data do not shrink).
- One window decides entering, keeping and leaving alike (`Evidence.deciding`: the longest,
  unless a shorter one's newer data differ from the rest of it), so a verdict left on one
  window's evidence is not re-entered on another's a minute later. After a change decided on
  a shorter window's news, only windows that hold nothing from before it decide (`horizon`:
  the deciding window's length plus the time since), until a longer one is that new: a
  window that still mixes the data before the news with the news neither ends the new
  verdict nor brings the old one back.
- Between two verdict changes at least `min_dwell_seconds` pass. Red is entered sooner only
  on news: evidence from a window at least as new as the one that decided the last change
  (a collapse from green shows red within minutes, not after the dwell that leaving green
  started). Acceptance surely below red - `collapse_margin` in the deciding window is red at
  once, whatever the dwell and the horizon.
- A slice whose gain is surely below 1 (the whole interval: speculation slower than none) at
  every evaluation for `slower_seconds` (a window's length: the verdict rests on fresh data,
  not on one unlucky window) is red, whatever its acceptance. It leaves that red only on
  evidence of the same kind (a measured gain is not overruled by a modelled one): the gain's
  estimate at 1 or above at every evaluation for as long, and `exit_evaluations` of them at
  least; then the acceptance rules apply again. A window without that evidence holds the red.

What a zone means over time, and how often each rule is wrong over an hour of evaluations,
is measured by benchmarks/zone_verdicts.py (README, section "What it judges").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog

from specwatch.analysis.counting.stats import Interval, proportion_interval
from specwatch.analysis.speed.speedup import MEASURED, Gain
from specwatch.analysis.verdicts.evidence import Evidence
from specwatch.analysis.verdicts.thresholds import Thresholds
from specwatch.conventions import Zone

if TYPE_CHECKING:
    from specwatch.analysis.counting.counts import Counts
    from specwatch.core.records import SliceKey

log = structlog.get_logger("specwatch.analysis")


@dataclass(slots=True)
class ZoneState:
    zone: str = Zone.INSUFFICIENT
    since: float | None = None  # when the current zone was entered
    last_verdict_change: float | None = None
    exit_streak: int = 0
    decided_by: float | None = None  # the seconds of the window that decided the last change
    slow_method: str | None = None  # red because speculation was slower (by this method)
    slower_since: float | None = None  # every evaluation since then found the gain below 1
    recovering_since: float | None = None  # ... found it at 1 or above again (when slow)


@dataclass(frozen=True, slots=True)
class ZoneChange:
    previous: str
    current: str
    decided_by: float | None = None  # the seconds of the window whose evidence decided


def entering(state: ZoneState) -> bool:
    """Whether the slice has no verdict to keep: then only windows past the whole sample gates
    can give it one (analysis/verdicts/evidence.gathered)."""
    return state.zone == Zone.INSUFFICIENT


def horizon(state: ZoneState, now: float) -> float | None:
    """The longest window that may decide now: the one that decided the last verdict change
    and the time since (module docstring); None when no change rested on evidence."""
    if state.decided_by is None or state.last_verdict_change is None:
        return None
    return state.decided_by + (now - state.last_verdict_change)


def _entry_verdict(evidence: Evidence, cfg: Thresholds, within: float | None = None) -> str:
    if evidence.decided("red", cfg.bar("red"), True, within) < 0:
        return Zone.RED
    if evidence.decided("green", cfg.bar("green"), True, within) > 0:
        return Zone.GREEN
    return Zone.YELLOW


def next_zone(
    state: ZoneState,
    evidence: Evidence | None,
    now: float,
    cfg: Thresholds,
    gain: Gain | None = None,
) -> ZoneChange | None:
    """Advance one slice's state by one evaluation; return the change, if any.

    `evidence`: None when no window passes the sample gates (`entering`). A measured
    gain has gates of its own (enough requests on both sides), so it can make or hold a red
    without acceptance evidence; a modelled one rests on acceptance and needs it.
    """
    previous = state.zone
    slower = _slower_for_long(state, gain, now, cfg) and (evidence is not None or _measured(gain))
    if slower:
        state.exit_streak = 0
        dwelt = previous == Zone.INSUFFICIENT or _dwelt(state, now, cfg)
        target = Zone.RED if dwelt else previous
    elif state.slow_method is not None and previous == Zone.RED:
        target = _still_slow(state, evidence, gain, now, cfg)
    elif evidence is None:
        target = Zone.INSUFFICIENT
        state.exit_streak = 0
    elif previous == Zone.INSUFFICIENT:
        target = _entry_verdict(evidence, cfg)
    else:
        target = _held_or_left(state, evidence, now, cfg)
    if evidence is not None and target != previous:
        full = target != Zone.YELLOW or previous == Zone.INSUFFICIENT
        deciding = evidence.deciding(full, horizon(state, now))
        state.decided_by = None if deciding is None else deciding.seconds
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
    return ZoneChange(previous, target, state.decided_by if evidence is not None else None)


def settled(
    state: ZoneState,
    changed: bool,
    now: float,
    cfg: Thresholds,
    longest: float,
    gain: Gain | None = None,
) -> bool:
    """Whether the next evaluation, on the same evidence and `gain`, leaves the state as this
    one left it (`changed`: whether this one changed the zone), however much later it comes.

    Insufficient is such a state, but while a measured gain below 1 is timed (it makes red
    without evidence): from it the full gates apply, which the same windows did not pass. A
    verdict is, once nothing in `next_zone` reads the clock: no gain below 1 being timed
    (`slower_since`, `slow_method`), the dwell over (it only ends), and the horizon past
    `longest`, the longest window judged (every window may decide, as at any later time). Then
    the rules are a function of the evidence and the zone, and this evaluation kept the zone.
    """
    if state.zone == Zone.INSUFFICIENT:
        return state.slower_since is None or not _measured(gain)
    if changed or state.zone == Zone.NOT_APPLICABLE:
        return False
    if state.slow_method is not None or state.slower_since is not None:
        return False
    if not _dwelt(state, now, cfg):
        return False
    reach = horizon(state, now)
    return reach is None or reach >= longest


def _measured(gain: Gain | None) -> bool:
    return gain is not None and gain.method == MEASURED


def _slower_for_long(state: ZoneState, gain: Gain | None, now: float, cfg: Thresholds) -> bool:
    """The gain's whole interval has been below 1 at every evaluation for `slower_seconds`."""
    if gain is None or not gain.slower:
        state.slower_since = None
        return False
    if state.slower_since is None:
        state.slower_since = now
    return now - state.slower_since >= cfg.slower_seconds


def _dwelt(state: ZoneState, now: float, cfg: Thresholds) -> bool:
    return (
        state.last_verdict_change is None
        or now - state.last_verdict_change >= cfg.min_dwell_seconds
    )


def _still_slow(
    state: ZoneState, evidence: Evidence | None, gain: Gain | None, now: float, cfg: Thresholds
) -> str:
    """Red because slower: held until the same kind of gain is back at 1 for long enough,
    or until there is no evidence of any kind left (insufficient)."""
    same = gain is not None and gain.method == state.slow_method
    if not same and evidence is None:
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
    return Zone.INSUFFICIENT if evidence is None else _entry_verdict(evidence, cfg)


def _held_or_left(state: ZoneState, evidence: Evidence, now: float, cfg: Thresholds) -> str:
    within = horizon(state, now)
    collapsed = _collapsed(evidence, cfg)
    zone, entry = state.zone, Zone.RED if collapsed else _entry_verdict(evidence, cfg, within)
    if zone == Zone.GREEN and entry != Zone.RED:
        left = _left(evidence, cfg, "green", within)
        target = Zone.YELLOW if left else zone
    elif zone == Zone.RED and entry != Zone.GREEN:
        left = _left(evidence, cfg, "red", within)
        target = Zone.YELLOW if left else zone
    else:
        target = entry
    if target == zone or _dwelt(state, now, cfg):
        return target
    news = collapsed or _news(state, evidence, within)
    return target if target == Zone.RED and news else zone


def _left(evidence: Evidence, cfg: Thresholds, threshold: str, within: float | None) -> bool:
    """Whether the deciding window says the verdict about `threshold` no longer holds: surely
    past its exit threshold (below green - `exit_margin`, above red + `exit_margin`) at the
    exit bar."""
    value = evidence.decided(f"{threshold}_exit", cfg.exit_bar(threshold), False, within)
    return value < 0 if threshold == "green" else value > 0


def _news(state: ZoneState, evidence: Evidence, within: float | None) -> bool:
    """Whether a red within the dwell rests on news (module docstring): the window deciding it
    is at least as new as the one that decided the last change."""
    window = evidence.deciding(True, within)
    if window is None:
        return False
    return state.decided_by is None or window.seconds <= state.decided_by


def _collapsed(evidence: Evidence, cfg: Thresholds) -> bool:
    """Acceptance surely below red - `collapse_margin` in the deciding window, whatever its
    length: red at once, whatever the dwell and the horizon."""
    window = evidence.deciding(True)
    if window is None:
        return False
    floor, bar = cfg.red - cfg.collapse_margin, cfg.bar("red")
    return window.ratio_at(floor, cfg.indifference, bar) <= -bar


def _rounded(source: object | None, field: str, digits: int) -> float | None:
    value = None if source is None else getattr(source, field)
    return None if value is None else round(value, digits)


def _decided_by(
    change: ZoneChange, evidence: Evidence | None, confidence: float
) -> dict[str, object] | None:
    """The window whose evidence decided the change: its length, estimate and bounds (at the
    zones' confidence), requests and trials."""
    if evidence is None or change.decided_by is None:
        return None
    for window in evidence.windows:
        if window.seconds == change.decided_by:
            n, x, y, xx, xy, yy = window.sums
            interval = proportion_interval(n, x, y, xx, xy, yy, confidence)
            return {
                "seconds": window.seconds,
                "estimate": _rounded(interval, "estimate", 4),
                "lower": _rounded(interval, "lower", 4),
                "upper": _rounded(interval, "upper", 4),
                "requests": n,
                "trials": y,
            }
    return None


def log_change(
    key: SliceKey,
    at: float,
    change: ZoneChange,
    metric: str,
    interval: Interval | None,
    evidence: Evidence | None,
    counts: Counts,
    source: str,
    gain: Gain | None,
    confidence: float = 0.95,
) -> None:
    """`zone_changed` at evaluation time `at` (the records' clock on replay), with the evidence
    the verdict rests on: the verdict window's bounds (`estimate`, `lower`, `upper`,
    `window_*`), the window that decided (`decided_by`) and each window's evidence."""
    windows = None
    if evidence is not None:  # [seconds, past the whole gates, green, red] per window
        windows = [
            [w.seconds, w.full, round(w.green, 2), round(w.red, 2)] for w in evidence.windows
        ]
    log.info(
        "zone_changed",
        model=key.model,
        ctx_bucket=key.ctx_bucket,
        task=key.task,
        at=at,
        previous=change.previous,
        zone=change.current,
        metric=metric,
        estimate=_rounded(interval, "estimate", 4),
        lower=_rounded(interval, "lower", 4),
        upper=_rounded(interval, "upper", 4),
        window_trials=counts.trials,
        window_requests=counts.requests,
        source=source,
        gain=_rounded(gain, "ratio", 3),
        gain_lower=_rounded(gain, "lower", 3),
        gain_upper=_rounded(gain, "upper", 3),
        gain_method=None if gain is None else gain.method,
        design_effect=_rounded(interval, "design_effect", 2),
        evidence=windows,
        decided_by=_decided_by(change, evidence, confidence),
    )


def not_judged(state: ZoneState, now: float) -> None:
    """A slice whose acceptance is not the target's (a synthetic or lossy verifier: its
    cause) gets zone `not_applicable`, and so no alert, whatever its figures."""
    if state.zone != Zone.NOT_APPLICABLE:
        state.zone, state.since = Zone.NOT_APPLICABLE, now
