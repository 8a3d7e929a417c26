"""What one `specwatch bench` run measures, read from its arguments and checked before anything
starts: the targets (or the K sweep), the requests and warm-up, the load, prices, levels and
the distribution check's plan."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from specwatch.bench.concurrency import parse_levels
from specwatch.bench.results import BASELINE
from specwatch.bench.runner import Load, Target
from specwatch.bench.sweep import command_for_k, parse_ks
from specwatch.bench.workload import BenchRequest, builtin, quality_requests, sharegpt
from specwatch.settings import Settings


class UsageError(Exception):
    pass


def targets_of(args: argparse.Namespace) -> list[Target]:
    given = [bool(args.url), bool(args.baseline or args.spec), bool(args.sweep_k)]
    if sum(given) != 1:
        raise UsageError("give exactly one of --url, --baseline/--spec, --sweep-k")
    if args.url:
        return [Target("target", args.url.rstrip("/"), args.model)]
    if args.baseline or args.spec:
        if not (args.baseline and args.spec):
            raise UsageError("--baseline and --spec go together")
        targets = [Target(BASELINE, args.baseline.rstrip("/"), args.model)]
        for i, given_spec in enumerate(args.spec):
            name, url = _named(given_spec)
            name = name or ("spec" if i == 0 else f"spec{i + 1}")
            if name in {t.name for t in targets}:
                raise UsageError(f"two targets named {name!r}")
            targets.append(Target(name, url.rstrip("/"), args.model))
        return targets
    return []


def _prices(given: list[str]) -> dict[str, float]:
    """`--price-per-hour 2.5` (every target) or `--price-per-hour K=3=2.5` (one target)."""
    out: dict[str, float] = {}
    for item in given:
        name, _, value = item.rpartition("=")
        try:
            price = float(value)
        except ValueError:
            raise UsageError(f"--price-per-hour: not a price: {item!r}") from None
        if price < 0:
            raise UsageError(f"--price-per-hour: negative price: {item!r}")
        out[name or "*"] = price
    return out


def _named(given: str) -> tuple[str, str]:
    """`NAME=URL` or `URL`."""
    name, sep, url = given.partition("=")
    if sep and "://" not in name:
        return name, url
    return "", given


def _workload(args: argparse.Namespace, tasks: Any) -> tuple[list[BenchRequest], str]:
    if args.requests < 1:
        raise UsageError("--requests must be at least 1")
    if args.dataset:
        requests, skipped = sharegpt(
            args.dataset, args.requests, seed=args.seed, max_tokens=args.max_tokens, tasks=tasks
        )
        note = f", {skipped} entries without a prompt skipped" if skipped else ""
        return requests, f"ShareGPT file {args.dataset.name}{note}"
    requests = builtin(
        args.requests,
        seed=args.seed,
        max_tokens=args.max_tokens,
        min_prompt_words=args.min_prompt_words,
        max_prompt_words=args.max_prompt_words,
    )
    words = f"{args.min_prompt_words}-{args.max_prompt_words}"
    return requests, f"built-in mix, seed {args.seed}, prompts {words} words"


def _quality_plan(
    args: argparse.Namespace, requests: list[BenchRequest], has_baseline: bool
) -> Any:
    """Each target's distribution-check requests: the first prompts, seeded samples; the
    baseline's seeds and every other target's do not overlap, so all are independent draws."""
    if args.quality_temperature is None:
        return lambda _name: ()
    if not has_baseline:
        raise UsageError("--quality-temperature needs a baseline (--baseline or --sweep-k)")
    if args.quality_temperature <= 0:
        raise UsageError("--quality-temperature must be above 0 (temperature 0 is checked anyway)")
    if args.quality_samples < 2 or args.quality_prompts < 1:
        raise UsageError("--quality-samples must be at least 2, --quality-prompts at least 1")
    prompts = requests[: args.quality_prompts]
    samples, temperature = args.quality_samples, args.quality_temperature

    def plan(name: str) -> list[BenchRequest]:
        first = 0 if name == BASELINE else samples
        return quality_requests(prompts, samples, temperature, first)

    return plan


@dataclass(frozen=True)
class Plan:
    """What one bench run measures, validated before anything starts."""

    targets: list[Target]
    ks: list[int]  # --sweep-k: one vLLM per K, in a row; else the targets, interleaved
    requests: list[BenchRequest]
    workload: str
    warmup: list[BenchRequest]
    prices: dict[str, float]
    levels: list[int]
    load: Load
    quality_for: Any


def plan_of(args: argparse.Namespace, settings: Settings, vllm_argv: list[str]) -> Plan:
    """The run's plan from its arguments (UsageError, SweepError, DatasetError when wrong)."""
    targets = targets_of(args)
    ks = parse_ks(args.sweep_k) if args.sweep_k else []
    if ks and not vllm_argv:
        raise UsageError("--sweep-k needs the vLLM command after --")
    if ks:
        command_for_k(vllm_argv, ks[0])  # fail now on a command without a spec config
    requests, workload = _workload(args, settings.tasks)
    prices = _prices(args.price_per_hour)
    if args.accelerators < 1:
        raise UsageError("--accelerators must be at least 1")
    quality_for = _quality_plan(args, requests, bool(ks) or bool(args.baseline))
    levels = parse_levels(args.sweep_concurrency) if args.sweep_concurrency else [args.concurrency]
    if args.sweep_concurrency and args.rate:
        raise UsageError("--sweep-concurrency sets the concurrency: not with --rate")
    load = Load(
        concurrency=levels[0],
        rate=args.rate,
        temperature=args.temperature,
        seed=args.sampling_seed,
        timeout=args.timeout,
        block=args.block,
        token_ids=not args.no_token_ids,
    )
    # Warm-up: other prompts from the same mix (a different seed), so no measured request is
    # answered from a cache the warm-up filled.
    count = args.concurrency if args.warmup < 0 else args.warmup
    warmup = builtin(
        count,
        seed=args.seed + 1_000_003,
        max_tokens=args.max_tokens,
        min_prompt_words=args.min_prompt_words,
        max_prompt_words=args.max_prompt_words,
    )
    return Plan(targets, ks, requests, workload, warmup, prices, levels, load, quality_for)
