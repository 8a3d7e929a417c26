"""The recording rules compute what the sidecar computes: Student's t for every degree of freedom
a window can have, and, on slices of random traffic, alpha-hat's bounds and the zones' evidence.

Each test writes a promtool test file whose input is raw counters with constant increments a
minute (so `increase()` over a window of whole minutes needs no extrapolation) and whose
expected values come from the sidecar's own functions on the same sums.
"""

from __future__ import annotations

import random
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from specwatch import conventions as C
from specwatch.analysis.compare.alpha import compare_models
from specwatch.analysis.compare.goodput import compare_tpot
from specwatch.analysis.counting.stats import proportion_interval, t_quantile, tail_confidence
from specwatch.analysis.counting.sums import DecodeSums, Sums
from specwatch.analysis.verdicts.evidence import gathered, log_ratio
from specwatch.analysis.verdicts.thresholds import Thresholds
from specwatch.gen import promql as Q
from specwatch.gen.canary import difference_bound, ratio_bound
from specwatch.gen.goodput_factors import factor_bound
from specwatch.gen.writer import ANALYSIS_TEMPLATE
from specwatch.settings import load_settings

from tests.support.promtool import generated, recording_rules_for
from tests.support.tools import binary, prometheus_major

SETTINGS = load_settings()
MINUTES = 12  # the 5-minute window is read at minute 10: every series older than it


def run_promtool(
    tmp_path: Path, series: list[dict[str, str]], checks: list[dict[str, Any]]
) -> None:
    # the rules the checks read, as the generator writes them now (tests/support/promtool.py)
    cut = recording_rules_for([check["expr"] for check in checks])
    if cut is None:
        pytest.skip("mutation testing: the rules these checks read are the committed ones")
    rules = tmp_path / "recording.rules.yml"
    rules.write_bytes(cut)
    test = {
        "rule_files": [str(rules)],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": checks}],
    }
    path = tmp_path / "generated.test.yml"
    path.write_text(yaml.safe_dump(test, width=10_000))
    done = subprocess.run(
        [binary("promtool"), "test", "rules", str(path)], capture_output=True, text=True
    )
    assert 0 == done.returncode, done.stdout[-4000:] + done.stderr[-2000:]


def argo_condition(condition: str, result: list[float]) -> bool:
    """An Argo Rollouts condition of the form `result[0] OP number` on a query's result."""
    found = re.fullmatch(r"result\[0\] (==|>|<|>=|<=) (-?[0-9.]+)", condition)
    assert found is not None, condition
    op, bound = found.group(1), float(found.group(2))
    value = result[0]
    return {"==": value == bound, ">": value > bound, "<": value < bound,
            ">=": value >= bound, "<=": value <= bound}[op]  # fmt: skip


def labels(task: str) -> str:
    return f'model="m",ctx_bucket="0-512",task="{task}",instance="a"'


def within(
    expr: str, expected: float, relative: float, task: str, at: str = "10m"
) -> dict[str, Any]:
    """A check that `expr` is within `relative` of `expected` for the slice `task`."""
    tolerance = abs(expected) * relative + 1e-12
    return {
        "expr": f"abs({expr} - {expected!r}) <= bool {tolerance!r}",
        "eval_time": at,
        "exp_samples": [{"labels": f'{{model="m",ctx_bucket="0-512",task="{task}"}}', "value": 1}],
    }


def test_the_recorded_t_quantiles_are_the_sidecars_exact_ones_for_1_to_120_requests(
    tmp_path: Path,
) -> None:
    """95% and the zones' tail (where the evidence bar sits), 1 to 119 degrees of freedom:
    exact in the rules' tables, the Cornish-Fisher polynomial past them within 4e-6."""
    series, checks = [], []
    bars = {name: SETTINGS.zones.bar(name) for name in ("green", "red")}
    for df in range(1, 120):
        task = f"t{df}"
        requests = df + 1  # over the 5-minute window: df + 1 requests, df degrees of freedom
        series.append(
            {"series": f"{C.SLICE_REQUESTS}_total{{{labels(task)}}}",
             "values": f"0+{requests / 5!r}x{MINUTES}"}
        )  # fmt: skip
        t = Q.t_quantile("slice", "5m")
        checks.append(within(f'{t}{{task="{task}"}}', t_quantile(0.95, df), 1e-7, task))
        for name, bar in bars.items():
            widening = t_quantile(tail_confidence(bar), df) ** 2 / (2 * bar)
            recorded = f'{Q.evidence_widening("slice", "5m")}{{task="{task}",threshold="{name}"}}'
            check = within(recorded, widening, 1e-5, task)
            check["exp_samples"][0]["labels"] = (
                f'{{model="m",ctx_bucket="0-512",task="{task}",threshold="{name}"}}'
            )
            checks.append(check)
    run_promtool(tmp_path, series, checks)


def test_recorded_bounds_and_evidence_are_the_sidecars_on_random_slices(tmp_path: Path) -> None:
    """Slices of two kinds of requests a minute (so requests differ: design effects from 1 to
    hundreds), 8 to 60 requests in the window, alpha-hat from near 0 to 1."""
    rng = random.Random(7)
    series, checks = [], []
    cfg = SETTINGS.zones
    for i in range(40):
        task = f"r{i}"
        kinds = []  # (requests a minute, trials, accepted) of each kind
        for _ in range(2):
            trials = rng.randint(20, 300)
            kinds.append((rng.randint(1, 6), trials, rng.randint(0, trials)))
        per_minute = [0, 0, 0, 0, 0, 0]  # n, accepted, trials, aa, at, tt
        for count, t, a in kinds:
            for j, value in enumerate((count, count * a, count * t, count * a * a,
                                       count * a * t, count * t * t)):  # fmt: skip
                per_minute[j] += value
        counters = (C.SLICE_REQUESTS, C.ACCEPTED_TOKENS, C.ACCEPTANCE_TRIALS,
                    C.REQUEST_ACCEPTED_SQUARED, C.REQUEST_ACCEPTED_X_TRIALS,
                    C.REQUEST_TRIALS_SQUARED)  # fmt: skip
        for name, value in zip(counters, per_minute, strict=True):
            series.append({"series": f"{name}_total{{{labels(task)}}}",
                           "values": f"0+{value}x{MINUTES}"})  # fmt: skip
        sums = Sums(*(5 * value for value in per_minute))
        interval = proportion_interval(sums.requests, sums.x, sums.y, sums.xx, sums.xy, sums.yy,
                                       cfg.confidence)  # fmt: skip
        assert interval is not None
        checks.append(within(f'{Q.alpha_bound("slice", "lower", "5m")}{{task="{task}"}}',
                             interval.lower, 1e-7, task))  # fmt: skip
        checks.append(within(f'{Q.alpha_bound("slice", "upper", "5m")}{{task="{task}"}}',
                             interval.upper, 1e-7, task))  # fmt: skip
        if sums.y >= cfg.min_trials / 2 and sums.requests >= cfg.min_requests / 2:
            for name, threshold in (("green", cfg.green), ("red", cfg.red)):
                expected = log_ratio(sums, threshold, cfg.indifference, cfg.bar(name))
                query = f'{Q.evidence("slice", "5m")}{{task="{task}",threshold="{name}"}}'
                check = within(query, expected, 1e-7, task)
                check["exp_samples"][0]["labels"] = (
                    f'{{model="m",ctx_bucket="0-512",task="{task}",threshold="{name}"}}'
                )
                checks.append(check)
    assert len(checks) > 100  # most slices pass half the gates: their evidence is checked
    run_promtool(tmp_path, series, checks)


def test_the_recorded_canary_difference_is_the_sidecars_comparison(tmp_path: Path) -> None:
    """Three slices of one model, a canary (config c1) and stable (config s1) pod each: the
    difference and its family-wise bounds, per slice and for the model, are
    analysis/compare/alpha.compare_models' (one family: the three slices and the model, m = 4; the
    rules' quantile: the normal one for the family with Cornish-Fisher's terms for Welch's
    degrees of freedom, within 0.2%)."""
    rng = random.Random(11)
    series, checks = [], []
    finer: list[tuple[tuple[str, ...], Sums, Sums]] = []
    model_sides: dict[str, Sums] = {}
    cfg = SETTINGS.canary
    slice_counters = (
        C.SLICE_REQUESTS,
        C.ACCEPTED_TOKENS,
        C.ACCEPTANCE_TRIALS,
        C.REQUEST_ACCEPTED_SQUARED,
        C.REQUEST_ACCEPTED_X_TRIALS,
        C.REQUEST_TRIALS_SQUARED,
    )
    model_counters = (
        C.MODEL_REQUESTS,
        C.MODEL_REQUEST_ACCEPTED_SQUARED,
        C.MODEL_REQUEST_ACCEPTED_X_TRIALS,
        C.MODEL_REQUEST_TRIALS_SQUARED,
    )
    whole = {"stable": [0] * 6, "canary": [0] * 6}
    for i in range(3):
        task = f"c{i}"
        sides = {}
        for track, config in (("stable", "s1"), ("canary", "c1")):
            per_minute = [0, 0, 0, 0, 0, 0]
            for _ in range(2):  # two kinds of requests a minute: they differ
                count, t = rng.randint(2, 5), rng.randint(40, 200)
                a = rng.randint(t // 3, t)
                moments = (count, count * a, count * t, count * a * a, count * a * t, count * t * t)
                for j, value in enumerate(moments):
                    per_minute[j] += value
            labels = f'model="m",ctx_bucket="0-512",task="{task}",config="{config}",track="{track}"'
            for name, value in zip(slice_counters, per_minute, strict=True):
                series.append(
                    {
                        "series": f'{name}_total{{{labels},instance="{track}"}}',
                        "values": f"0+{value}x40",
                    }
                )
            whole[track] = [w + v for w, v in zip(whole[track], per_minute, strict=True)]
            sides[track] = Sums(*(30 * value for value in per_minute))  # over 30 minutes
        finer.append((("m", "0-512", task), sides["stable"], sides["canary"]))
    for track, config in (("stable", "s1"), ("canary", "c1")):
        labels = f'model="m",config="{config}",track="{track}",instance="{track}"'
        n, _, _, aa, at, tt = whole[track]
        for name, value in zip(model_counters, (n, aa, at, tt), strict=True):
            series.append({"series": f"{name}_total{{{labels}}}", "values": f"0+{value}x40"})
        model_sides[track] = Sums(*(30 * value for value in whole[track]))
    rollups: list[tuple[tuple[str, ...], Sums, Sums]] = [
        (("m", "all", "all"), model_sides["stable"], model_sides["canary"])
    ]
    rows, models = compare_models(rollups, finer, cfg.confidence, cfg.margin, 1, 1)
    assert 3 == sum(r.difference is not None for r in rows)
    for level, row in [*(("slice", r) for r in rows), ("model", models[0].rollup)]:
        assert row.difference is not None
        task = row.key[2]
        where = f'{{task="{task}"}}' if level == "slice" else ""
        found = {"model": "m", "config": "c1", "track": "canary", "baseline_config": "s1"}
        if level == "slice":
            found |= {"ctx_bucket": "0-512", "task": task}
        labels = "{" + ",".join(f'{k}="{v}"' for k, v in sorted(found.items())) + "}"
        for bound, expected, tolerance in (
            ("estimate", row.difference.estimate, 1e-9),
            ("lower", row.difference.lower, 2e-3),
            ("upper", row.difference.upper, 2e-3),
        ):
            query = difference_bound(level, bound, SETTINGS) + where
            width = row.difference.upper - row.difference.lower
            check = f"abs({query} - {expected!r}) <= bool {tolerance * width!r}"
            checks.append(
                {"expr": check, "eval_time": "35m", "exp_samples": [{"labels": labels, "value": 1}]}
            )
    run_promtool(tmp_path, series, checks)


def test_the_recorded_tpot_ratio_at_the_same_load_is_the_sidecars(tmp_path: Path) -> None:
    """Three slices of one model over two load buckets, canary (c1) and stable (s1), the
    canary at heavier loads within each bucket (so the load's slope moves the ratio): the
    ratio, its family-wise bounds and the load's adjustment, and TPOT's two factors with their
    bounds, per slice and for the model, are analysis/compare/goodput.compare_tpot's on the
    same sums (the rules' t quantile is Cornish-Fisher's: bounds within 0.2% of the width)."""
    rng = random.Random(13)
    series: list[dict[str, str]] = []
    checks: list[dict[str, Any]] = []
    sides: dict[str, dict[tuple[str, ...], DecodeSums]] = {"stable": {}, "canary": {}}
    buckets = {"5-8": (5, 8), "9-16": (9, 16)}
    for i in range(3):
        task = f"g{i}"
        for load, (low, high) in buckets.items():
            for track, config in (("stable", "s1"), ("canary", "c1")):
                per_minute = DecodeSums()
                for _ in range(3):  # three kinds of requests a minute: loads and times differ
                    b = rng.randint(low, high - 2) + (2 if track == "canary" else 0)
                    count, y = rng.randint(1, 3), float(rng.randint(20, 200))
                    x = y * 0.01 * (1 + 0.03 * b) * rng.uniform(0.8, 1.25) * (1.05 if i else 1)
                    for _ in range(count):
                        per_minute.add_request(x, y, float(b), y / rng.uniform(1.5, 3.0))
                cell_labels = (
                    f'model="m",ctx_bucket="0-512",task="{task}",config="{config}",'
                    f'track="{track}",load="{load}",instance="{track}"'
                )
                for name, value in zip(
                    C.GOODPUT_CELL_COUNTERS, per_minute.decode_fields(), strict=True
                ):
                    series.append(
                        {"series": f"{name}_total{{{cell_labels}}}", "values": f"0+{value!r}x40"}
                    )
                n, *rest = per_minute.decode_fields()
                whole = DecodeSums(int(30 * n), *(30 * value for value in rest))
                sides[track]["m", "0-512", task, load] = whole
    cfg = SETTINGS.canary
    rows, models = compare_tpot(
        sides["stable"],
        sides["canary"],
        cfg.confidence,
        cfg.tpot_margin,
        cfg.tpot_min_cell_requests,
        SETTINGS.zones.min_requests,
    )
    assert 3 == sum(r.ratio is not None for r in rows)
    for level, row in [*(("slice", r) for r in rows), ("model", models[0])]:
        assert row.ratio is not None
        assert row.load_adjustment is not None
        assert row.load_adjustment < 0.99  # the canary's heavier loads taken out
        where = f'{{task="{row.key[2]}"}}' if level == "slice" else ""
        found = {"model": "m", "config": "c1", "track": "canary", "baseline_config": "s1"}
        if level == "slice":
            found |= {"ctx_bucket": "0-512", "task": row.key[2]}
        labels = "{" + ",".join(f'{k}="{v}"' for k, v in sorted(found.items())) + "}"
        width = row.ratio.upper - row.ratio.lower
        assert row.factors is not None
        factors = (
            (name, interval)
            for name, interval in (
                (C.FACTOR_STEP_TIME, row.factors.step_time),
                (C.FACTOR_TOKENS_PER_STEP, row.factors.tokens_per_step),
            )
        )
        factor_checks = [
            (factor_bound(level, name, bound, SETTINGS), getattr(interval, field), tolerance)
            for name, interval in factors
            for bound, field, tolerance in (
                ("estimate", "estimate", 1e-9 * (interval.upper - interval.lower)),
                ("lower", "lower", 2e-3 * (interval.upper - interval.lower)),
                ("upper", "upper", 2e-3 * (interval.upper - interval.lower)),
            )
        ]
        for query, expected, tolerance in (
            *factor_checks,
            (ratio_bound(level, "estimate", SETTINGS), row.ratio.estimate, 1e-9 * width),
            (ratio_bound(level, "lower", SETTINGS), row.ratio.lower, 2e-3 * width),
            (ratio_bound(level, "upper", SETTINGS), row.ratio.upper, 2e-3 * width),
            (
                Q.record(level, C.RECORDED_CANARY_TPOT_LOAD_ADJUSTMENT, "robust30m"),
                row.load_adjustment,
                1e-9,
            ),
        ):
            check = f"abs({query}{where} - {expected!r}) <= bool {tolerance!r}"
            checks.append(
                {"expr": check, "eval_time": "35m", "exp_samples": [{"labels": labels, "value": 1}]}
            )
    run_promtool(tmp_path, series, checks)


def _prometheus_increase(values: list[int], at: int, minutes: int, major: int) -> float:
    """What `increase(x[<minutes>m])` gives at minute `at` for one sample a minute: Prometheus
    2's range holds the sample at its start (no extrapolation needed); 3's does not, and
    extrapolates the last sample less the first over the whole range."""
    if major < 3:
        return float(values[at] - values[at - minutes])
    return (values[at] - values[at - minutes + 1]) * minutes / (minutes - 1)


def test_the_deciding_window_is_the_sidecars_on_slices_that_changed(tmp_path: Path) -> None:
    """Slices whose requests change at a random minute (or not at all): each shorter zone
    window's change from the older rest of a longer one, and the deciding evidence at the entry
    and exit bars, are analysis/verdicts/evidence.py's on the sums Prometheus reads (its
    `increase()`
    on one sample a minute). Most of them switch to a shorter window, some do not."""
    rng = random.Random(5)
    cfg = SETTINGS.zones
    at = 70  # minutes: every zone window is full
    windows = {"5m": 5, "30m": 30, "1h": 60}
    counters = (
        C.SLICE_REQUESTS,
        C.ACCEPTED_TOKENS,
        C.ACCEPTANCE_TRIALS,
        C.REQUEST_ACCEPTED_SQUARED,
        C.REQUEST_ACCEPTED_X_TRIALS,
        C.REQUEST_TRIALS_SQUARED,
    )
    series: list[dict[str, str]] = []
    checks: list[dict[str, Any]] = []
    deciding: list[float] = []
    major = prometheus_major()
    for i in range(24):
        task = f"d{i}"
        change_at = rng.choice([0, 20, 45, 62, 67, at + 1])

        def minute(alpha: float) -> list[int]:
            out = [0] * 6
            for _ in range(rng.randint(3, 12)):  # requests a minute, each its own size
                t = rng.randint(30, 120)
                a = min(t, max(0, round(t * rng.gauss(alpha, 0.08))))
                for j, value in enumerate((1, a, t, a * a, a * t, t * t)):
                    out[j] += value
            return out

        before, after = rng.uniform(0.3, 0.9), rng.uniform(0.3, 0.9)
        cumulative = [[0] * 6]
        for m in range(1, at + 3):
            step = minute(before if m < change_at else after)
            cumulative.append([c + s for c, s in zip(cumulative[-1], step, strict=True)])
        for j, name in enumerate(counters):
            values = " ".join(str(row[j]) for row in cumulative)
            series.append({"series": f"{name}_total{{{labels(task)}}}", "values": values})
        columns = [[row[j] for row in cumulative] for j in range(6)]
        sums = {}
        for name, length in windows.items():
            # Prometheus' increase of the request counter too: a float, as the rules see it
            increases: list[Any] = [_prometheus_increase(c, at, length, major) for c in columns]
            sums[name] = Sums(*increases)
        evidence = gathered(
            [(float(length * 60), sums[name]) for name, length in windows.items()],
            Thresholds(cfg),
            False,
        )
        assert evidence is not None
        for w in evidence.windows:
            for longer, value in w.changes:
                name = Q.duration(w.seconds)
                query = f'{Q.zone_change(name, Q.duration(longer))}{{task="{task}"}}'
                if value > 0:
                    checks.append(within(query, value, 1e-6, task, f"{at}m"))
        slice_labels = f'model="m",ctx_bucket="0-512",task="{task}"'
        for threshold in ("green", "red"):
            for record, judged, bar, full in (
                (Q.EVIDENCE_ENTRY, threshold, cfg.bar(threshold), True),
                (Q.EVIDENCE_EXIT, f"{threshold}_exit", cfg.exit_bar(threshold), False),
            ):
                expected = evidence.decided(judged, bar, full)
                query = f'{record}{{task="{task}",threshold="{threshold}"}}'
                sample = {"labels": f'{{{slice_labels},threshold="{threshold}"}}', "value": 1}
                tolerance = abs(expected) * 1e-6 + 1e-9
                check = f"abs({query} - {expected!r}) <= bool {tolerance!r}"
                found = [] if expected == 0 else [sample]
                checks.append({"expr": check, "eval_time": f"{at}m", "exp_samples": found})
        chosen = evidence.deciding(False)
        assert chosen is not None
        deciding.append(chosen.seconds)
    assert {300.0, 1800.0, 3600.0} <= set(deciding)  # every window decides somewhere
    run_promtool(tmp_path, series, checks)


@pytest.mark.parametrize("metric", ["goodput", "acceptance"])
def test_the_rollouts_analysis_fails_on_a_held_drop_and_not_on_a_one_minute_dip(
    tmp_path: Path, metric: str
) -> None:
    """Each query of the generated AnalysisTemplate (its model argument `.*`) on the canary's
    recorded bound: one slice crosses the line for one minute of the 15 (noise), another stays
    past it for all of them (a slower, or worse, canary): only the second counts. Goodput fails
    the rollout; acceptance is a dry-run metric beside it."""
    template = yaml.safe_load(generated()[ANALYSIS_TEMPLATE])  # as the generator writes it now
    metrics = {m["name"]: m for m in template["spec"]["metrics"]}
    names = {
        "goodput": "canary-not-slower-than-stable",
        "acceptance": "canary-acceptance-not-worse-than-stable",
    }
    chosen = metrics[names[metric]]
    assert {"address": SETTINGS.canary.prometheus_address} == {
        k: v for k, v in chosen["provider"]["prometheus"].items() if k != "query"
    }
    query = chosen["provider"]["prometheus"]["query"].replace("{{args.model}}", ".*")
    assert [{"metricName": names["acceptance"]}] == template["spec"]["dryRun"]
    assert [{"name": "model", "value": ".*"}] == template["spec"]["args"]
    # measured every 5 minutes for half an hour, failing at the first measurement that counts a
    # slice (Argo's conditions on the query's result: the count of slices, below)
    assert (300.0, 6, 0) == (
        Q.parse_duration(chosen["interval"]),
        chosen["count"],
        chosen["failureLimit"],
    )
    for count, fails in ((0, False), (1, True), (3, True)):
        result = [float(count)]
        assert (not fails, fails) == (
            argo_condition(chosen["successCondition"], result),
            argo_condition(chosen["failureCondition"], result),
        )
    if metric == "goodput":
        upper = ratio_bound("slice", "lower", SETTINGS)
        line = 1 + SETTINGS.canary.tpot_margin
        above, below = line - SETTINGS.canary.tpot_margin / 2, line + 0.1  # below: past it
    else:
        upper = difference_bound("slice", "upper", SETTINGS)
        margin = SETTINGS.canary.margin
        above, below = -margin / 2, -3 * margin

    def series(task: str, values: list[float]) -> dict[str, str]:
        labels = f'model="m",ctx_bucket="0-512",task="{task}",config="c1",track="canary"'
        return {"series": f"{upper}{{{labels}}}", "values": " ".join(map(repr, values))}

    dip = [above] * 20
    dip[12] = below
    test = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [series("dip", dip)],
                "promql_expr_test": [
                    {
                        "expr": query,
                        "eval_time": "19m",
                        "exp_samples": [{"labels": "{}", "value": 0}],
                    }
                ],
            },
            {
                "interval": "1m",
                "input_series": [series("dip", dip), series("held", [below] * 20)],
                "promql_expr_test": [
                    {
                        "expr": query,
                        "eval_time": "19m",
                        "exp_samples": [{"labels": "{}", "value": 1}],
                    }
                ],
            },
        ],
    }
    file = tmp_path / "template.test.yml"
    file.write_text(yaml.safe_dump(test, width=10_000))
    done = subprocess.run(
        [binary("promtool"), "test", "rules", str(file)], capture_output=True, text=True
    )
    assert 0 == done.returncode, done.stdout[-4000:] + done.stderr[-2000:]
