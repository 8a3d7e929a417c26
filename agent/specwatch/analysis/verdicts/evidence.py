"""[compiled] The evidence a zone rests on: a sequential test per threshold over windows of growing
length.

A verdict is not one look. The sidecar judges every slice every 10 s, ~360 times an hour, and
a rule that enters green on one look whose lower bound clears 0.70 turns a slice at 0.69 green
sooner or later (one lucky window among hundreds), then keeps it. So a zone is entered on
evidence, and evidence here is a log-likelihood ratio with an indifference zone: for a
threshold c and half-width delta, "above c" means the metric is at least c + delta, "below"
at most c - delta, and a truth in between may be called either way. Under the normal model of a
window's estimate p with variance v, the generalized likelihood ratio of the two is

    (d0^2 - d1^2) / (2 v),  d0 = max(0, p - (c - delta)),  d1 = max(0, (c + delta) - p),

positive when the window says "above c", negative when it says "below" (the ratio for "below"
is its negative). Inside the indifference zone it is Wald's sequential ratio 2 delta (p - c) / v;
outside it grows as the squared distance from the nearer hypothesis, so a slice far from a
threshold gets its verdict on little data. v is the window's request-level variance at the
threshold, design effect x c (1 - c) / trials (requests are the sampling unit:
analysis/counting/stats.py), widened for the uncertainty of that variance itself: a verdict's bar h
sits z = sqrt(2 h) standard errors out (4.9 at h = 12), where Student's t on requests - 1 degrees of
freedom is far wider than the normal (40 requests: (t / z)^2 = 1.40 there, 1.06 at 95%), so
v is scaled by (t / z)^2 at that tail. A short window's design effect, estimated from a few
dozen requests, is otherwise read low now and then, and its evidence high. Windows of
different lengths ending now (the verdict window and `evidence_windows`, e.g. 5 min, 30 min,
1 h) each give one ratio; the strongest decides. A long window is evidence accumulated over
many disjoint short ones: a slice 0.02 above a threshold cannot show it in 5 minutes of 40
requests and shows it plainly in an hour of 480, while a large change shows in the short
window within minutes. When windows disagree, the shortest one that is sure decides: newer
data overrides older (after a collapse the hour still says "above", the last minutes say
"below"; after a recovery the other way round), and a longer window speaks only where the
shorter ones cannot tell. As data grows, the estimate of a truth inside the indifference zone
settles there and the bar in units of p falls as v: 0.72 becomes green once enough of the hour
is in, while 0.69, whose estimate settles below 0.70, is not called green.

What counts as enough (`zones.evidence`, the log-ratio a verdict needs; `exit_evidence` to
leave one) is set by simulation of an hour of continuous evaluation on overdispersed requests
(benchmarks/zone_verdicts.py): Wald's bound e^-h holds for one test run to its end, not for
windows that slide and are looked at every 10 s. Leaving a verdict takes evidence the other
way (below the green threshold, above the red one) at the lower bar: a verdict stands until
the data turns against it, not until one estimate crosses a far exit.

The windows' sums come from analysis/verdicts/evidence_windows.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from specwatch.analysis.counting.stats import robust_variance, t_quantile, tail_confidence
from specwatch.analysis.counting.sums import Sums
from specwatch.analysis.verdicts.thresholds import Thresholds

# (requests, bar) -> `_widening`, emptied when full: a pod whose request counts wander keeps
# it bounded. A dict, not lru_cache: this lookup is the one an evaluation makes most often, and
# lru_cache's bookkeeping around it cost about 4% of a replay.
_WIDENINGS: dict[tuple[int, float], float] = {}
_WIDENINGS_KEPT = 4096


def _widening(requests: int, bar: float) -> float:
    """(t / z)^2 at the tail where a log-likelihood ratio of `bar` sits, on requests - 1
    degrees of freedom (module docstring). Kept per (requests, bar): every window of every
    slice asks it at each evaluation, and a window's requests change slowly."""
    key = (requests, bar)
    value = _WIDENINGS.get(key)
    if value is None:
        if len(_WIDENINGS) >= _WIDENINGS_KEPT:
            _WIDENINGS.clear()
        value = (t_quantile(tail_confidence(bar), requests - 1) ** 2) / (2.0 * bar)
        _WIDENINGS[key] = value
    return value


def _design_effect(sums: Sums) -> float:
    """Request-robust over binomial variance, at least 1; 1 without per-request data (vLLM's
    own counters carry no second moments)."""
    x, y = sums.x, sums.y
    p = x / y
    binomial = p * (1.0 - p) / y
    if sums.yy > 0 and binomial > 0.0:
        variance = robust_variance(sums.requests, x, y, sums.xx, sums.xy, sums.yy)
        return max(1.0, variance / binomial)
    return 1.0


def log_ratio(sums: Sums, threshold: float, indifference: float, bar: float) -> float:
    """The evidence that the proportion x / y is above `threshold` rather than below it
    (module docstring): negative when the window says below. The variance is the window's
    design effect (request-robust over binomial, at least 1; 1 without per-request data, as
    for vLLM's own counters) times c (1 - c) / y, times (t / z)^2 at the tail of the verdict's
    `bar` on requests - 1 degrees of freedom. gen/rules.py records the same figure in PromQL."""
    scale = _design_effect(sums) * _widening(sums.requests, bar)
    return _ratio(sums.x / sums.y, scale, sums.y, threshold, indifference)


def _ratio(p: float, scale: float, y: float, threshold: float, indifference: float) -> float:
    """`log_ratio` from the window's estimate p and its `scale` (design effect x widening):
    one window is judged against four thresholds at each evaluation, on one design effect."""
    variance = scale * threshold * (1.0 - threshold) / y
    above = p - (threshold - indifference)
    below = threshold + indifference - p
    above = above if above > 0.0 else 0.0
    below = below if below > 0.0 else 0.0
    return (above * above - below * below) / (2.0 * variance)


def rest(longer: Sums, shorter: Sums) -> Sums:
    """What `longer` holds before `shorter` (windows ending at the same time nest)."""
    return longer.minus(shorter)


def change_ratio(newer: Sums, older: Sums, bar: float) -> float:
    """The evidence that two disjoint stretches of a slice differ: the log-likelihood ratio of
    "different proportions" over "one proportion", (p1 - p2)^2 / (2 (v1 + v2)). Each v is the
    stretch's design effect times the pooled p (1 - p) over its trials, widened at `bar`'s tail
    on its own requests as the zone evidence is; 0 where either stretch has fewer than two
    requests. gen/rules.py records the same figure in PromQL."""
    if newer.requests < 2 or newer.y <= 0:
        return 0.0
    return _change(newer, _design_effect(newer), older, bar)


def _change(newer: Sums, effect: float, older: Sums, bar: float) -> float:
    """`change_ratio` with the newer stretch's design effect known (`gathered` has it)."""
    if newer.requests < 2 or older.requests < 2 or newer.y <= 0 or older.y <= 0:
        return 0.0
    if older.negative():  # a late record the shorter window took, the longer no longer holds
        return 0.0
    pooled = (newer.x + older.x) / (newer.y + older.y)
    spread = pooled * (1.0 - pooled)
    if spread <= 0.0:
        return 0.0
    variance = effect * _widening(newer.requests, bar) * spread / newer.y
    variance += _design_effect(older) * _widening(older.requests, bar) * spread / older.y
    difference = newer.x / newer.y - older.x / older.y
    return difference * difference / (2.0 * variance)


class _Basis:
    """What a window's ratios are computed from when first asked (`gathered`): an evaluation
    reads one or two of a window's eight figures, the deciding window's, and the change ratios
    on its way to it; `/status` and a verdict change's log read them all. Each is computed as
    `gathered` computed it before, the same operations in the same order."""

    __slots__ = ("bars", "cfg", "effect", "longer", "p")

    def __init__(
        self,
        sums: Sums,
        cfg: Thresholds,
        bars: tuple[float, float, float],
        longer: list[tuple[float, Sums]],
    ) -> None:
        self.p = sums.x / sums.y
        self.effect: float | None = None  # the design effect, once one figure needs it
        self.cfg, self.bars, self.longer = cfg, bars, longer


class WindowEvidence:
    """One window's evidence about each threshold (positive above it, negative below), and
    `changes`: the evidence that its data differ from the older rest of each longer window
    (`Evidence.deciding`; none for the longest window). Given outright, or (`gathered`)
    computed from the window's sums the first time each is read."""

    __slots__ = ("_basis", "_changes", "_values", "full", "seconds", "sums")

    def __init__(
        self,
        seconds: float,
        full: bool,  # past the whole sample gates (else half of them: enough to keep a verdict)
        green: float,
        red: float,
        sums: Sums,
        changes: tuple[tuple[float, float], ...] = (),  # (longer window's seconds, change ratio)
        # about the exit thresholds (green - exit_margin, red + exit_margin): what leaves a
        # verdict
        green_exit: float = 0.0,
        red_exit: float = 0.0,
        *,
        basis: _Basis | None = None,  # (gathered) the figures computed from it when read
    ) -> None:
        self.seconds, self.full, self.sums = seconds, full, sums
        self._values: list[float | None] = (
            [green, red, green_exit, red_exit] if basis is None else [None, None, None, None]
        )
        self._changes: dict[float, float] = dict(changes)
        self._basis = basis

    def _effect(self, basis: _Basis) -> float:
        effect = basis.effect
        if effect is None:
            effect = basis.effect = _design_effect(self.sums)
        return effect

    def _scale(self, basis: _Basis, bar: float) -> float:
        """The design effect x the widening at `bar`."""
        return self._effect(basis) * _widening(self.sums.requests, bar)

    def ratio_at(self, threshold: float, indifference: float, bar: float) -> float:
        """`log_ratio` of the window's sums about another threshold, on its one design
        effect."""
        basis = self._basis
        if basis is None:
            return log_ratio(self.sums, threshold, indifference, bar)
        scale = self._scale(basis, bar)
        return _ratio(basis.p, scale, self.sums.y, threshold, indifference)

    def _value(self, index: int) -> float:
        value = self._values[index]
        if value is None:
            basis = self._basis
            assert basis is not None
            cfg = basis.cfg
            threshold = (
                cfg.green,
                cfg.red,
                cfg.green - cfg.exit_margin,
                cfg.red + cfg.exit_margin,
            )[index]
            scale = self._scale(basis, basis.bars[index % 2])  # green's bar, or red's
            value = _ratio(basis.p, scale, self.sums.y, threshold, cfg.indifference)
            self._values[index] = value
        return value

    @property
    def green(self) -> float:
        return self._value(0)

    @property
    def red(self) -> float:
        return self._value(1)

    @property
    def green_exit(self) -> float:
        return self._value(2)

    @property
    def red_exit(self) -> float:
        return self._value(3)

    @property
    def changes(self) -> tuple[tuple[float, float], ...]:
        """Against each longer window, shortest first."""
        if self._basis is None:
            return tuple(self._changes.items())
        return tuple((longer, self.change_from(longer)) for longer, _ in self._basis.longer)

    def _figures(self) -> tuple[object, ...]:
        return (
            self.seconds,
            self.full,
            self.green,
            self.red,
            self.sums,
            self.changes,
            self.green_exit,
            self.red_exit,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WindowEvidence):
            return NotImplemented
        return self._figures() == other._figures()

    __hash__ = None  # type: ignore[assignment]  # compared by value, as a dataclass was

    def __repr__(self) -> str:
        names = ("seconds", "full", "green", "red", "sums", "changes", "green_exit", "red_exit")
        figures = ", ".join(f"{n}={v!r}" for n, v in zip(names, self._figures(), strict=True))
        return f"WindowEvidence({figures})"

    def change_from(self, longer: float) -> float:
        value = self._changes.get(longer)
        if value is not None:
            return value
        basis = self._basis
        if basis is None:
            return 0.0
        for seconds, other in basis.longer:
            if seconds == longer:
                value = self._changes[longer] = _change(
                    self.sums, self._effect(basis), rest(other, self.sums), basis.bars[2]
                )
                return value
        return 0.0


class Evidence:
    """What a zone is judged on: the windows past at least half the sample gates, shortest
    first, and the bar at which a shorter window's data count as a change from a longer's.

    A value (compared and shown by its windows and bar), never changed once made; a plain
    class the build compiles, not a frozen dataclass, whose __init__ is interpreted: an
    evaluation makes one per slice it judges again."""

    __slots__ = ("_chosen", "change_bar", "windows")

    def __init__(self, windows: tuple[WindowEvidence, ...], change_bar: float = math.inf) -> None:
        self.windows = windows
        self.change_bar = change_bar
        # what `deciding` chose, per (full, windows within the horizon): an evaluation asks up
        # to seven times, and the next ones ask again while the evidence has not changed
        self._chosen: dict[tuple[bool, int], WindowEvidence | None] = {}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Evidence):
            return NotImplemented
        return (self.windows, self.change_bar) == (other.windows, other.change_bar)

    __hash__ = None  # type: ignore[assignment]  # compared by value, as the dataclass was

    def __repr__(self) -> str:
        return f"Evidence(windows={self.windows!r}, change_bar={self.change_bar!r})"

    def deciding(self, full: bool, horizon: float | None = None) -> WindowEvidence | None:
        """The window whose evidence decides, among those past the whole gates when `full`
        (else half of them) and no longer than `horizon` (when given: the windows that hold
        nothing from before the news the last verdict change rested on). The longest decides
        (it holds the most data) unless a shorter one's data differ from the longer rest of the
        deciding one at `change_bar`: then the newer data override the older. Tried from the
        longest down, so after a change long ago the window that holds only the new data
        decides, and the shortest only when it differs from that. Entering, keeping and
        leaving a verdict read the same window."""
        # what the horizon lets in is the windows no longer than it: the choice is kept per
        # how many those are (a horizon grows at every evaluation; the windows it admits, not)
        within = len(self.windows)
        if horizon is not None:
            within = sum(1 for window in self.windows if window.seconds <= horizon)
        asked = (full, within)
        if asked in self._chosen:
            return self._chosen[asked]
        chosen = self._chosen[asked] = self._decide(full, horizon)
        return chosen

    def _decide(self, full: bool, horizon: float | None) -> WindowEvidence | None:
        eligible = [
            window
            for window in self.windows
            if (window.full or not full) and (horizon is None or window.seconds <= horizon)
        ]
        if not eligible:
            return None
        chosen = eligible[-1]
        for window in reversed(eligible[:-1]):
            if window.change_from(chosen.seconds) >= self.change_bar:
                chosen = window
        return chosen

    def decided(
        self, threshold: str, bar: float, full: bool, horizon: float | None = None
    ) -> float:
        """The deciding window's evidence about `threshold` ("green", "red", or their exit
        thresholds "green_exit", "red_exit") when it is sure at `bar` (|ratio| >= bar), else
        0."""
        window = self.deciding(full, horizon)
        if window is None:
            return 0.0
        value: float = getattr(window, threshold)
        return value if abs(value) >= bar else 0.0


def gathered(
    windows: Iterable[tuple[float, Sums]], cfg: Thresholds, entering: bool
) -> Evidence | None:
    """The evidence of the windows past half the sample gates, or None when there is none to
    judge on: no window past the whole gates when `entering` a verdict (the slice is
    insufficient), none past half of them when keeping one. Each window carries its change
    ratio against the older rest of every longer window (what `Evidence.deciding` reads)."""
    passing = []
    for seconds, sums in sorted(windows):
        if sums.y <= 0 or sums.y < cfg.min_trials / 2 or sums.requests < cfg.min_requests / 2:
            continue
        passing.append((seconds, sums))
    if not passing:
        return None
    bars = (cfg.bar("green"), cfg.bar("red"), cfg.change_evidence)
    kept = []
    for i, (seconds, sums) in enumerate(passing):
        full = sums.y >= cfg.min_trials and sums.requests >= cfg.min_requests
        basis = _Basis(sums, cfg, bars, passing[i + 1 :])
        kept.append(WindowEvidence(seconds, full, 0.0, 0.0, sums, basis=basis))
    if entering and not any(window.full for window in kept):
        return None
    return Evidence(tuple(kept), cfg.change_evidence)
