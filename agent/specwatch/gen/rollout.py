"""The Argo Rollouts AnalysisTemplate of a canary: goodput decides, acceptance is shown.

A rollout stops on what users feel (gen/goodput_rules.py: the canary surely slower per output
token than stable); the acceptance comparison (gen/canary.py) runs beside it as a dry-run
metric, so an operator sees it in the rollout without it failing a faster canary.
"""

from __future__ import annotations

from typing import Any

from specwatch.gen import promql as Q
from specwatch.gen.canary import difference_bound, ratio_bound
from specwatch.gen.template import PromQL
from specwatch.settings import Settings

# the slices of the rollout's model whose bound stayed past `bar` over the alert's `for`
HELD = PromQL(
    'count(${over_time}(${bound}{model=~"{{args.model}}"}[${span}]) ${beyond} ${bar}) or vector(0)'
)


def _metric(name: str, query: str, prometheus: str) -> dict[str, Any]:
    """A metric queried every 5 minutes for half an hour (a canary step's usual length) that
    fails at the first measurement counting a slice."""
    return {
        "name": name,
        "interval": "5m",
        "count": 6,
        "failureLimit": 0,
        "successCondition": "result[0] == 0",
        "failureCondition": "result[0] > 0",
        "provider": {"prometheus": {"address": prometheus, "query": query}},
    }


def analysis_template(settings: Settings, prometheus: str) -> dict[str, Any]:
    """An Argo Rollouts AnalysisTemplate that fails a rollout on SpecDecodeCanarySlower's
    condition (goodput: a slice whose TPOT ratio's lower bound has stayed above
    1 + tpot_margin for the alert's `for`, its smallest value over that time above), and
    reports SpecDecodeCanaryWorse's (acceptance: the difference's upper bound below -margin for
    as long, its largest value over that time below) as a dry-run metric: shown, never failing
    the rollout."""
    cfg = settings.canary
    span = Q.duration(cfg.for_seconds)
    slower = HELD(
        over_time="min_over_time",
        bound=ratio_bound("slice", "lower", settings),
        span=span,
        beyond=">",
        bar=f"{1.0 + cfg.tpot_margin:g}",
    )
    worse = HELD(
        over_time="max_over_time",
        bound=difference_bound("slice", "upper", settings),
        span=span,
        beyond="<",
        bar=f"-{cfg.margin:g}",
    )
    acceptance = "canary-acceptance-not-worse-than-stable"
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AnalysisTemplate",
        "metadata": {"name": "specwatch-canary-acceptance"},  # the name Rollouts reference
        "spec": {
            "args": [{"name": "model", "value": ".*"}],
            "metrics": [
                _metric("canary-not-slower-than-stable", slower, prometheus),
                _metric(acceptance, worse, prometheus),
            ],
            "dryRun": [{"metricName": acceptance}],
        },
    }
