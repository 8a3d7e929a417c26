"""[compiled] Causes read by position (analysis/causes/rules.py assembles them): a step's absolute
position in the context, and the position inside a draft.

Each rule states its minimum evidence here and in docs/causes.md; benchmarks/causes.py
measures its false rate on overdispersed healthy traffic and its detection on traffic that has
the cause.

- `draft_context_limit` (`ContextPositions`): vLLM zero-pads drafts past the drafter's context
  limit and still counts them (vllm-project/vllm#34734). By absolute position (prompt + tokens
  before the step, 64-token bins), the first position from which on acceptance is at most 1%
  over at least 200 drafted tokens of at least 3 requests (in its first bin too), while before
  it acceptance is at least 10% over at least 200 drafted tokens. Since the start, per model.
- `position_cliff`: acceptance at draft position j and later is ~0 while the positions before
  it hold (a drafter whose later positions read no context: DFlash's sliding-window layers run
  as full attention, vLLM#40898). Per slice, since the start: the first position j >= 2 that
  at least `MIN_TRIED` steps reached (the steps that accepted j - 1 and drafted j) and that
  accepted at most `CLIFF_MAX` of them, while position j - 1 accepted at least `HOLD_MIN` of
  the steps that reached it. The slice's ctx bucket says the context it appears in; the
  model's rollup names the shortest such bucket.
  From a context on (`CliffContexts`, per model, since the start, by the absolute position of
  each step in `DEPTH_BIN`-token bins): the first position j >= 2 and the first bin from which
  on j accepts at most `CLIFF_MAX` of `MIN_TRIED` or more steps that reached it, j - 1
  holding at least `HOLD_MIN`, while before that bin j held at least `HOLD_MIN` of as many:
  a cliff that starts inside a bucket (a slice straddling it keeps two thirds of its
  acceptance at j and is not named by its own counts). On the rollup with that context, and
  on each slice whose bucket holds positions past it.
- `later_positions_collapse`: position 1 accepts about as usual while every later position
  accepts far less given the one before (vLLM#51009: ~25% each, accept length 1.46 at K = 5).
  Pooled over requests, healthy data has the opposite shape: a later position is reached by the
  easier stretches, so its conditional acceptance rises with depth (spec-decode-advisor's
  p1 .668 ... p6 .880), which makes the pooled test a cautious one. Per slice, since the start
  (the rollup on its own counts): position 1 tried by at least `MIN_TRIED` steps, and every
  later position that at least `MIN_TRIED` steps surely reached (under variable K, the steps
  that drafted exactly j and accepted all of it are taken out at their most, so the rate is
  an upper bound) accepting at most
  `COLLAPSE_RATIO` of position 1's rate and at least `COLLAPSE_GAP` below it; not where a
  `position_cliff` is found (positions at ~0 from one on are that).
- `first_position_deficit`: position 1 accepts far less than positions 2..K do given their
  predecessors (a hidden-state tap off by one lowers acceptance without zeroing it:
  onnxruntime-genai#2538, sglang#38589). Per model, since the start, request by request: a
  later position is reached more often by the better requests, so pooled over requests the
  later positions accept more even when every request's positions are alike (and a slice
  that mixes steps the draft can serve with steps it cannot, such as those past a context
  limit, shows the same): each request is compared with itself. Of at least
  `DEFICIT_MIN_REQUESTS` requests with `PAIR_MIN_TRIED` steps trying position 1 and as many
  reaching later ones, the mean of their acceptance at position 1 is at most `DEFICIT_RATIO`
  of the mean of their later positions' and at least `DEFICIT_GAP` below it. Not named where
  a context limit is found. On the model rollup and its slices.
"""

from __future__ import annotations

from typing import Any

from specwatch import conventions as C
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.slicing import CtxBuckets
from specwatch.analysis.counting.windows import SlidingWindow
from specwatch.core.records import SliceKey, SpecDecodeBlock

# draft_context_limit
POSITION_BIN = 64
POSITION_BINS = 1024  # 64k tokens; later positions count in the last bin
CLIFF_MIN_DRAFTED = 200
CLIFF_MIN_REQUESTS = 3
CLIFF_AFTER_MAX = 0.01
CLIFF_BEFORE_MIN = 0.10
# position_cliff and first_position_deficit
MIN_TRIED = 200
CLIFF_MAX = 0.01
HOLD_MIN = 0.10
DEFICIT_RATIO = 0.5
DEFICIT_GAP = 0.25
DEFICIT_MIN_REQUESTS = 10
PAIR_MIN_TRIED = 8  # a request's own steps at position 1, and reaching later ones
# later_positions_collapse
COLLAPSE_RATIO = 0.5
COLLAPSE_GAP = 0.25
# position_cliff from a context on
DEPTH_BIN = 256
DEPTH_BINS = 256  # 64k tokens; later positions count in the last bin
DEPTH_POSITIONS = 8  # draft positions 1..8 kept by context
_SIDE = DEPTH_POSITIONS + 1  # drafted and accepted 0..DEPTH_POSITIONS in one key


class ContextPositions:
    """One model's drafted and accepted tokens by the absolute position of their step."""

    __slots__ = ("_cliff", "accepted", "drafted", "reach", "version")

    def __init__(self) -> None:
        self.drafted = [0] * POSITION_BINS
        self.accepted = [0] * POSITION_BINS
        self.reach = [0] * POSITION_BINS  # requests whose last step is in the bin
        self.version = 0
        self._cliff: tuple[int, int | None] = (-1, None)

    def add(self, prompt: int, spec: SpecDecodeBlock) -> None:
        """The request's steps into the bins of their positions (a step's position: the
        prompt's tokens and those before the step), in one compiled loop."""
        drafted, accepted = spec.drafted, spec.accepted
        last = POSITION_BINS - 1
        drafted_in, accepted_in = self.drafted, self.accepted
        position = prompt + 1
        # a bin's sums gathered in locals while the steps stay in it (a request's steps
        # mostly do), added to the lists when they leave it
        current = min(position // POSITION_BIN, last)
        bin_drafted = bin_accepted = 0
        for i in range(len(accepted)):
            b = min(position // POSITION_BIN, last)
            if b != current:
                drafted_in[current] += bin_drafted
                accepted_in[current] += bin_accepted
                current, bin_drafted, bin_accepted = b, 0, 0
            bin_drafted += drafted[i]
            bin_accepted += accepted[i]
            position += accepted[i] + 1
        drafted_in[current] += bin_drafted
        accepted_in[current] += bin_accepted
        self.reach[min((position - 1) // POSITION_BIN, last)] += 1
        self.version += 1

    def cliff(self) -> int | None:
        """The position from which on acceptance is ~0 (the rule above); None when none."""
        if self._cliff[0] == self.version:
            return self._cliff[1]
        total_d, total_a = sum(self.drafted), sum(self.accepted)
        before_d = before_a = 0
        after_r = sum(self.reach)
        found = None
        for i in range(1, POSITION_BINS):
            before_d += self.drafted[i - 1]
            before_a += self.accepted[i - 1]
            after_r -= self.reach[i - 1]
            after_d, after_a = total_d - before_d, total_a - before_a
            if after_d < CLIFF_MIN_DRAFTED or after_r < CLIFF_MIN_REQUESTS:
                break  # later cut points only have less after them
            if (
                before_d >= CLIFF_MIN_DRAFTED
                and before_a >= CLIFF_BEFORE_MIN * before_d
                and after_a <= CLIFF_AFTER_MAX * after_d
                # and the fall is here: the first bin after it accepts (almost) nothing too
                and self.accepted[i] <= max(1.0, CLIFF_AFTER_MAX * self.drafted[i])
            ):
                found = i * POSITION_BIN
                break
        self._cliff = (self.version, found)
        return found


class CliffContexts:
    """One model's steps by the absolute position of the step, the tokens they drafted and
    accepted (position_cliff from a context on): one count per step as it comes, the steps that
    reached and that accepted each draft position derived when the rule is read."""

    __slots__ = ("_found", "accepted", "steps", "tried", "version")

    def __init__(self) -> None:
        # steps by bin x drafted x accepted (each capped at DEPTH_POSITIONS), flat
        self.steps = [0] * (DEPTH_BINS * _SIDE * _SIDE)
        # [position j - 1][bin], derived from `steps` when the rule is read
        self.tried: list[list[int]] = []
        self.accepted: list[list[int]] = []
        self.version = 0
        self._found: tuple[int, tuple[int, int] | None] = (-1, None)

    def add(self, prompt: int, spec: SpecDecodeBlock) -> None:
        drafted, accepted = spec.drafted, spec.accepted
        steps = self.steps
        position = prompt + 1
        last = DEPTH_BINS - 1
        for i in range(len(accepted)):
            a = accepted[i]
            b = min(position // DEPTH_BIN, last)
            key = (b * _SIDE + min(drafted[i], DEPTH_POSITIONS)) * _SIDE + min(a, DEPTH_POSITIONS)
            steps[key] += 1
            position += a + 1
        self.version += 1

    def cliff(self) -> tuple[int, int] | None:
        """(draft position, context) of the cliff (module docstring), or None."""
        if self._found[0] == self.version:
            return self._found[1]
        self._derive()
        found = None
        for j in range(1, DEPTH_POSITIONS):
            found = self._from(j)
            if found is not None:
                break
        self._found = (self.version, found)
        return found

    def _derive(self) -> None:
        """Per bin and draft position, the steps that reached it (drafted it, accepted the one
        before) and those that accepted it."""
        tried = self.tried = [[0] * DEPTH_BINS for _ in range(DEPTH_POSITIONS)]
        accepted = self.accepted = [[0] * DEPTH_BINS for _ in range(DEPTH_POSITIONS)]
        for key, n in enumerate(self.steps):
            if not n:
                continue
            b, rest = divmod(key, _SIDE * _SIDE)
            d, a = divmod(rest, _SIDE)
            for j in range(min(d, a + 1)):  # positions 1..reach were tried
                tried[j][b] += n
                if j < a:
                    accepted[j][b] += n

    def _from(self, j: int) -> tuple[int, int] | None:
        tried, accepted = self.tried[j], self.accepted[j]
        held_tried, held_accepted = self.tried[j - 1], self.accepted[j - 1]
        after_t, after_a = sum(tried), sum(accepted)
        after_ht, after_ha = sum(held_tried), sum(held_accepted)
        before_t = before_a = 0
        for c in range(DEPTH_BINS):
            if after_t < MIN_TRIED:
                return None  # later bins only have less after them
            if (
                tried[c] > 0
                and before_t >= MIN_TRIED
                and before_a >= HOLD_MIN * before_t
                and after_a <= CLIFF_MAX * after_t
                and after_ht >= MIN_TRIED
                and after_ha >= HOLD_MIN * after_ht
            ):
                return j + 1, c * DEPTH_BIN
            before_t += tried[c]
            before_a += accepted[c]
            after_t -= tried[c]
            after_a -= accepted[c]
            after_ht -= held_tried[c]
            after_ha -= held_accepted[c]
        return None


def _tried_and_accepted(counts: Counts) -> list[tuple[int, int]]:
    """Per draft position j = 1.., the steps that reached it and the steps that accepted it.
    Reaching position j takes accepting j - 1 and drafting j: at one K exactly the steps that
    accepted j - 1; with variable K at most that and at most the steps that drafted j."""
    drafted, accepted = counts.drafted_by_position, counts.by_position
    out = []
    for j in range(min(counts.max_drafted, len(accepted))):
        tried = drafted[0] if j == 0 else min(accepted[j - 1], drafted[j])
        out.append((tried, accepted[j]))
    return out


def position_cliff(counts: Counts) -> int | None:
    """The draft position (1-based) from which on acceptance is ~0 while the one before holds
    (module docstring); None when there is none."""
    positions = _tried_and_accepted(counts)
    for j in range(1, len(positions)):
        tried, accepted = positions[j]
        tried_before, accepted_before = positions[j - 1]
        if (
            tried >= MIN_TRIED
            and accepted <= CLIFF_MAX * tried
            and tried_before >= MIN_TRIED
            and accepted_before >= HOLD_MIN * tried_before
        ):
            return j + 1
    return None


def later_collapse(counts: Counts) -> dict[str, Any] | None:
    """Position 1's acceptance and the later positions' (each given its predecessor, pooled
    over those measured) when every later one is far below it (module docstring)."""
    positions = _tried_and_accepted(counts)
    if len(positions) < 2 or positions[0][0] < MIN_TRIED:
        return None
    first = positions[0][1] / positions[0][0]
    # Position j + 1 is tried by the steps that accepted j, less those that drafted exactly j
    # and accepted all of it: under variable K, at most accepted_by_drafted[j] // j of them.
    # Taken out at that most, the tried are a lower bound and the rate an upper one.
    steps_at, accepted_at = counts.steps_by_drafted, counts.accepted_by_drafted
    later = []
    for j in range(1, len(positions)):
        full = min(steps_at[j], accepted_at[j] // j) if j < len(steps_at) else 0
        tried = min(positions[j][0], counts.by_position[j - 1] - full)
        if tried >= MIN_TRIED:
            later.append((tried, positions[j][1]))
    if not later:
        return None
    for tried, accepted in later:
        rate = accepted / tried
        if rate > COLLAPSE_RATIO * first or first - rate < COLLAPSE_GAP:
            return None
    if position_cliff(counts) is not None:
        return None
    tried_later = sum(tried for tried, _ in later)
    return {
        "first": first,
        "later": sum(accepted for _, accepted in later) / tried_later,
        "positions": len(later) + 1,
    }


class SliceCliffs:
    """Per slice, since the start: its position cliff and its later positions' collapse,
    computed again only when its counts changed (none for a key the proxy never counted)."""

    def __init__(self, since_start: SlidingWindow[SliceKey], buckets: CtxBuckets) -> None:
        self._since_start = since_start
        self._buckets = buckets
        self._found: dict[SliceKey, tuple[int, int | None, dict[str, Any] | None]] = {}

    def _read(self, key: SliceKey) -> tuple[int | None, dict[str, Any] | None]:
        version = self._since_start.version(key)
        if version < 0:
            return None, None
        cached = self._found.get(key)
        if cached is None or cached[0] != version:
            counts = self._since_start.since_start(key)
            found = (version, position_cliff(counts), later_collapse(counts))
            cached = self._found[key] = found
        return cached[1], cached[2]

    def collapse(self, key: SliceKey) -> dict[str, Any] | None:
        return self._read(key)[1]

    def position_cliff(self, key: SliceKey, depths: CliffContexts | None) -> dict[str, Any] | None:
        """Where a draft position stops accepting: a slice's own counts, else from a context on
        (`depths`: the steps' own positions), else on the rollup the shortest bucket with one."""
        rollup = key.ctx_bucket == C.ALL
        own = None if rollup else self._read(key)[0]
        if own is not None:
            return {"position": own, "ctx_bucket": key.ctx_bucket}
        if depths is not None and (from_context := depths.cliff()) is not None:
            position, context = from_context
            bucket = self._buckets.label(context) if rollup else key.ctx_bucket
            detail = {"position": position, "ctx_bucket": bucket, "context": context}
            return detail if rollup or self._buckets.reaches(bucket, context) else None
        if not rollup:
            return None
        place = {label: i for i, label in enumerate(self._buckets.labels)}
        keys = self._since_start.keys()
        found = min(
            (
                (place.get(k.ctx_bucket, len(place)), k.ctx_bucket, cliff)
                for k in keys
                if k.model == key.model and k.ctx_bucket != C.ALL
                for cliff in (self._read(k)[0],)
                if cliff is not None
            ),
            default=None,
        )
        return None if found is None else {"position": found[2], "ctx_bucket": found[1]}


class FirstPositions:
    """Per model, since the start: each request's acceptance at position 1 and at positions
    2..K (each given its predecessor), paired within the request (first_position_deficit)."""

    def __init__(self) -> None:
        self._sums: dict[str, list[float]] = {}  # requests, sum of firsts, sum of laters

    def add(self, model: str, request: Counts) -> None:
        """One request's counts (its whole steps)."""
        positions = _tried_and_accepted(request)
        if len(positions) < 2:
            return
        tried_first, accepted_first = positions[0]
        tried_rest = accepted_rest = 0
        for tried, accepted in positions[1:]:  # one loop: this runs for every request
            tried_rest += tried
            accepted_rest += accepted
        if tried_first < PAIR_MIN_TRIED or tried_rest < PAIR_MIN_TRIED:
            return
        sums = self._sums.get(model)
        if sums is None:
            sums = self._sums[model] = [0.0, 0.0, 0.0]
        sums[0] += 1
        sums[1] += accepted_first / tried_first
        sums[2] += accepted_rest / tried_rest

    def deficit(self, model: str) -> dict[str, float] | None:
        """The mean acceptance of position 1 and of the later ones over the model's requests,
        when the first is far below (module docstring); None otherwise."""
        sums = self._sums.get(model)
        if sums is None or sums[0] < DEFICIT_MIN_REQUESTS:
            return None
        first, later = sums[1] / sums[0], sums[2] / sums[0]
        if first <= DEFICIT_RATIO * later and later - first >= DEFICIT_GAP:
            return {"first": first, "later": later, "requests": int(sums[0])}
        return None
