"""The `specwatch bench` flags: kept apart from the command so `specwatch --help` stays quick."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specwatch.cli.flags import Help


def add_parser(commands: Any) -> None:
    bench = commands.add_parser(
        "bench",
        help="benchmark baseline against speculation: latency, acceptance, speedup, report",
        description="Benchmark baseline against speculation.\n\n"
        "Sends one workload (a built-in mix of tasks and prompt lengths, or a ShareGPT file)\n"
        "to each target and writes a report (latency, throughput, acceptance by context\n"
        "length, speedup with intervals, plots) under --out. --sweep-k starts the vLLM\n"
        "command after -- without speculation and with each K in turn.",
        formatter_class=Help,
        usage="specwatch bench (--url URL | --baseline URL --spec URL | --sweep-k 3,5,7 -- "
        "VLLM_COMMAND) [options]",
    )
    targets = bench.add_argument_group("targets (one of)")
    targets.add_argument("--url", help="one OpenAI-compatible endpoint: figures, no comparison")
    targets.add_argument("--baseline", help="the endpoint without speculation")
    targets.add_argument(
        "--spec",
        action="append",
        default=[],
        metavar="[NAME=]URL",
        help="an endpoint with speculation (repeatable)",
    )
    targets.add_argument(
        "--sweep-k",
        help="start the vLLM command after -- without speculation and with each K, in turn",
    )
    work = bench.add_argument_group("workload")
    work.add_argument("--requests", type=int, default=1000, help="requests per target (1000)")
    work.add_argument("--dataset", type=Path, help="ShareGPT-format JSON (default: built-in mix)")
    work.add_argument("--seed", type=int, default=0, help="workload seed (0)")
    work.add_argument("--max-tokens", type=int, default=128, help="output tokens (128)")
    work.add_argument(
        "--temperature", type=float, default=0.0, help="sampling temperature (0: greedy)"
    )
    work.add_argument("--sampling-seed", type=int, help="request `seed`, for temperature > 0")
    work.add_argument("--min-prompt-words", type=int, default=16, help="built-in mix (16)")
    work.add_argument("--max-prompt-words", type=int, default=6000, help="built-in mix (6000)")
    work.add_argument(
        "--warmup", type=int, default=-1, help="unmeasured requests per target first (concurrency)"
    )
    work.add_argument("--model", help="model name to request (default: what the server lists)")
    load = bench.add_argument_group("load")
    load.add_argument("--concurrency", type=int, default=8, help="requests in flight (8)")
    load.add_argument(
        "--sweep-concurrency",
        metavar="1,4,16",
        help="measure every target at each concurrency: the speedup surface K x concurrency, "
        "a heatmap, and the num_speculative_tokens_per_batch_size table it recommends",
    )
    load.add_argument("--rate", type=float, help="requests/s, Poisson arrivals (open loop)")
    load.add_argument("--block", type=int, default=0, help="interleaving block (4 x concurrency)")
    load.add_argument("--timeout", type=float, default=600.0, help="per request, seconds (600)")
    load.add_argument(
        "--ready-timeout", type=float, default=600.0, help="sweep: seconds for vLLM to start"
    )
    quality = bench.add_argument_group("quality: is speculation lossless here? (needs a baseline)")
    quality.add_argument(
        "--quality-temperature",
        type=float,
        help="also sample prompts at this temperature from each side and test the distributions",
    )
    quality.add_argument("--quality-prompts", type=int, default=16, help="prompts sampled (16)")
    quality.add_argument("--quality-samples", type=int, default=8, help="samples per side (8)")
    quality.add_argument("--quality-permutations", type=int, default=999, help="(999)")
    quality.add_argument("--quality-alpha", type=float, default=0.01, help="test level (0.01)")
    quality.add_argument(
        "--no-token-ids", action="store_true", help="do not ask for token ids (compare text)"
    )
    costs = bench.add_argument_group("cost")
    costs.add_argument(
        "--price-per-hour",
        action="append",
        default=[],
        metavar="[TARGET=]PRICE",
        help="accelerator price per hour, for every target or one (repeatable)",
    )
    costs.add_argument("--accelerators", type=int, default=1, help="per replica (1)")
    out = bench.add_argument_group("report")
    out.add_argument(
        "--out", type=Path, default=Path("bench-report"), metavar="DIR", help="report folder"
    )
    out.add_argument("--confidence", type=float, default=0.95, help="interval level (0.95)")
    out.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples (2000)")
    out.add_argument(
        "--ctx-buckets",
        help="ctx bucket upper bounds in tokens, comma-separated (default: the settings')",
    )
    out.add_argument("--config", type=Path, help="YAML settings (ctx buckets, tasks)")
    out.add_argument("--no-progress", action="store_true", help="no progress bar")
    out.add_argument(
        "--render",
        type=Path,
        metavar="RESULTS_JSON",
        help="only re-render report.md and the plots into --out from a results.json",
    )
