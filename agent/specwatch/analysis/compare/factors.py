"""[compiled] TPOT's ratio in its two factors: the step's time (decode seconds over engine steps, at
the same load) and the tokens a step yields (decode tokens over engine steps). TPOT = step time /
tokens per step for every request set, so over the same cells, weights and load adjustment (on the
step's time only: load moves what a step costs, not what it yields) the TPOT ratio is the one
factor's ratio over the other's, exactly. Which one decides a verdict is said in words (`slower:
each step costs 9.0% more [+5.0%, +13.0%]; tokens per step unchanged (...)`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from specwatch.analysis.compare.same_load import Pair, Spread
from specwatch.analysis.counting.stats import Interval
from specwatch.analysis.counting.sums import DecodeSums, Sums


def factor_part(sums: Sums, part: str) -> Sums:
    """A cell's step time or tokens per step sums; an empty Sums where steps are unknown."""
    if not isinstance(sums, DecodeSums) or sums.steps <= 0:
        return Sums()
    return sums.step_time() if part == STEP_TIME else sums.tokens_per_step()


STEP_TIME, TOKENS_PER_STEP = "step_time", "tokens_per_step"


@dataclass(frozen=True, slots=True)
class Factors:
    """TPOT's ratio in its two factors, after over before, each with its (family-wise)
    interval: the step's time at the same load, and the tokens a step yields. The TPOT
    ratio is the one over the other, exactly (the same cells, weights and adjustment)."""

    step_time: Interval
    tokens_per_step: Interval
    deciding: tuple[str, ...]  # the factors that moved TPOT the way its verdict says
    said: str  # which one decides, in words

    def as_dict(self) -> dict[str, Any]:
        return {
            STEP_TIME: _interval_dict(self.step_time),
            TOKENS_PER_STEP: _interval_dict(self.tokens_per_step),
            "deciding": list(self.deciding),
            "said": self.said,
        }


def _interval_dict(r: Interval) -> dict[str, float]:
    return {"estimate": r.estimate, "lower": r.lower, "upper": r.upper}


def factor_pairs(
    pairs: list[Pair],
    spread: tuple[Mapping[tuple[str, ...], Spread], ...],
) -> tuple[list[Pair], list[Pair]] | None:
    """Each pair's step time and tokens per step as pairs of their own (TPOT's weights and
    shift; the shift only on the step: load moves what a step costs, not what it yields);
    None where a side's engine steps are not known."""
    steps, yields = [], []
    for pair in pairs:
        b, a, key = pair.before, pair.after, pair.slice
        if not (isinstance(b, DecodeSums) and isinstance(a, DecodeSums)):
            return None
        if b.steps <= 0 or a.steps <= 0 or not all(key in side for side in spread):
            return None
        cost = (spread[0][key], spread[1][key])
        made = (spread[2][key], spread[3][key])
        steps.append(
            Pair(b.step_time(), a.step_time(), pair.bucket, pair.shift, cost, pair.weight, key)
        )
        yields.append(
            Pair(b.tokens_per_step(), a.tokens_per_step(), pair.bucket, 0.0, made, pair.weight, key)
        )
    return steps, yields


def _percent(ratio: float) -> str:
    return f"{ratio - 1.0:+.1%}"


def _factor_words(name: str, r: Interval, margin: float) -> str:
    """One factor said: moved (its interval off 1), unchanged (within 1 +- margin), or not
    measurably changed."""
    bounds = f"[{_percent(r.lower)}, {_percent(r.upper)}]"
    if name == STEP_TIME:
        if r.lower > 1.0:
            return f"each step costs {r.estimate - 1.0:.1%} more {bounds}"
        if r.upper < 1.0:
            return f"each step costs {1.0 - r.estimate:.1%} less {bounds}"
        what = "each step's cost"
    else:
        if r.upper < 1.0:
            return f"each step yields {1.0 - r.estimate:.1%} fewer tokens {bounds}"
        if r.lower > 1.0:
            return f"each step yields {r.estimate - 1.0:.1%} more tokens {bounds}"
        what = "tokens per step"
    if 1.0 - margin <= r.lower and r.upper <= 1.0 + margin:
        return f"{what} unchanged ({_percent(r.estimate)} {bounds})"
    return f"{what} not measurably changed ({_percent(r.estimate)} {bounds})"


def factors_of(step: Interval, yields: Interval, said_verdict: str, margin: float) -> Factors:
    """Which factor decides a verdict: for `slower`, a step that costs more (its interval
    above 1) or yields fewer tokens (below 1); for `faster`, the opposite; the deciding
    factors said first."""
    moved = {
        STEP_TIME: (step.lower > 1.0, step.upper < 1.0),  # (slower, faster)
        TOKENS_PER_STEP: (yields.upper < 1.0, yields.lower > 1.0),
    }
    way = {"slower": 0, "faster": 1}.get(said_verdict)
    deciding = tuple(
        name for name in (STEP_TIME, TOKENS_PER_STEP) if way is not None and moved[name][way]
    )
    words = {
        STEP_TIME: _factor_words(STEP_TIME, step, margin),
        TOKENS_PER_STEP: _factor_words(TOKENS_PER_STEP, yields, margin),
    }
    if way is not None and not deciding:
        both = f"{words[STEP_TIME]}; {words[TOKENS_PER_STEP]}"
        said = f"{said_verdict}: neither factor alone is clear ({both})"
    else:
        order = [*deciding, *(name for name in words if name not in deciding)]
        said = f"{said_verdict}: " + "; ".join(words[name] for name in order)
    return Factors(step, yields, deciding, said)
