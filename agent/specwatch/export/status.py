"""The /status JSON document, from one reading (docs/status.schema.json describes it)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from specwatch import conventions as C
from specwatch.analysis.analyzer import EngineView, SliceView, Snapshot
from specwatch.analysis.compare.changes import ChangeView
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.objectives import budget_left
from specwatch.analysis.counting.stats import Interval, difference_interval
from specwatch.analysis.speed.goodput import GoodputView
from specwatch.analysis.speed.speedup import Gain
from specwatch.analysis.verdicts.evidence import Evidence
from specwatch.core.records import SpecConfig
from specwatch.export.fields import (
    comparison_row,
    interval_fields,
    model_comparison,
    statistics_fields,
)
from specwatch.export.reading import Reading


def _gain(gain: Gain | None) -> dict[str, Any] | None:
    """A gain; an `insufficient` one's figures are null (NaN inside)."""
    if gain is None:
        return None
    out = asdict(gain)
    for field in ("ratio", "lower", "upper"):
        if out[field] != out[field]:
            out[field] = None
    return out


def slice_status(view: SliceView) -> dict[str, Any]:
    """One slice: the flat fields are over the window; `since_start` holds the running totals."""
    return {
        "model": view.key.model,
        "ctx_bucket": view.key.ctx_bucket,
        "task": view.key.task,
        **statistics_fields(view.window, view.stats),
        "zone": view.zone,
        "zone_metric": view.zone_metric,
        "zone_since": view.zone_since,
        "source": view.source,
        "gain": _gain(view.gain),
        "drift": None if view.drift is None else asdict(view.drift),
        "advice": None if view.advice is None else asdict(view.advice),
        "evidence": None if view.evidence is None else evidence_status(view.evidence),
        "causes": [cause.as_dict() for cause in view.causes],
        "since_start": view.since_start.as_dict(),
    }


def goodput_status(view: GoodputView | None) -> dict[str, Any] | None:
    """Decode time per output token over the window (its log-scale interval) and since the
    start, and the engine step time; None without a speculative request timed."""
    if view is None:
        return None
    return {
        "tpot_seconds": view.seconds,
        "tpot_interval": interval_fields(view.tpot),
        "requests": view.requests,
        "step_seconds": view.step_seconds,
        "since_start": {
            "tpot_seconds": view.seconds_since_start,
            "tpot_interval": interval_fields(view.tpot_since_start),
            "requests": view.requests_since_start,
        },
    }


def _goodput_models(snapshot: Snapshot) -> dict[str, Any]:
    """Per model: where its times per output token came from, and its goodput per load
    bucket (the requests in flight at the upstream when each started)."""
    out: dict[str, Any] = {}
    for model, sources in sorted(snapshot.tpot_sources.items()):
        out[model] = {"tpot_sources": dict(sorted(sources.items())), "by_load": {}}
    for key, view in snapshot.goodput.items():
        if key[1] == "load" and key[0] in out:
            out[key[0]]["by_load"][key[2]] = goodput_status(view)
    return out


def _per_request_data(snapshot: Snapshot, config: SpecConfig | None) -> dict[str, Any]:
    """Per model: requests with and without per-request data, where its acceptance comes
    from, what its data supports, and why not the rest where the config says."""
    rollups = {view.key.model: view.since_start for view in snapshot.rollups}
    topk = None if config is None else config.tree_topk
    reason = None if topk is None else TREE_REASON.format(topk=topk)
    return {
        model: {
            "with": with_data,
            "without": without,
            "source": _data_source(with_data),
            **_supported(rollups.get(model) if with_data else None),
            "reason": reason,
        }
        for model, (with_data, without) in sorted((snapshot.per_request_data or {}).items())
    }


TREE_REASON = (
    "drafts are trees ({topk} candidates per node, --speculative-eagle-topk): a step verifies "
    "a tree, not a line of positions, so alpha-hat and per-position acceptance do not apply; "
    "the rate (accepted over the nodes verified) and tau do"
)


def _sampling(snapshot: Snapshot) -> dict[str, Any]:
    """Per model, alpha-hat by how requests asked to decode (greedy, sampled, default), and
    greedy's minus sampled's where both have one: mixing them in a slice hides both."""
    out: dict[str, Any] = {}
    for model, modes in sorted(snapshot.sampling.items()):
        greedy, sampled = modes.get(C.Sampling.GREEDY), modes.get(C.Sampling.SAMPLED)
        a = None if greedy is None else greedy.alpha
        b = None if sampled is None else sampled.alpha
        gap = None if a is None or b is None else difference_interval(a, b)
        out[model] = {
            "modes": {
                mode: {
                    "requests": view.requests,
                    "accepted": view.accepted,
                    "trials": view.trials,
                    "alpha": interval_fields(view.alpha),
                }
                for mode, view in modes.items()
            },
            "greedy_minus_sampled": interval_fields(gap),
        }
    return out


def _supported(counts: Counts | None) -> dict[str, Any]:
    """What the model's per-request data since the start can support (docs/engines.md): per
    step (vLLM: alpha-hat, rate, tau, per position), totals (llama.cpp: the rate; tau where the
    engine counts steps), or none (None: no request came with data; the rollup's counts are
    then the engine's own counters, not per-request data)."""
    if counts is None or not (counts.drafted or counts.steps):
        kind = "none"
    else:
        kind = "totals" if counts.drafted and not counts.trials else "per_step"
    return {
        "data": kind,
        "supports": {
            "alpha_hat": bool(counts and counts.trials),
            "rate": bool(counts and counts.drafted),
            "tau": bool(counts and counts.steps),
            "per_position": bool(counts and any(counts.by_position)),
        },
    }


def _data_source(with_data: int) -> str:
    """Where a model's acceptance comes from: vLLM's per-request blocks through the proxy, or
    (none seen) vLLM's own counters alone."""
    return C.SliceSource.PROXY if with_data else C.SliceSource.VLLM_METRICS


def evidence_status(evidence: Evidence) -> dict[str, Any]:
    """The zone windows' evidence, and which window decides entering and keeping a verdict."""
    enter, keep = evidence.deciding(full=True), evidence.deciding(full=False)
    return {
        "windows": [
            {
                "seconds": w.seconds,
                "full": w.full,
                "green": w.green,
                "red": w.red,
                "requests": w.sums.requests,
                "trials": w.sums.y,
                "estimate": w.sums.x / w.sums.y,
                "changes": [[longer, ratio] for longer, ratio in w.changes],
            }
            for w in evidence.windows
        ],
        "deciding": {
            "enter": None if enter is None else enter.seconds,
            "keep": None if keep is None else keep.seconds,
        },
    }


def engine_status(view: EngineView) -> dict[str, Any]:
    return {
        "model": view.model,
        **view.window.as_dict(),
        "alpha": interval_fields(view.stats.alpha),
        "rate": None if view.stats.rate is None else view.stats.rate.estimate,
        "coverage": view.coverage,
        "running": view.running,
        "since_start": view.since_start.as_dict(),
    }


def _timed(fields: dict[str, Any], snapshot: Snapshot) -> dict[str, Any]:
    key = (fields["model"], fields["ctx_bucket"], fields["task"])
    fields["goodput"] = goodput_status(snapshot.goodput.get(key))
    return fields


def _bounds(interval: Interval | None) -> list[float] | None:
    return None if interval is None else [interval.lower, interval.upper]


def latency_slo_status(snapshot: Snapshot) -> list[dict[str, Any]]:
    """Per latency objective, model and variant since the start: the SLI's events (every
    result but `unmeasured`), the good ones, the attainment with its interval (minutes as the
    unit) and the error budget left of what the objective allows (negative: spent past it);
    on speculation's row, where A/B sends a share without it, its attainment less the
    baseline's with an interval. docs/latency-slos.md."""
    grouped: dict[tuple[str, str, str], dict[str, int]] = {}
    for (slo, model, variant, result), n in snapshot.latency.counts.items():
        grouped.setdefault((slo, model, variant), {})[result] = n
    objectives = {objective.name: objective for objective in snapshot.latency.objectives}
    out = []
    for (slo, model, variant), results in sorted(grouped.items()):
        objective = objectives[slo]
        events = sum(n for result, n in results.items() if result != C.SloResult.UNMEASURED)
        good = results.get(C.SloResult.GOOD, 0)
        attainment = good / events if events else None
        interval = snapshot.latency.attainment.get((slo, model, variant))
        baseline = snapshot.latency.attainment.get((slo, model, C.Variant.BASELINE))
        versus = None
        if variant != C.Variant.BASELINE and interval is not None and baseline is not None:
            difference = difference_interval(interval, baseline)
            versus = {"difference": difference.estimate, "interval": _bounds(difference)}
        out.append(
            {
                "slo": slo,
                "model": model,
                "variant": variant,
                "ttft_ms": objective.ttft_ms,
                "tpot_ms": objective.tpot_ms,
                "objective": objective.objective,
                "requests": events,
                "good": good,
                "by_result": dict(sorted(results.items())),
                "attainment": attainment,
                "attainment_interval": _bounds(interval),
                "error_budget_remaining": (
                    None if attainment is None else budget_left(attainment, objective.objective)
                ),
                "attainment_vs_baseline": versus,
            }
        )
    return out


def status_document(reading: Reading) -> dict[str, Any]:
    snapshot, health = reading.snapshot, reading.health
    recent = {table.model: table.ranges for table in snapshot.load_window}
    requests: dict[str, int] = {}
    variants: dict[str, int] = {}
    for (key, outcome), n in snapshot.requests.items():
        requests[outcome] = requests.get(outcome, 0) + n
        variants[key.variant] = variants.get(key.variant, 0) + n
    document: dict[str, Any] = {
        "at": snapshot.at,
        "started": snapshot.started,
        "config": None if reading.config is None else reading.config.as_dict(),
        "change": None if reading.change is None else change_fields(reading.change),
        "counts": "slice fields count the window; since_start counts since specwatch started",
        "window_seconds": snapshot.window_seconds,
        "slices": [_timed(slice_status(view), snapshot) for view in snapshot.slices],
        "models": [_timed(slice_status(view), snapshot) for view in snapshot.rollups],
        "goodput": _goodput_models(snapshot),
        "requests_by_outcome": dict(sorted(requests.items())),
        "requests_by_variant": dict(sorted(variants.items())),
        "per_request_data": _per_request_data(snapshot, reading.config),
        "latency_slos": latency_slo_status(snapshot),
        "sampling": _sampling(snapshot),
        "extreme_requests": {
            model: dict(sorted(kinds.items())) for model, kinds in (snapshot.extremes or {}).items()
        },
        "traffic_mix": {
            model: {
                "psi_ctx_bucket": mix.psi_ctx_bucket,
                "psi_task": mix.psi_task,
                **asdict(mix.decomposition),
                "total": mix.decomposition.total,
            }
            for model, mix in (snapshot.mix or {}).items()
        },
        "load": {
            table.model: {
                "k_in_use": table.k_in_use,
                "num_speculative_tokens_per_batch_size": table.schedule(),
                "ranges": [asdict(row) for row in table.ranges],
                "window_ranges": [asdict(row) for row in recent.get(table.model, ())],
            }
            for table in snapshot.load
        },
        "vllm": {
            "models": [engine_status(view) for view in snapshot.engine],
            "counter_resets": snapshot.counter_resets,
            "log": None if snapshot.vllm_log is None else asdict(snapshot.vllm_log),
        },
    }
    if reading.ab is not None and reading.ab.enabled:
        document["ab"] = reading.ab.as_dict()
    if health is not None:
        document["health"] = {
            "upstream_up": health.upstream_up,
            "dropped": health.dropped,
            "internal_errors": health.internal_errors,
            "parse_errors": {f"{s}/{r}": n for (s, r), n in sorted(health.parse_errors.items())},
            "in_flight": dict(sorted(health.in_flight.items())),
        }
        if health.held_bytes is not None:  # a proxy's: its byte budget
            document["health"] |= {
                "held_bytes": health.held_bytes,
                "held_limit_bytes": health.held_limit_bytes,
            }
        if health.shadow_comparisons or health.shadow_skipped:
            document["shadow"] = {
                model: {
                    "comparisons": n,
                    "divergences": health.shadow_divergences.get(model, 0),
                }
                for model, n in sorted(health.shadow_comparisons.items())
            } | {"skipped": dict(sorted(health.shadow_skipped.items()))}
    return document


def change_fields(change: ChangeView) -> dict[str, Any]:
    """/status `change`: the config change across a restart, its slices and models compared
    before and after."""
    return {
        "from": change.from_config,
        "to": change.to_config,
        "at": change.at,
        "slices": [comparison_row(row, SLICE_KEY, BEFORE_AFTER) for row in change.slices],
        "models": {
            model.rollup.key[0]: model_comparison(model, SLICE_KEY, BEFORE_AFTER)
            for model in change.models
        },
        "tpot": change.tpot,
    }


SLICE_KEY = ("model", "ctx_bucket", "task")
BEFORE_AFTER = ("before", "after")
