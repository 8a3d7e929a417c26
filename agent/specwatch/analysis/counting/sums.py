"""[compiled] Sums over requests for a ratio and its request-level variance: the one shape of
alpha-hat's evidence (accepted over trials), the rate's (accepted over drafted), goodput's (decode
seconds over tokens) and of two configs compared.

A ratio sum(x) / sum(y) over requests whose own x_i and y_i vary more than a binomial allows
needs the number of requests and the sums of x_i, y_i, x_i^2, x_i y_i and y_i^2: the
cluster-robust variance (analysis/counting/stats.robust_variance) expands into exactly these. Where
it is read (evidence, comparisons) a Sums is a value; where it is gathered (windows, goodput) it
is added to in place, one request or one bucket at a time.
"""

from __future__ import annotations

from collections.abc import Iterator

from specwatch.analysis.counting.counts import Counts

# A count's sums stay ints (exact, and written as `70` to the state file and the logs), a
# time's are floats. Spelled as a union, not `float` (which admits ints too): compiled by
# mypyc, `float` is a C double and would turn every count into one.
Number = int | float


class Sums:
    __slots__ = ("requests", "x", "xx", "xy", "y", "yy")

    def __init__(
        self,
        requests: int = 0,
        x: Number = 0,
        y: Number = 0,
        xx: Number = 0,
        xy: Number = 0,
        yy: Number = 0,
    ) -> None:
        self.requests = requests
        self.x, self.y, self.xx, self.xy, self.yy = x, y, xx, xy, yy

    @classmethod
    def of(cls, counts: Counts, metric: str) -> Sums:
        """A slice's sums for alpha-hat (`alpha`: accepted over trials) or the rate (accepted
        over drafted)."""
        c = counts
        if metric == "alpha":
            return cls(c.requests, c.accepted, c.trials, c.aa, c.at, c.tt)
        return cls(c.requests, c.accepted, c.drafted, c.aa, c.ad, c.dd)

    def add(self, x: Number, y: Number) -> None:
        """One more request with its own x and y."""
        self.requests += 1
        self.x += x
        self.y += y
        self.xx += x * x
        self.xy += x * y
        self.yy += y * y

    def merge(self, other: Sums) -> None:
        self.requests += other.requests
        self.x += other.x
        self.y += other.y
        self.xx += other.xx
        self.xy += other.xy
        self.yy += other.yy

    def copy(self) -> Sums:
        return Sums(self.requests, self.x, self.y, self.xx, self.xy, self.yy)

    def plus(self, other: Sums) -> Sums:
        out = self.copy()
        out.merge(other)
        return out

    def minus(self, other: Sums) -> Sums:
        """What this holds beyond `other` (windows ending at the same time nest)."""
        return Sums(
            self.requests - other.requests,
            self.x - other.x,
            self.y - other.y,
            self.xx - other.xx,
            self.xy - other.xy,
            self.yy - other.yy,
        )

    def negative(self) -> bool:
        """Any sum below zero: a late record a shorter window took and a longer one no
        longer holds."""
        return min(self.requests, self.x, self.y, self.xx, self.xy, self.yy) < 0

    def __iter__(self) -> Iterator[Number]:
        """requests, x, y, xx, xy, yy: the order the state file and robust_variance take."""
        return iter((self.requests, self.x, self.y, self.xx, self.xy, self.yy))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sums) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]  # mutable where it is gathered

    def __repr__(self) -> str:
        return f"Sums{tuple(self)!r}"


class DecodeSums(Sums):
    """A goodput cell's sums: decode seconds (x) over decode tokens (y) per request, and

    - the load moments that compare two configs at the same load (analysis/compare/goodput.py),
      b being a request's load (requests in flight at the upstream as it started): the sums of
      y b, x b, y b^2 (the tokens-weighted regression of a request's time per token on its
      load) and y^2 b, y^2 b^2 (that slope's variance);
    - the engine steps s of its decode and the sums s^2, x s, y s: TPOT = (x / s) / (y / s),
      the step's time over the tokens a step yields, each factor with its variance.

    Kept as floats: loads times seconds."""

    __slots__ = ("ss", "steps", "xb", "xs", "yb", "ybb", "ys", "yyb", "yybb")

    def __init__(
        self,
        requests: int = 0,
        x: Number = 0,
        y: Number = 0,
        xx: Number = 0,
        xy: Number = 0,
        yy: Number = 0,
        yb: float = 0.0,
        xb: float = 0.0,
        ybb: float = 0.0,
        yyb: float = 0.0,
        yybb: float = 0.0,
        steps: float = 0.0,
        ss: float = 0.0,
        xs: float = 0.0,
        ys: float = 0.0,
    ) -> None:
        super().__init__(requests, x, y, xx, xy, yy)
        self.yb, self.xb, self.ybb, self.yyb, self.yybb = yb, xb, ybb, yyb, yybb
        self.steps, self.ss, self.xs, self.ys = steps, ss, xs, ys

    def add_request(self, x: float, y: float, load: float | None, steps: float) -> None:
        """One more request: its decode seconds, tokens, load (None: not recorded) and
        engine steps."""
        self.add(x, y)
        if load is not None:
            yb = y * load
            self.yb += yb
            self.xb += x * load
            self.ybb += yb * load
            self.yyb += y * yb
            self.yybb += yb * yb
        self.steps += steps
        self.ss += steps * steps
        self.xs += x * steps
        self.ys += y * steps

    def merge(self, other: Sums) -> None:
        super().merge(other)
        if isinstance(other, DecodeSums):
            self.yb += other.yb
            self.xb += other.xb
            self.ybb += other.ybb
            self.yyb += other.yyb
            self.yybb += other.yybb
            self.steps += other.steps
            self.ss += other.ss
            self.xs += other.xs
            self.ys += other.ys

    def copy(self) -> DecodeSums:
        out = DecodeSums()
        out.merge(self)  # every sum from 0: exact, and a count stays an int
        return out

    def step_time(self) -> Sums:
        """Decode seconds over engine steps, per request: the step's time."""
        return Sums(self.requests, self.x, self.steps, self.xx, self.xs, self.ss)

    def tokens_per_step(self) -> Sums:
        """Decode tokens over engine steps, per request: what a step yields."""
        return Sums(self.requests, self.y, self.steps, self.yy, self.ys, self.ss)

    def decode_fields(self) -> tuple[Number, ...]:
        """requests, x, y, xx, xy, yy, yb, xb, ybb, yyb, yybb, steps, ss, xs, ys."""
        return (
            *self,
            self.yb,
            self.xb,
            self.ybb,
            self.yyb,
            self.yybb,
            self.steps,
            self.ss,
            self.xs,
            self.ys,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DecodeSums) and self.decode_fields() == other.decode_fields()

    __hash__ = None

    def __repr__(self) -> str:
        return f"DecodeSums{self.decode_fields()!r}"
