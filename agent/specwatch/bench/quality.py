"""Is speculation lossless on this server? Two checks on benchmark outputs.

Greedy identity (temperature 0): with the correct acceptance rule, speculative decoding returns
exactly the target model's greedy output. Each request's output from the speculative target is
compared with the baseline's, token by token where the server returned token ids, else by
text. Anything below 100% identical is a correctness problem of the server, not noise.

Distribution (temperature > 0): for each prompt, S samples from the baseline and S from the
speculative target (distinct seeds). Under losslessness all 2S outputs come from one
distribution, so the labels are exchangeable within a prompt. The statistic is a kernel
two-sample (MMD-style) contrast with chrF (sacrebleu) as the similarity:

    T = mean over prompts of [ mean similarity within groups - mean similarity between groups ]

T is near 0 when both sides sample alike and grows when the speculative outputs differ (they
resemble each other, or nothing, more than they resemble the baseline's). The p-value is exact
by permutation: labels are shuffled within each prompt, P(T_perm >= T_observed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from specwatch.bench.client import Sample
from specwatch.proxy.shadow import first_divergence

Similarity = Callable[[str, str], float]


def chrf_similarity() -> Similarity:
    """Symmetric chrF in [0, 1] (sacrebleu's sentence chrF averaged over both directions)."""
    from sacrebleu.metrics.chrf import CHRF

    metric = CHRF()

    def similarity(a: str, b: str) -> float:
        if not a and not b:
            return 1.0
        one = metric.sentence_score(a, [b]).score
        two = metric.sentence_score(b, [a]).score
        return float(one + two) / 200.0

    return similarity


def _snippet(text: str, at: int, width: int = 40) -> str:
    start = max(0, at - width // 2)
    return ("…" if start else "") + text[start : start + width] + "…"


def greedy_identity(
    baseline: Sequence[Sample], spec: Sequence[Sample], examples: int = 3
) -> dict[str, Any] | None:
    """Share of identical outputs over the requests both answered; None without pairs."""
    by_index = {s.index: s for s in baseline if s.ok}
    pairs = [(by_index[s.index], s) for s in spec if s.ok and s.index in by_index]
    if not pairs:
        return None
    use_ids = all(b.token_ids is not None and s.token_ids is not None for b, s in pairs)
    divergences: list[tuple[int, int, Sample, Sample]] = []
    for b, s in pairs:
        if use_ids:
            at = first_divergence(b.token_ids or [], s.token_ids or [])
        else:
            at = first_divergence(b.text, s.text)
        if at is not None:
            divergences.append((b.index, at, b, s))
    identical = len(pairs) - len(divergences)
    positions = [at for _, at, _, _ in divergences]
    shown = []
    for index, at, b, s in divergences[:examples]:
        char = first_divergence(b.text, s.text)
        char = 0 if char is None else char
        shown.append(
            {
                "index": index,
                "position": at,
                "baseline": _snippet(b.text, char),
                "spec": _snippet(s.text, char),
            }
        )
    return {
        "compared": len(pairs),
        "identical": identical,
        "share": identical / len(pairs),
        "by": "token ids" if use_ids else "text",
        "flagged": identical < len(pairs),
        "first_divergence": {
            "min": min(positions),
            "median": float(np.median(positions)),
            "max": max(positions),
        }
        if positions
        else None,
        "examples": shown,
    }


@dataclass(frozen=True, slots=True)
class DistributionResult:
    statistic: float
    p_value: float
    within: float  # mean similarity of outputs from the same side
    between: float  # mean similarity of a baseline output and a speculative one
    prompts: int
    samples: int  # per side and prompt
    permutations: int

    def verdict(self, alpha: float) -> str:
        if self.p_value < alpha:
            return (
                f"differs (p = {self.p_value:.4f} < {alpha}): speculative outputs are not "
                "distributed like the baseline's — a correctness problem of the server"
            )
        return (
            f"no detectable difference (p = {self.p_value:.3f}): consistent with lossless "
            "speculation at this sample size"
        )


def _contrast(matrix: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """mean within - mean between, for every row of `labels` (permutations x 2S booleans)."""
    same = labels[:, :, None] == labels[:, None, :]
    upper = np.triu(np.ones(matrix.shape, dtype=bool), 1)
    within_mask = same & upper
    between_mask = ~same & upper
    values = matrix[None, :, :]
    within = (values * within_mask).sum((1, 2)) / within_mask.sum((1, 2))
    between = (values * between_mask).sum((1, 2)) / between_mask.sum((1, 2))
    result: np.ndarray = within - between
    return result


def distribution_test(
    groups: Sequence[tuple[Sequence[str], Sequence[str]]],
    similarity: Similarity,
    permutations: int = 999,
    seed: int = 0,
) -> DistributionResult | None:
    """`groups`: per prompt, (baseline outputs, speculative outputs), S >= 2 of each."""
    usable = [(list(b), list(s)) for b, s in groups if len(b) >= 2 and len(b) == len(s)]
    if not usable:
        return None
    rng = np.random.default_rng(seed)
    observed = np.zeros(1)
    permuted = np.zeros(permutations)
    within_total = between_total = 0.0
    for base, spec in usable:
        outputs = base + spec
        n = len(outputs)
        matrix = np.eye(n)
        for i in range(n):
            for j in range(i + 1, n):
                matrix[i, j] = matrix[j, i] = similarity(outputs[i], outputs[j])
        labels = np.array([0] * len(base) + [1] * len(spec))
        actual = _contrast(matrix, labels[None, :])
        observed += actual
        shuffled = np.array([rng.permutation(labels) for _ in range(permutations)])
        permuted += _contrast(matrix, shuffled)
        upper = np.triu(np.ones((n, n), dtype=bool), 1)
        same = labels[:, None] == labels[None, :]
        within_total += float(matrix[same & upper].mean())
        between_total += float(matrix[~same & upper].mean())
    k = len(usable)
    statistic = float(observed[0]) / k
    exceed = int(np.sum(permuted / k >= statistic - 1e-12))
    return DistributionResult(
        statistic=statistic,
        p_value=(1 + exceed) / (1 + permutations),
        within=within_total / k,
        between=between_total / k,
        prompts=k,
        samples=len(usable[0][0]),
        permutations=permutations,
    )
