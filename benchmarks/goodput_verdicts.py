"""What the goodput comparison of two configs covers and how often it is wrong, on the
simulator's cost model with overdispersed requests and step times
(analysis/compare/goodput.py: the statistics of `compare --metric tpot`, /status `change`,
the canary's goodput rules and SpecDecodeCanarySlower).

A request: 20-300 output tokens; its acceptance drawn around its side's truth with a
per-request sd of `--sd` (0.08); its steps accept min(K, geometric) tokens each and cost the
simulator's step time at its load (sim/acceptance.CostModel: target step 4 ms, K x draft cost,
and `batch_compute` per other request in flight per token verified), times a log-normal factor
of sd 0.15 per request (neighbours, preemptions: step times vary by request too). Its load
(requests in flight as it started) is drawn per side; load buckets are the sidecar's default.
A model has 4 slices (2 ctx buckets x 2 tasks, each its own acceptance), compared at once with
its rollup (one family).

Cases (`--runs` comparisons each, `--requests` a side per slice):
(a) equal configs at equal load (K 4, draft cost 0.05, loads 1-16; batch_compute 0.005 in
    every case, so TPOT grows with load): any verdict of a model
    `slower` or `faster`, and SpecDecodeCanarySlower's condition over an hour of evaluations
    (the ratio's lower bound above 1.03 for 15 minutes of a 30-minute window every minute);
(b) a cheaper draft: canary draft cost 0.02 and acceptance 0.05 lower (K 7, stable 0.05,
    loads 1-4): faster per token; the model's and slices' verdicts, and no slower;
(c) K 3 -> 7 at the same acceptance at high load (loads 24-48): slower;
(d) coverage of the ratio's true value (per slice, at 95% and family-wise) in (b) and (c),
    the truth from 200,000 requests a side per cell;
(e) equal configs, the canary at half the stable pods' load (loads 1-8 against 1-16): a raw
    ratio of TPOT would call it faster; within load buckets, how often any verdict is given;
(f) one slice's TPOT interval at 8, 30 and 120 requests: coverage on the log scale (what the
    sidecar uses) against the linear one;
(g) equal configs at stable's and the canary's loads (1 + Poisson(mean - 1) per request: 8/8,
    8/4, 6/12, 12/6, 18/30, 40/24, 2/40), on a linear, a convex and a kneed curve of step time
    against load: any verdict, and the model's interval covering the true ratio (1);
(h) power at 400 a side: a canary whose every step costs 1.08x, or 0.85x;
(i) which factor is named: every step 8% dearer, or acceptance 0.05 lower (fewer tokens a
    step), at 8/8 and 18/30.

    .venv/bin/python benchmarks/goodput_verdicts.py [--runs 400] [--hours 100] [--seed 1]
        [--sd 0.08] [--requests 120 ...] [--only classic loads power factors hours]
        [--curves linear convex kneed]
"""

from __future__ import annotations

import argparse
import math
from collections import Counter
from dataclasses import dataclass, replace

import numpy as np
from specwatch.analysis.compare.factors import STEP_TIME, TOKENS_PER_STEP
from specwatch.analysis.compare.goodput import FASTER, SLOWER, compare_tpot
from specwatch.analysis.counting.slicing import LoadBuckets
from specwatch.analysis.counting.stats import robust_variance, t_quantile
from specwatch.analysis.counting.sums import DecodeSums, Sums
from specwatch.analysis.speed.goodput import tpot_interval
from specwatch.sim.acceptance import CostModel

CONFIDENCE, MARGIN, LEAST_CELL, LEAST_REQUESTS = 0.95, 0.03, 5, 30
SLICES = (
    ("0-512", "chat", 0.72),
    ("0-512", "code", 0.80),
    ("2k+", "chat", 0.62),
    ("2k+", "code", 0.70),
)
TIME_SD = 0.15
# each other request in flight adds this share of a step per token verified: TPOT grows with
# load, as compute does once the target is no longer memory-bound
BATCH_COMPUTE = 0.005
LOADS = LoadBuckets((1, 4, 8, 16, 32, 64))


@dataclass(frozen=True)
class Side:
    k: int
    cost: float  # draft cost per drafted token, a share of the target's step
    alpha_shift: float  # added to every slice's acceptance
    loads: tuple[int, int]  # in flight, uniform in [lo, hi]
    batch_compute: float = 0.0
    mean_load: float | None = None  # else in flight 1 + Poisson(mean - 1), as arrivals give
    curve: str = "linear"  # how a step's time grows with the load (step_factor)
    slower: float = 1.0  # every step's time times this (a truly slower config)


KNEE = 24  # the kneed curve's load: below it the step barely grows, above it steeply


def step_factor(curve: str, batch: np.ndarray, k: int, bc: float) -> np.ndarray:
    """A step's time at `batch` in flight over its time alone, beyond the draft's cost: linear
    (sim/acceptance.CostModel's), convex (quadratic, equal to the linear one at 17 in
    flight), or kneed (a tenth of the linear slope up to KNEE, then four times it: the
    KV cache's pressure)."""
    others: np.ndarray = np.maximum(0, batch - 1).astype(float)
    per = bc * (k + 1)
    if curve == "linear":
        return np.asarray(per * others)
    if curve == "convex":
        return np.asarray(per * others * others / 16.0)
    if curve == "kneed":
        return np.asarray(per * (0.1 * others + 4.0 * np.maximum(0.0, batch - KNEE)))
    raise ValueError(curve)


def requests(
    rng: np.random.Generator, side: Side, alpha: float, n: int, sd: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Decode seconds, decode tokens, load bucket index, load and engine steps of `n`
    requests."""
    mean = min(0.97, max(0.03, alpha + side.alpha_shift))
    shape = mean * (1 - mean) / sd**2 - 1
    own = rng.beta(mean * shape, (1 - mean) * shape, n)
    tokens = rng.integers(20, 301, n)
    if side.mean_load is None:
        load = rng.integers(side.loads[0], side.loads[1] + 1, n)
    else:
        load = 1 + rng.poisson(side.mean_load - 1, n)
    # steps until the request's decode tokens are out: accepted + 1 each
    per_step = (1 - own ** (side.k + 1)) / (1 - own)  # the mean emitted per step
    guess = np.ceil((tokens - 1) / per_step * 1.5 + 10).astype(np.int64)
    owner = np.repeat(np.arange(n), guess)
    u = 1.0 - rng.random(owner.size)
    accepted = np.minimum(side.k, np.floor(np.log(u) / np.log(own[owner])))
    emitted = accepted + 1
    start = np.concatenate(([0], np.cumsum(guess)[:-1]))
    cumulative = np.cumsum(emitted)
    before = np.concatenate(([0.0], cumulative))[start]
    within = cumulative - before[owner]
    done = within - emitted < (tokens - 1)[owner]  # the step is needed
    steps = np.bincount(owner, done, n)
    model = CostModel(draft_cost_ratio=side.cost)
    alone = model.step_seconds(side.k)
    step_seconds = alone + model.target_step_ms / 1000.0 * step_factor(
        side.curve, load, side.k, side.batch_compute
    )
    seconds = steps * step_seconds * side.slower
    seconds *= np.exp(rng.normal(0, TIME_SD, n) - TIME_SD**2 / 2)
    index = np.array([LOADS.index(max(1, int(b))) for b in load])
    return seconds, (tokens - 1).astype(float), index, load.astype(float), steps.astype(float)


def cells(
    rng: np.random.Generator, side: Side, n: int, sd: float, model: str = "m"
) -> dict[tuple[str, ...], Sums]:
    """Per cell (model, ctx, task, load bucket) the sums the sidecar keeps (DecodeSums)."""
    out: dict[tuple[str, ...], Sums] = {}
    buckets = len(LOADS.labels)
    for ctx, task, alpha in SLICES:
        x, y, index, b, st = requests(rng, side, alpha, n, sd)
        yb = y * b
        weights = (None, x, y, x * x, x * y, y * y, yb, x * b, yb * b, y * yb, yb * yb,
                   st, st * st, x * st, y * st)  # fmt: skip
        sums = [np.bincount(index, w, buckets) for w in weights]
        for i in np.flatnonzero(sums[0]):
            values = (float(s[i]) for s in sums[1:])
            out[model, ctx, task, LOADS.labels[i]] = DecodeSums(int(sums[0][i]), *values)
    return out


def verdicts(before: Side, after: Side, runs: int, n: int, sd: float, seed: int) -> Counter[str]:
    rng = np.random.default_rng(seed)
    tally: Counter[str] = Counter()
    for _ in range(runs):
        slices, models = compare_tpot(
            cells(rng, before, n, sd), cells(rng, after, n, sd), CONFIDENCE, MARGIN,
            LEAST_CELL, LEAST_REQUESTS,
        )  # fmt: skip
        said = {row.verdict for row in (*slices, *models)}
        tally["runs"] += 1
        tally["any slower"] += SLOWER in said
        tally["any faster"] += FASTER in said
        tally["any different"] += bool(said & {SLOWER, FASTER})
        tally["model slower"] += models[0].verdict == SLOWER
        tally["model faster"] += models[0].verdict == FASTER
        for row in slices:
            tally["slices"] += 1
            tally[f"slice {row.verdict}"] += 1
    return tally


def truth(before: Side, after: Side, sd: float, seed: int) -> dict[tuple[str, ...], float]:
    """Per slice and the model, the log-ratio the comparison estimates: the after side's TPOT
    over the before config's at the after side's loads (the before config simulated with the
    after side's load distribution), per cell, weighted by the after side's decode tokens."""
    rng = np.random.default_rng(seed)
    big = 200_000
    at_after = replace(before, loads=after.loads, mean_load=after.mean_load)
    b, a = cells(rng, at_after, big, sd), cells(rng, after, big, sd)
    out: dict[tuple[str, ...], float] = {}
    for key in {k[:-1] for k in a} | {("m",)}:
        mine = [
            c
            for c in a
            if c[: len(key)] == key and c in b and b[c].requests >= 1000 and a[c].requests >= 1000
        ]
        total = sum(a[c].y for c in mine)
        out[key] = sum(
            a[c].y / total * math.log((a[c].x / a[c].y) / (b[c].x / b[c].y)) for c in mine
        )
    return out


def coverage(
    before: Side, after: Side, runs: int, n: int, sd: float, seed: int
) -> tuple[float, float]:
    """Share of slice intervals (95%, and family-wise) holding the true ratio."""
    true = truth(before, after, sd, seed + 1000)
    rng = np.random.default_rng(seed)
    held = held_family = total = 0
    for _ in range(runs):
        b, a = cells(rng, before, n, sd), cells(rng, after, n, sd)
        slices, models = compare_tpot(b, a, CONFIDENCE, MARGIN, LEAST_CELL, LEAST_REQUESTS)
        # each interval at 95%: Bonferroni's 1 - (1 - c) / m = 0.95 for the m compared
        family = sum(row.ratio is not None for row in (*slices, *models))
        plain, _ = compare_tpot(b, a, 1 - 0.05 * family, MARGIN, LEAST_CELL, LEAST_REQUESTS)
        for row, each in zip(slices, plain, strict=True):
            if row.ratio is None or each.ratio is None:
                continue
            target = math.exp(true[row.key])
            total += 1
            held += each.ratio.lower <= target <= each.ratio.upper
            held_family += row.ratio.lower <= target <= row.ratio.upper
    return held / total, held_family / total


def unequal_loads(
    before: Side, after: Side, runs: int, n: int, sd: float, seed: int
) -> dict[str, float]:
    """At loads that differ: the share of runs with any verdict (slices or model) and with the
    model slower / faster, and the share of the model's (family-wise) intervals holding the
    true ratio."""
    true = math.exp(truth(before, after, sd, seed + 1000)["m",])
    rng = np.random.default_rng(seed)
    tally: Counter[str] = Counter()
    for _ in range(runs):
        slices, models = compare_tpot(
            cells(rng, before, n, sd), cells(rng, after, n, sd), CONFIDENCE, MARGIN,
            LEAST_CELL, LEAST_REQUESTS,
        )  # fmt: skip
        said = {row.verdict for row in (*slices, *models)}
        model = models[0]
        tally["any"] += bool(said & {SLOWER, FASTER})
        tally["slower"] += model.verdict == SLOWER
        tally["faster"] += model.verdict == FASTER
        if model.ratio is not None:
            tally["intervals"] += 1
            tally["held"] += model.ratio.lower <= true <= model.ratio.upper
    return {
        "true": true,
        "any": tally["any"] / runs,
        "slower": tally["slower"] / runs,
        "faster": tally["faster"] / runs,
        "coverage": tally["held"] / tally["intervals"] if tally["intervals"] else math.nan,
        "compared": tally["intervals"] / runs,
    }


def tpot_coverage(side: Side, n: int, runs: int, sd: float, seed: int) -> tuple[float, float]:
    """One slice's TPOT interval (analysis/speed/goodput.tpot_interval: log scale) against the same
    variance on the linear scale, estimate +- t sqrt(v): the share holding the true TPOT."""
    rng = np.random.default_rng(seed)
    alpha = SLICES[0][2]
    x, y, _, _, _ = requests(np.random.default_rng(seed + 7), side, alpha, 200_000, sd)
    true = x.sum() / y.sum()
    log_held = linear_held = 0
    for _ in range(runs):
        x, y, _, _, _ = requests(rng, side, alpha, n, sd)
        sums = Sums()
        for xi, yi in zip(x, y, strict=True):
            sums.add(float(xi), float(yi))
        interval = tpot_interval(sums, CONFIDENCE)
        assert interval is not None
        ratio = sums.x / sums.y
        half = t_quantile(CONFIDENCE, n - 1) * math.sqrt(
            robust_variance(sums.requests, sums.x, sums.y, sums.xx, sums.xy, sums.yy)
        )
        log_held += interval.lower <= true <= interval.upper
        linear_held += ratio - half <= true <= ratio + half
    return log_held / runs, linear_held / runs


def alert_hours(
    before: Side, after: Side, hours: int, per_hour: int, sd: float, seed: int
) -> tuple[float, float]:
    """SpecDecodeCanarySlower's condition over an hour of evaluations: requests arrive every
    minute (`per_hour` a slice-hour a side), the comparison over the last 30 minutes every
    minute from minute 30 to 90; fires when a slice's lower bound stays above 1 + margin for
    15 evaluations. The share of hours it fired, and the median minute it first did."""
    rng = np.random.default_rng(seed)
    fired, minutes = 0, []
    per_minute = max(1, per_hour // 60)
    for _ in range(hours):
        minute_cells = [
            (cells(rng, before, per_minute, sd), cells(rng, after, per_minute, sd))
            for _ in range(90)
        ]
        held: Counter[tuple[str, ...]] = Counter()
        first = None
        for now in range(30, 90):
            window = minute_cells[now - 30 : now]
            b: dict[tuple[str, ...], Sums] = {}
            a: dict[tuple[str, ...], Sums] = {}
            for side_b, side_a in window:
                for key, s in side_b.items():
                    b.setdefault(key, Sums()).merge(s)
                for key, s in side_a.items():
                    a.setdefault(key, Sums()).merge(s)
            slices, _ = compare_tpot(b, a, CONFIDENCE, MARGIN, LEAST_CELL, LEAST_REQUESTS)
            for row in slices:
                over = row.ratio is not None and row.ratio.lower > 1 + MARGIN
                held[row.key] = held[row.key] + 1 if over else 0
                if held[row.key] >= 15 and first is None:
                    first = now
        if first is not None:
            fired += 1
            minutes.append(first)
    return fired / hours, float(np.median(minutes)) if minutes else float("nan")


def factor_naming(
    before: Side, after: Side, runs: int, n: int, sd: float, seed: int
) -> dict[str, float]:
    """The share of runs whose model comparison names each factor as deciding, and the
    truth of each factor (the after side's over the before config's at the after side's
    loads, 200,000 requests a side)."""
    rng = np.random.default_rng(seed)
    tally: Counter[str] = Counter()
    for _ in range(runs):
        _, models = compare_tpot(
            cells(rng, before, n, sd), cells(rng, after, n, sd), CONFIDENCE, MARGIN,
            LEAST_CELL, LEAST_REQUESTS,
        )  # fmt: skip
        factors = models[0].factors
        tally["verdict " + models[0].verdict] += 1
        if factors is not None:
            tally["factored"] += 1
            for name in factors.deciding:
                tally[name] += 1
    big = np.random.default_rng(seed + 1000)
    at_after = replace(before, loads=after.loads, mean_load=after.mean_load)
    b, a = cells(big, at_after, 100_000, sd), cells(big, after, 100_000, sd)
    true = {}
    for name, num, den in ((STEP_TIME, "x", "steps"), (TOKENS_PER_STEP, "y", "steps")):
        ratio = [
            sum(getattr(side[c], num) for c in side) / sum(getattr(side[c], den) for c in side)
            for side in (a, b)
        ]
        true[name] = ratio[0] / ratio[1]
    return {
        "step": tally[STEP_TIME] / runs,
        "yield": tally[TOKENS_PER_STEP] / runs,
        "slower": tally["verdict slower"] / runs,
        "factored": tally["factored"] / runs,
        "true step": true[STEP_TIME],
        "true yield": true[TOKENS_PER_STEP],
    }


CURVES = ("linear", "convex", "kneed")
# (stable's mean load, the canary's): requests in flight as each request starts, 1 + Poisson
LOAD_PAIRS = ((8, 8), (8, 4), (6, 12), (12, 6), (18, 30), (40, 24), (2, 40))


def at_unequal_loads(args: argparse.Namespace) -> None:
    """(g) equal configs at stable's and the canary's loads, on each curve: any verdict
    (slices or the model), the model's, its interval's coverage of the true ratio (1.000);
    (h) power: a canary truly 8% slower (every step 1.08x) and one truly 15% faster."""
    bc = BATCH_COMPUTE
    for curve in args.curves:
        for n in args.requests:
            for lb, la in LOAD_PAIRS if "loads" in args.only else ():
                stable = Side(4, 0.05, 0.0, (1, 16), bc, mean_load=lb, curve=curve)
                r = unequal_loads(stable, replace(stable, mean_load=la), args.runs, n, args.sd,
                                  args.seed)  # fmt: skip
                print(
                    f"(g) {curve}, loads {lb}/{la}, {n} a side per slice: any verdict "
                    f"{r['any']:.1%}, model slower {r['slower']:.1%} faster {r['faster']:.1%}; "
                    f"model interval covers {r['true']:.3f} in {r['coverage']:.1%} of "
                    f"{r['compared']:.0%} compared",
                    flush=True,
                )
            for factor in (1.08, 0.85) if "power" in args.only and n >= 400 else ():
                for lb, la in ((8, 8), (6, 12), (18, 30), (40, 24)):
                    stable = Side(4, 0.05, 0.0, (1, 16), bc, mean_load=lb, curve=curve)
                    canary = replace(stable, mean_load=la, slower=factor)
                    r = unequal_loads(stable, canary, args.runs, n, args.sd, args.seed)
                    print(
                        f"(h) {curve}, canary x{factor}, loads {lb}/{la}, {n} a side per "
                        f"slice: model slower {r['slower']:.1%} faster {r['faster']:.1%}; "
                        f"covers {r['true']:.3f} in {r['coverage']:.1%}",
                        flush=True,
                    )


def factors_named(args: argparse.Namespace) -> None:
    """(i) which factor is named: every step 8% dearer (tokens per step unchanged), or each
    step yielding ~9% fewer tokens (acceptance 0.05 lower, the step's cost unchanged), at
    equal and unequal loads, 400 requests a side per slice."""
    bc = BATCH_COMPUTE
    for curve in args.curves:
        for lb, la in ((8, 8), (18, 30)):
            stable = Side(4, 0.05, 0.0, (1, 16), bc, mean_load=lb, curve=curve)
            for name, canary in (
                ("steps 8% dearer", replace(stable, mean_load=la, slower=1.08)),
                ("acceptance -0.05", replace(stable, mean_load=la, alpha_shift=-0.05)),
            ):
                r = factor_naming(stable, canary, args.runs, 400, args.sd, args.seed)
                print(
                    f"(i) {curve}, {name}, loads {lb}/{la}: model slower {r['slower']:.1%}; "
                    f"named: step time {r['step']:.1%}, tokens per step {r['yield']:.1%} "
                    f"(true step x{r['true step']:.3f}, tokens per step x{r['true yield']:.3f})",
                    flush=True,
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--hours", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sd", type=float, default=0.08)
    parser.add_argument("--requests", type=int, nargs="*", default=[120])  # none: hours only
    parser.add_argument(
        "--only",
        nargs="*",
        choices=("classic", "loads", "power", "factors", "hours"),
        default=["classic", "loads", "power", "factors", "hours"],
        help="the sections: (a)-(f), (g) unequal loads, (h) power, (i) factors, the hours",
    )
    parser.add_argument("--curves", nargs="*", default=list(CURVES), choices=CURVES)
    args = parser.parse_args()
    if "loads" in args.only or "power" in args.only:
        at_unequal_loads(args)
    if "factors" in args.only:
        factors_named(args)
    if "classic" not in args.only:
        args.requests = []
    if "hours" not in args.only:
        args.hours = 0
    bc = BATCH_COMPUTE
    stable = Side(k=4, cost=0.05, alpha_shift=0.0, loads=(1, 16), batch_compute=bc)
    cheaper_before = Side(k=7, cost=0.05, alpha_shift=0.0, loads=(1, 4), batch_compute=bc)
    cheaper = Side(k=7, cost=0.02, alpha_shift=-0.05, loads=(1, 4), batch_compute=bc)
    k3 = Side(k=3, cost=0.05, alpha_shift=0.0, loads=(24, 48), batch_compute=bc)
    k7 = Side(k=7, cost=0.05, alpha_shift=0.0, loads=(24, 48), batch_compute=bc)
    lighter = Side(k=4, cost=0.05, alpha_shift=0.0, loads=(1, 8), batch_compute=bc)
    print(f"per-request acceptance sd {args.sd}, step-time sd {TIME_SD}, {args.runs} runs a case")
    for n in args.requests:
        print(f"\n{n} requests a side per slice ({len(SLICES)} slices and the model compared)")
        for name, before, after in (
            ("(a) equal configs, equal load", stable, stable),
            ("(b) cheaper draft, acceptance -0.05", cheaper_before, cheaper),
            ("(c) K 3 -> 7 at loads 24-48", k3, k7),
            ("(e) equal configs, canary at half the load", stable, lighter),
        ):
            t = verdicts(before, after, args.runs, n, args.sd, args.seed)
            runs, slices = t["runs"], t["slices"]
            print(
                f"  {name}: model slower {t['model slower'] / runs:.1%}, faster "
                f"{t['model faster'] / runs:.1%}; any verdict slower {t['any slower'] / runs:.1%},"
                f" faster {t['any faster'] / runs:.1%}, different {t['any different'] / runs:.1%}; "
                f"slices slower {t['slice slower'] / slices:.1%}, faster "
                f"{t['slice faster'] / slices:.1%}, same {t['slice same'] / slices:.1%}"
            )
        raw = np.random.default_rng(args.seed)
        b, a = cells(raw, stable, 4000, args.sd), cells(raw, lighter, 4000, args.sd)
        pooled = (sum(s.x for s in a.values()) / sum(s.y for s in a.values())) / (
            sum(s.x for s in b.values()) / sum(s.y for s in b.values())
        )
        print(f"  (e) the raw TPOT ratio, all loads pooled: {pooled:.3f}")
        for name, before, after in (("(b)", cheaper_before, cheaper), ("(c)", k3, k7)):
            plain, family = coverage(before, after, max(50, args.runs // 4), n, args.sd, args.seed)
            model = math.exp(truth(before, after, args.sd, args.seed + 1000)["m",])
            print(
                f"  (d) coverage in {name} (true model ratio {model:.3f}): {plain:.3f} at 95%, "
                f"{family:.3f} family-wise"
            )
    for n in (8, 30, 120) if args.runs and args.requests else ():
        log, linear = tpot_coverage(stable, n, args.runs * 5, args.sd, args.seed)
        print(f"(f) a slice's TPOT interval over {n} requests: covers {log:.3f} on the log "
              f"scale, {linear:.3f} on the linear one")  # fmt: skip
    if args.hours:
        for name, before, after in (
            ("(a) equal configs", stable, stable),
            ("(b) cheaper draft", cheaper_before, cheaper),
            ("(e) canary at half the load", stable, lighter),
        ):
            rate, _ = alert_hours(before, after, args.hours, 480, args.sd, args.seed)
            print(f"{name}: SpecDecodeCanarySlower fired in {rate:.1%} of {args.hours} hours "
                  "(480 requests a slice-hour a side)")  # fmt: skip
        rate, minute = alert_hours(k3, k7, max(10, args.hours // 5), 480, args.sd, args.seed)
        print(f"(c) K 3 -> 7: fired in {rate:.1%} of hours, at minute {minute:.0f} (median)")


if __name__ == "__main__":
    main()
