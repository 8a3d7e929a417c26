"""The recording rules compute what the sidecar computes: Student's t for every degree of freedom
a window can have, and, on slices of random traffic, alpha-hat's bounds and the zones' evidence.

Each test writes a promtool test file whose input is raw counters with constant increments a
minute (so `increase()` over a window of whole minutes needs no extrapolation) and whose
expected values come from the sidecar's own functions on the same sums.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path
from typing import Any

import yaml
from specwatch import conventions as C
from specwatch.analysis.compare import compare_slices
from specwatch.analysis.evidence import Sums, log_ratio
from specwatch.analysis.stats import proportion_interval, t_quantile, tail_confidence
from specwatch.gen import promql as Q
from specwatch.gen.canary import difference_bound
from specwatch.gen.writer import RECORDING_RULES
from specwatch.settings import load_settings

from tests.support import ROOT
from tests.support.tools import binary

SETTINGS = load_settings()
MINUTES = 12  # the 5-minute window is read at minute 10: every series older than it


def run_promtool(
    tmp_path: Path, series: list[dict[str, str]], checks: list[dict[str, Any]]
) -> None:
    test = {
        "rule_files": [str(ROOT / RECORDING_RULES)],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": checks}],
    }
    path = tmp_path / "generated.test.yml"
    path.write_text(yaml.safe_dump(test, width=10_000))
    done = subprocess.run(
        [binary("promtool"), "test", "rules", str(path)], capture_output=True, text=True
    )
    assert 0 == done.returncode, done.stdout[-4000:] + done.stderr[-2000:]


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
    tail = tail_confidence(SETTINGS.zones.evidence)
    for df in range(1, 120):
        task = f"t{df}"
        requests = df + 1  # over the 5-minute window: df + 1 requests, df degrees of freedom
        series.append(
            {"series": f"{C.SLICE_REQUESTS}_total{{{labels(task)}}}",
             "values": f"0+{requests / 5!r}x{MINUTES}"}
        )  # fmt: skip
        t = Q.t_quantile("slice", "5m")
        checks.append(within(f'{t}{{task="{task}"}}', t_quantile(0.95, df), 1e-7, task))
        widening = t_quantile(tail, df) ** 2 / (2 * SETTINGS.zones.evidence)
        recorded = f'{Q.evidence_widening("slice", "5m")}{{task="{task}"}}'
        checks.append(within(recorded, widening, 1e-5, task))
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
        interval = proportion_interval(*sums, cfg.confidence)
        assert interval is not None
        checks.append(within(f'{Q.alpha_bound("slice", "lower", "5m")}{{task="{task}"}}',
                             interval.lower, 1e-7, task))  # fmt: skip
        checks.append(within(f'{Q.alpha_bound("slice", "upper", "5m")}{{task="{task}"}}',
                             interval.upper, 1e-7, task))  # fmt: skip
        if sums.y >= cfg.min_trials / 2 and sums.requests >= cfg.min_requests / 2:
            for name, threshold in (("green", cfg.green), ("red", cfg.red)):
                expected = log_ratio(sums, threshold, cfg.indifference, cfg.evidence)
                query = f'{Q.evidence("slice", "5m")}{{task="{task}",threshold="{name}"}}'
                check = within(query, expected, 1e-7, task)
                check["exp_samples"][0]["labels"] = (
                    f'{{model="m",ctx_bucket="0-512",task="{task}",threshold="{name}"}}'
                )
                checks.append(check)
    assert len(checks) > 100  # most slices pass half the gates: their evidence is checked
    run_promtool(tmp_path, series, checks)


def test_the_recorded_canary_difference_is_the_sidecars_comparison(tmp_path: Path) -> None:
    """Three slices, a canary (config c1) and stable (config s1) pod each: the difference and
    its family-wise bounds are analysis/compare.py's (the rules' quantile: the normal one for
    a family of 3 with Cornish-Fisher's terms for Welch's degrees of freedom, within 0.2%)."""
    rng = random.Random(11)
    series, checks, pairs = [], [], []
    cfg = SETTINGS.canary
    for i in range(3):
        task = f"c{i}"
        sides = {}
        for track, config in (("stable", "s1"), ("canary", "c1")):
            per_minute = [0, 0, 0, 0, 0, 0]
            for _ in range(2):  # two kinds of requests a minute: they differ
                count, t = rng.randint(2, 5), rng.randint(40, 200)
                a = rng.randint(t // 3, t)
                for j, value in enumerate((count, count * a, count * t, count * a * a,
                                           count * a * t, count * t * t)):  # fmt: skip
                    per_minute[j] += value
            labels = f'model="m",ctx_bucket="0-512",task="{task}",config="{config}",track="{track}"'
            for name, value in zip(
                (C.SLICE_REQUESTS, C.ACCEPTED_TOKENS, C.ACCEPTANCE_TRIALS,
                 C.REQUEST_ACCEPTED_SQUARED, C.REQUEST_ACCEPTED_X_TRIALS,
                 C.REQUEST_TRIALS_SQUARED),
                per_minute,
                strict=True,
            ):  # fmt: skip
                series.append({"series": f"{name}_total{{{labels},instance=\"{track}\"}}",
                               "values": f"0+{value}x40"})  # fmt: skip
            sides[track] = Sums(*(30 * value for value in per_minute))  # over 30 minutes
        pairs.append((("m", "0-512", task), sides["stable"], sides["canary"]))
    rows = compare_slices(pairs, cfg.confidence, cfg.margin, 1, 1)
    assert 3 == sum(r.difference is not None for r in rows)
    for row in rows:
        assert row.difference is not None
        task = row.key[2]
        where = f'{{task="{task}"}}'
        found = {"model": "m", "ctx_bucket": "0-512", "task": task, "config": "c1",
                 "track": "canary", "baseline_config": "s1"}  # fmt: skip
        labels = "{" + ",".join(f'{k}="{v}"' for k, v in found.items()) + "}"
        for bound, expected, tolerance in (
            ("estimate", row.difference.estimate, 1e-9),
            ("lower", row.difference.lower, 2e-3),
            ("upper", row.difference.upper, 2e-3),
        ):
            query = difference_bound("slice", bound, SETTINGS) + where
            width = row.difference.upper - row.difference.lower
            checks.append({
                "expr": f"abs({query} - {expected!r}) <= bool {tolerance * width!r}",
                "eval_time": "35m",
                "exp_samples": [{"labels": labels, "value": 1}],
            })  # fmt: skip
    run_promtool(tmp_path, series, checks)
