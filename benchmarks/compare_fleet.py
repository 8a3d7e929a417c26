"""How often `specwatch compare` finds a drop and how often it calls equal configs different, on
overdispersed requests like real traffic, through the command's own path: cycle logs written
to disk, aggregated by DuckDB (fleet analysis), compared by analysis/compare/alpha.py.

Per run two sets of cycle logs, A and B, of one model with 8 slices (tasks), 120 requests a
side per slice, 25-50 steps at K = 4 each, each request's acceptance drawn around its slice's
truth with a per-request sd of 0.08 (benchmarks/compare_verdicts.py's requests, step by step).
Equal runs: A and B at 0.70. Drop runs: B 0.06 lower in every slice. Printed: the share of
equal runs with any slice `worse` or `better` (the family-wise false alarm), and the share of
dropped slices called `worse`.

    .venv/bin/python benchmarks/compare_fleet.py [--runs 200] [--seed 1]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson
from specwatch.analysis.compare.alpha import BETTER, WORSE, compare_models
from specwatch.analysis.counting.slicing import CtxBuckets, LoadBuckets
from specwatch.analysis.counting.sums import Sums
from specwatch.fleet.engine import Engine
from specwatch.fleet.groups import read_rows
from specwatch.fleet.source import find
from specwatch.settings import load_settings
from specwatch.sim.truth import mean_for

K, SD, SLICES, REQUESTS = 4, 0.08, 8, 120


def write_side(rng: np.random.Generator, path: Path, truth: float) -> None:
    """One side's cycle log: REQUESTS requests per slice at `truth` (accepted over trials)."""
    mean = mean_for(truth, SD, K)
    shape = mean * (1 - mean) / SD**2 - 1
    lines = []
    for task in range(SLICES):
        alphas = rng.beta(mean * shape, (1 - mean) * shape, REQUESTS)
        for i, alpha in enumerate(alphas):
            steps = int(rng.integers(25, 51))
            u = 1.0 - rng.random(steps)
            accepted = np.minimum(K, np.floor(np.log(u) / np.log(alpha))).astype(int).tolist()
            record = {
                "v": 1, "ts": 1.7e9 + i, "request_id": f"{task}-{i}", "model": "m",
                "task": f"t{task}", "prompt_tokens": 100, "completion_tokens": 200,
                "num_spec_tokens": K, "per_step_drafted": [K] * steps,
                "per_step_accepted": accepted, "ttft_ms": None, "tpot_ms": None, "e2e_ms": None,
            }  # fmt: skip
            lines.append(orjson.dumps(record))
    path.write_bytes(b"\n".join(lines) + b"\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    settings = load_settings()
    cfg, zones = settings.canary, settings.zones
    engine = Engine(1, "1GB", None)
    ctx, load = CtxBuckets(settings.ctx_buckets), LoadBuckets([1])
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()

    def sides(directory: Path, truth_b: float) -> list[str]:
        write_side(rng, directory / "a.jsonl", 0.70)
        write_side(rng, directory / "b.jsonl", truth_b)
        out: dict[bool, list[dict[tuple[str, ...], Sums]]] = {False: [], True: []}
        for name in ("a.jsonl", "b.jsonl"):
            files = find([str(directory / name)])
            for rollup, dims in ((False, ("model", "task")), (True, ("model",))):
                rows = engine.aggregate(files, dims, settings.ctx_buckets, [1])
                groups, _ = read_rows(rows, dims, ctx, load, 16, cfg.confidence)
                out[rollup].append({g.key: Sums.of(g.counts, "alpha") for g in groups})
        pairs = {
            rollup: [(key, a[key], b[key]) for key in sorted(a)] for rollup, (a, b) in out.items()
        }
        slices, _ = compare_models(
            pairs[True], pairs[False], cfg.confidence, cfg.margin, zones.min_trials, 30
        )
        return [row.verdict for row in slices]

    alarms = found = dropped = 0
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(args.runs):
            verdicts = sides(Path(scratch), 0.70)
            alarms += any(v in (WORSE, BETTER) for v in verdicts)
            verdicts = sides(Path(scratch), 0.64)
            found += sum(v == WORSE for v in verdicts)
            dropped += len(verdicts)
    print(
        f"{args.runs} runs of {SLICES} slices, {REQUESTS} requests a side per slice "
        f"({time.perf_counter() - started:.0f} s):"
    )
    print(f"  equal configs (0.70 both) called different in any slice: {alarms / args.runs:.1%}")
    print(f"  a 0.06 drop (0.70 -> 0.64) found (`worse`): {found / dropped:.1%} of slices")


if __name__ == "__main__":
    main()
