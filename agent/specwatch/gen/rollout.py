"""The Argo Rollouts AnalysisTemplate of a canary: goodput decides, acceptance is shown.

A rollout stops on what users feel (gen/goodput_rules.py: the canary surely slower per output
token than stable); the acceptance comparison (gen/canary.py) runs beside it as a dry-run
metric, so an operator sees it in the rollout without it failing a faster canary.
"""

from __future__ import annotations

from typing import Any

from specwatch.gen import promql as Q
from specwatch.gen.canary import difference_bound
from specwatch.gen.goodput_rules import analysis_metric
from specwatch.settings import Settings


def analysis_template(settings: Settings, prometheus: str) -> dict[str, Any]:
    """An Argo Rollouts AnalysisTemplate that fails a rollout on SpecDecodeCanarySlower's
    condition (goodput: a slice's TPOT ratio surely above 1 + tpot_margin for the alert's
    `for`), and reports SpecDecodeCanaryWorse's (acceptance: the difference's upper bound below
    -margin for as long, its largest value over that time below) as a dry-run metric: shown,
    never failing the rollout."""
    cfg = settings.canary
    upper = difference_bound("slice", "upper", settings)
    selected = f'{upper}{{model=~"{{{{args.model}}}}"}}'
    held = f"max_over_time({selected}[{Q.duration(cfg.for_seconds)}])"
    query = f"count({held} < -{cfg.margin:g}) or vector(0)"
    acceptance = "canary-acceptance-not-worse-than-stable"
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AnalysisTemplate",
        "metadata": {"name": "specwatch-canary-acceptance"},  # the name Rollouts reference
        "spec": {
            "args": [{"name": "model", "value": ".*"}],
            "metrics": [
                analysis_metric(settings, prometheus),
                {
                    "name": acceptance,
                    "interval": "5m",
                    "count": 6,  # half an hour, a canary step's usual length
                    "failureLimit": 0,
                    "successCondition": "result[0] == 0",
                    "failureCondition": "result[0] > 0",
                    "provider": {"prometheus": {"address": prometheus, "query": query}},
                },
            ],
            "dryRun": [{"metricName": acceptance}],
        },
    }
