"""`specwatch bench --sweep-concurrency 1,4,16`: the speedup surface K x concurrency.

Every target (the baseline and each speculative one, or each K of `--sweep-k`) is measured at
each concurrency in turn, the same requests at every level, so each (target, concurrency) has
a paired speedup over the baseline at that concurrency, with its interval (bench/results.py).
Concurrency stands in for vLLM's batch size: with c requests in flight and nothing else on the
server, the batch holds about c.

The recommended table is what vLLM's `num_speculative_tokens_per_batch_size` takes: level
c_i covers batch sizes (c_{i-1}, c_i] (the first from 1), with the K of the target whose
end-to-end speedup is highest there, or 0 where even the best is below 1 (the point estimate
decides, as in `specwatch advise`; the interval is reported); neighbours with the same K
merge. vLLM carries the last range's K past it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specwatch.bench.sweep import SweepError


def parse_levels(text: str) -> list[int]:
    try:
        levels = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SweepError(
            f"--sweep-concurrency takes whole numbers like 1,4,16, not {text!r}"
        ) from None
    if not levels or min(levels) < 1 or len(set(levels)) != len(levels):
        raise SweepError(f"--sweep-concurrency needs distinct values >= 1, got {text!r}")
    return sorted(levels)


def surface(levels: Sequence[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
    """One cell per (concurrency, speculative target): its K and paired speedups, from each
    level's verdict (report.verdict)."""
    cells = []
    for concurrency, verdict in levels:
        for target in verdict["targets"]:
            cells.append(
                {
                    "concurrency": concurrency,
                    "target": target["target"],
                    "k": target["k"],
                    "e2e": target["e2e"],
                    "tpot": target["tpot"],
                }
            )
    return cells


def recommend(cells: Sequence[dict[str, Any]], levels: Sequence[int]) -> dict[str, Any]:
    """The K table from the surface: per level the best target's K, or 0 below 1 (or
    without any comparison at that level)."""
    ranges: list[dict[str, Any]] = []
    first = 1
    for level in levels:
        here = [c for c in cells if c["concurrency"] == level and c["e2e"] and c["k"] > 0]
        best = max(here, key=lambda c: c["e2e"]["estimate"], default=None)
        if best is None:
            k, evidence = 0, None
        else:
            k = best["k"] if best["e2e"]["estimate"] >= 1.0 else 0
            evidence = {"target": best["target"], **best["e2e"]}
        ranges.append({"first": first, "last": level, "k": k, "best": evidence})
        first = level + 1
    schedule: list[list[int]] = []
    for row in ranges:
        if schedule and schedule[-1][2] == row["k"]:
            schedule[-1][1] = row["last"]
        else:
            schedule.append([row["first"], row["last"], row["k"]])
    return {"ranges": ranges, "num_speculative_tokens_per_batch_size": schedule}


def markdown(sweep: dict[str, Any], confidence: float) -> list[str]:
    """The report's section: the surface as a table (rows K, columns concurrency), and the
    table to give vLLM."""
    cells = sweep["surface"]
    levels = sweep["concurrency"]
    targets = sorted({(c["k"], c["target"]) for c in cells})
    lines = [
        "",
        "## Speedup by concurrency and K",
        "",
        f"End-to-end speedup over the baseline at the same concurrency, paired by request, "
        f"with its {confidence:.0%} interval ([plot](speedup_surface.png)).",
        "",
        "| target | K | " + " | ".join(f"concurrency {c}" for c in levels) + " |",
        "|---|---:|" + "---:|" * len(levels),
    ]
    for k, name in targets:
        row = []
        for level in levels:
            cell = next(
                (c for c in cells if (c["target"], c["concurrency"]) == (name, level)), None
            )
            row.append(_figure(cell["e2e"] if cell else None))
        lines.append(f"| {name} | {k} | " + " | ".join(row) + " |")
    table = sweep["recommended"]["num_speculative_tokens_per_batch_size"]
    lines += [
        "",
        "Recommended for vLLM (`--speculative-config`, batch sizes as concurrency; K = 0: no "
        "drafting there):",
        "",
        "```",
        f'"num_speculative_tokens_per_batch_size": {table}',
        "```",
    ]
    return lines


def _figure(figure: dict[str, Any] | None) -> str:
    if not figure:
        return "—"
    if figure["low"] is None:
        return f"{figure['estimate']:.2f}x"
    return f"{figure['estimate']:.2f}x [{figure['low']:.2f}, {figure['high']:.2f}]"
