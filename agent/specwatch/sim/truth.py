"""Traffic whose acceptance truth is known: for measuring verdicts (benchmarks, black-box tests).

Each request draws its own acceptance alpha_i from a Beta around the slice's mean (real requests
differ: see sim/acceptance.py), then each of its steps drafts K tokens and accepts them in turn
with probability alpha_i, stopping at the first rejection. The truth a slice's alpha-hat
estimates is the ratio estimator's large-sample limit, E[accepted per step] / E[trials per step]
over requests, which is not the Beta's mean: `ratio_truth` gives it from the Beta's moments
exactly, and `mean_for` the Beta mean whose limit is a given truth.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from specwatch import conventions as C
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.store.cyclelog import to_line

# one prompt length per default ctx bucket; none of these requests crosses into the next one
PROMPTS = (200, 1000, 3000, 6000, 10000, 40000)


def _beta_moments(mean: float, sd: float, k: int) -> list[float]:
    """E[alpha^i] for i = 0..k, alpha ~ Beta with this mean and sd (sd 0: a point mass)."""
    if sd <= 0:
        return [mean**i for i in range(k + 1)]
    shape = mean * (1.0 - mean) / sd**2 - 1.0
    a, b = mean * shape, (1.0 - mean) * shape
    moments = [1.0]
    for j in range(k):
        moments.append(moments[-1] * (a + j) / (a + b + j))
    return moments


def ratio_truth(mean: float, sd: float, k: int) -> float:
    """The limit of sum(accepted) / sum(trials): per step E[accepted | alpha] = sum of alpha^i
    for i = 1..K, E[trials | alpha] = sum of alpha^i for i = 0..K-1 (the rejected one counts)."""
    moments = _beta_moments(mean, sd, k)
    return sum(moments[1:]) / sum(moments[:-1])


def mean_for(truth: float, sd: float, k: int) -> float:
    """The Beta mean whose ratio truth is `truth` (bisection: the truth rises with the mean)."""
    low, high = 1e-6, 1.0 - 1e-6
    for _ in range(60):
        mid = (low + high) / 2.0
        if ratio_truth(mid, sd, k) < truth:
            low = mid
        else:
            high = mid
    return (low + high) / 2.0


def beta_draw(rng: random.Random, mean: float, sd: float) -> float:
    if sd <= 0:
        return mean
    shape = mean * (1.0 - mean) / sd**2 - 1.0
    return rng.betavariate(mean * shape, (1.0 - mean) * shape)


def accepted_steps(rng: random.Random, alpha: float, steps: int, k: int) -> list[int]:
    """Tokens accepted per step: positions accepted in turn with `alpha` (P(a >= i) = alpha^i)."""
    if alpha >= 1.0:
        return [k] * steps
    if alpha <= 0.0:
        return [0] * steps
    log_alpha = math.log(alpha)
    return [min(k, int(math.log(1.0 - rng.random()) / log_alpha)) for _ in range(steps)]


def slice_traffic(
    rng: random.Random,
    *,
    model: str,
    task: str,
    prompt_tokens: int,
    truth: Callable[[float], float],
    sd: float,
    per_hour: float,
    start: float,
    seconds: float,
    k: int = 4,
    steps: tuple[int, int] = (25, 50),
) -> Iterator[RequestRecord]:
    """One slice's requests over `seconds` from `start`, arriving as a Poisson process of
    `per_hour`, each of `steps` speculative steps (uniform, inclusive); `truth(t)` is the
    slice's ratio truth at t seconds from the start (a constant, or a change)."""
    t, i = 0.0, 0
    means: dict[float, float] = {}
    while True:
        t += rng.expovariate(per_hour / 3600.0)
        if t >= seconds:
            return
        target = truth(t)
        mean = means.get(target)
        if mean is None:
            mean = means[target] = mean_for(target, sd, k)
        accepted = accepted_steps(rng, beta_draw(rng, mean, sd), rng.randint(*steps), k)
        i += 1
        yield RequestRecord(
            ts=start + t,
            request_id=f"{model}-{task}-{prompt_tokens}-{i}",
            model=model,
            task=task,
            outcome=C.Outcome.OBSERVED,
            prompt_tokens=prompt_tokens,
            completion_tokens=sum(accepted) + len(accepted),
            spec=SpecDecodeBlock(k, (k,) * len(accepted), tuple(accepted)),
            latency=Latency(tpot=0.02),
        )


def write_log(
    path: Path,
    truth: Callable[[float], float],
    *,
    models: Iterable[str],
    tasks: Iterable[str],
    prompts: Iterable[int] = PROMPTS,
    per_hour: float = 480.0,
    sd: float = 0.08,
    start: float = 1.8e9,
    seconds: float = 3600.0,
    seed: int = 1,
    steps: tuple[int, int] = (25, 50),
) -> None:
    """A cycle log of every (model, prompt's ctx bucket, task) slice's traffic, in time order;
    each request of `steps` speculative steps (uniform, inclusive)."""
    rng = random.Random(seed)
    records = [
        record
        for model in models
        for prompt in prompts
        for task in tasks
        for record in slice_traffic(
            rng,
            model=model,
            task=task,
            prompt_tokens=prompt,
            truth=truth,
            sd=sd,
            per_hour=per_hour,
            start=start,
            seconds=seconds,
            steps=steps,
        )
    ]
    records.sort(key=lambda r: r.ts)
    path.write_bytes(b"".join(map(to_line, records)))


def verdicts(document: dict[str, Any], events: Iterable[dict[str, Any]]) -> dict[str, float]:
    """From `replay --json`'s document and its `zone_changed` events (finer slices only): the
    share of slices ever green / ever red, green / red at the end, and verdict changes (between
    green, yellow and red) per slice."""
    ever: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
    changes = 0
    judged = {C.Zone.GREEN, C.Zone.YELLOW, C.Zone.RED}
    for event in events:
        if event.get("event") != "zone_changed" or event.get("ctx_bucket") == C.ALL:
            continue
        ever[event["zone"]].add((event["model"], event["ctx_bucket"], event["task"]))
        changes += event["previous"] in judged and event["zone"] in judged
    final = [row["zone"] for row in document["slices"]]
    n = len(final)
    return {
        "slices": n,
        "ever_green": len(ever[C.Zone.GREEN]) / n,
        "ever_red": len(ever[C.Zone.RED]) / n,
        "end_green": final.count(C.Zone.GREEN) / n,
        "end_red": final.count(C.Zone.RED) / n,
        "changes": changes / n,
    }
