"""The losslessness checks on synthetic outputs: identity, and the permutation test's level and
power (identical distributions flagged at about the nominal rate, a shifted one nearly always)."""

from __future__ import annotations

import numpy as np
from specwatch.bench.client import Sample
from specwatch.bench.quality import (
    chrf_similarity,
    distribution_test,
    greedy_identity,
)
from specwatch.proxy.shadow import first_divergence

WORDS = [f"w{i}" for i in range(30)]


def overlap(a: str, b: str) -> float:
    """A cheap similarity for the many-seed runs: shared words over all words (multiset)."""
    x, y = a.split(), b.split()
    common = sum(min(x.count(w), y.count(w)) for w in set(x))
    return 2 * common / (len(x) + len(y))


def outputs(rng: np.random.Generator, probs: np.ndarray, n: int, length: int = 40) -> list[str]:
    return [" ".join(rng.choice(WORDS, size=length, p=probs)) for _ in range(n)]


def groups(
    rng: np.random.Generator, shift: float, prompts: int = 6, samples: int = 5
) -> list[tuple[list[str], list[str]]]:
    out = []
    for _ in range(prompts):
        target = rng.dirichlet(np.full(len(WORDS), 0.3))
        other = rng.dirichlet(np.full(len(WORDS), 0.3))
        spec = (1 - shift) * target + shift * other
        out.append((outputs(rng, target, samples), outputs(rng, spec, samples)))
    return out


def test_identical_distributions_are_flagged_at_about_the_nominal_rate() -> None:
    rng = np.random.default_rng(11)
    runs, alpha = 400, 0.05
    flagged = 0
    for seed in range(runs):
        result = distribution_test(groups(rng, 0.0), overlap, permutations=199, seed=seed)
        assert result is not None
        flagged += result.p_value < alpha
    rate = flagged / runs
    # A permutation test is exact up to ties (which make it a little conservative):
    # 0.05 +- 3.5 standard errors of 400 runs.
    assert 0.012 <= rate <= 0.088, rate


def test_a_shifted_distribution_is_flagged() -> None:
    rng = np.random.default_rng(12)
    flagged = sum(
        distribution_test(groups(rng, 0.4), overlap, permutations=199, seed=seed).p_value < 0.05  # type: ignore[union-attr]
        for seed in range(50)
    )
    assert flagged >= 45, flagged


def test_chrf_kernel_separates_a_shift_and_not_a_resample() -> None:
    rng = np.random.default_rng(13)
    chrf = chrf_similarity()
    same = distribution_test(groups(rng, 0.0, prompts=4), chrf, permutations=199, seed=1)
    shifted = distribution_test(groups(rng, 0.6, prompts=4), chrf, permutations=199, seed=1)
    assert same is not None
    assert shifted is not None
    assert same.p_value > 0.05
    assert shifted.p_value < 0.01
    assert shifted.between < shifted.within
    assert 1.0 == chrf("a b c", "a b c")
    assert chrf("the cat sat", "a dog ran") < 0.3


def test_first_divergence() -> None:
    assert first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert 1 == first_divergence([1, 2, 3], [1, 5, 3])
    assert 2 == first_divergence([1, 2], [1, 2, 3])
    assert 0 == first_divergence("abc", "xbc")


def sample(index: int, text: str, ids: list[int] | None) -> Sample:
    return Sample(index=index, target="", ok=True, text=text, token_ids=ids)


def test_greedy_identity_by_token_ids_else_text() -> None:
    base = [sample(i, f"out {i}", [i, 1, 2]) for i in range(10)]
    spec = [sample(i, f"out {i}", [i, 1, 2]) for i in range(10)]
    spec[3] = sample(3, "out 3 but different", [3, 1, 9])
    spec[7].ok = False
    result = greedy_identity(base, spec)
    assert result is not None
    assert (9, 8, "token ids", True) == (
        result["compared"],
        result["identical"],
        result["by"],
        result["flagged"],
    )
    assert {"min": 2, "median": 2.0, "max": 2} == result["first_divergence"]
    assert 3 == result["examples"][0]["index"]
    spec[3] = sample(3, "out 3", None)  # no ids from one side: compare text
    result = greedy_identity(base, spec)
    assert result is not None
    assert ("text", 1.0, False) == (result["by"], result["share"], result["flagged"])
