"""The query's rows (fleet/sql.py) read back into the sidecar's own counts and statistics.

One implementation of the formulas: a group's Counts is built exactly as the sidecar would
have counted the same steps (Counts.of_histogram), and its alpha, rate and tau come from
analysis/counting/stats.py, its K table from analysis/speed/load.py.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from specwatch.analysis.counting.counts import MOMENTS, Counts
from specwatch.analysis.counting.slicing import CtxBuckets, LoadBuckets
from specwatch.analysis.counting.stats import SliceStats
from specwatch.analysis.counting.sums import DecodeSums, Sums
from specwatch.analysis.speed.load import LoadTable
from specwatch.conventions import TRACK_STABLE, UNKNOWN_CONFIG
from specwatch.fleet.sql import CODE_BASE, SLOTS, SUMS

STATUSES = ("spec", "empty", "baseline", "config", "outside", "bad")
UNKNOWN_LOAD = "unknown"  # a line without in_flight (a writer older than the load dimension)


@dataclass(slots=True)
class _Group:
    steps: dict[tuple[int, int], int] = field(default_factory=dict)
    requests: int = 0
    moments: list[int] = field(default_factory=lambda: [0] * 7)


@dataclass(slots=True)
class Tally:
    """Lines by status (fleet/sql.py), over everything read."""

    lines: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATUSES, 0))

    @property
    def read(self) -> int:
        return sum(self.lines.values())


@dataclass(frozen=True, slots=True)
class Group:
    key: tuple[str, ...]  # the values of the dimensions, in --by's order
    counts: Counts
    stats: SliceStats
    # decode seconds over decode tokens of its speculative requests (a query `with_load`),
    # each request in the ctx bucket of its first step, as the sidecar's goodput
    decode: Sums | None = None


def label(name: str, value: Any, ctx: CtxBuckets, load: LoadBuckets) -> str:
    """A dimension's value as the sidecar labels it."""
    if name == "ctx_bucket":
        return ctx.labels[int(value)]
    if name == "load":
        return UNKNOWN_LOAD if value is None or int(value) < 0 else load.labels[int(value)]
    if name == "config":
        return value or UNKNOWN_CONFIG
    if name == "track":
        return value or TRACK_STABLE
    return str(value)


def read_rows(
    rows: Iterable[Sequence[Any]],
    dimensions: Sequence[str],
    ctx: CtxBuckets,
    load: LoadBuckets,
    max_position: int,
    confidence: float,
) -> tuple[list[Group], Tally]:
    """Groups (those with speculative steps), in label order, and the lines by status.
    `dimensions` as --by gave them; ctx_bucket among them is the step's own bucket."""
    width = len([d for d in dimensions if d != "ctx_bucket"]) or 1
    at = {name: i for i, name in enumerate(SUMS)}
    groups: dict[tuple[str, ...], _Group] = defaultdict(_Group)
    decode: dict[tuple[str, ...], Sums] = defaultdict(Sums)
    tally = Tally()
    for row in rows:
        values, sums = row[:width], row[width:]
        status = sums[at["status"]]
        tally.lines[status] += int(sums[at["lines"]])
        if status not in ("spec", "empty"):
            continue
        named = dict(zip([d for d in dimensions if d != "ctx_bucket"], values, strict=False))
        named["ctx_bucket"] = sums[at["b"]]
        key = tuple(label(name, named[name], ctx, load) for name in dimensions)
        if sums[at["dec_n"]]:
            _add_decode(decode[key], sums, at)
        if status != "spec":
            continue
        group = groups[key]
        _steps(sums, at, group.steps)
        requests = int(sums[at["requests"]])
        if requests:
            group.requests += requests
            for i, name in enumerate(MOMENTS):
                group.moments[i] += int(sums[at[name]])
    out = []
    for key in sorted(groups, key=lambda k: _order(k, dimensions, ctx)):
        group = groups[key]
        steps = ((d, a, n) for (d, a), n in sorted(group.steps.items()))
        counts = Counts.of_histogram(steps, group.requests, group.moments, max_position)
        out.append(Group(key, counts, SliceStats.of(counts, confidence), decode.get(key)))
    return out, tally


def _steps(sums: Sequence[Any], at: dict[str, int], steps: dict[tuple[int, int], int]) -> None:
    """A row's steps into `steps` ((drafted, accepted) -> how many): a packed row's count per
    accepted value of its K, or a crossing request's histogram entry. A count of 0 is not
    added: an absent pair is not a pair seen no times (it would raise max_drafted)."""
    if sums[at["code"]] is not None:
        d, a = divmod(int(sums[at["code"]]), CODE_BASE)
        steps[d, a] = steps.get((d, a), 0) + int(sums[at["c"]])
    if sums[at["k"]] is not None:
        k = int(sums[at["k"]])
        for a in range(SLOTS):
            n = int(sums[at[f"h{a}"]] or 0)
            if n:
                steps[k, a] = steps.get((k, a), 0) + n


def _order(key: tuple[str, ...], dimensions: Sequence[str], ctx: CtxBuckets) -> tuple[Any, ...]:
    place = {label: i for i, label in enumerate(ctx.labels)}
    return tuple(
        (place.get(value, len(place)), value) if name == "ctx_bucket" else (0, value)
        for name, value in zip(dimensions, key, strict=True)
    )


def load_table(rows: Iterable[Sequence[Any]], load: LoadBuckets, max_position: int) -> LoadTable:
    """The since-start LoadTable `advise` builds, from a query by (model, load) without the
    ctx split: speculative requests' whole counts, and the decode times of speculative and
    baseline requests, per model and load bucket (lines without in_flight are not in it)."""
    at = {name: i for i, name in enumerate(SUMS)}
    table = LoadTable(load, max_position)
    steps: dict[tuple[str, int], dict[tuple[int, int], int]] = defaultdict(dict)
    requests: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0] * 8)
    decode: dict[tuple[str, int, bool], Sums] = defaultdict(Sums)
    largest: dict[str, int] = {}
    for row in rows:
        model, index, sums = row[0], row[1], row[2:]
        status = sums[at["status"]]
        if status not in ("spec", "empty", "baseline") or index is None or index < 0:
            continue
        cell = (model, int(index))
        if sums[at["max_load"]] is not None:
            largest[model] = max(largest.get(model, 0), int(sums[at["max_load"]]))
        if status == "spec":
            _steps(sums, at, steps[cell])
            got = requests[cell]
            got[0] += int(sums[at["requests"]])
            for i, name in enumerate(MOMENTS, start=1):
                got[i] += int(sums[at[name]] or 0)
        if sums[at["dec_n"]]:
            _add_decode(decode[model, int(index), status == "baseline"], sums, at)
    cells = {*steps, *((m, i) for m, i, _ in decode)}
    for model, index in sorted(cells):
        got = requests.get((model, index), [0] * 8)
        histogram = ((d, a, n) for (d, a), n in sorted(steps.get((model, index), {}).items()))
        counts = Counts.of_histogram(histogram, got[0], got[1:], max_position)
        table.set_cell(
            model,
            index,
            counts,
            decode.get((model, index, False), Sums()),
            decode.get((model, index, True), Sums()),
        )
    for model, most in largest.items():
        table.set_largest(model, most)
    return table


def decode_cells(
    rows: Iterable[Sequence[Any]],
    dimensions: Sequence[str],
    ctx: CtxBuckets,
    load: LoadBuckets,
) -> dict[tuple[str, ...], Sums]:
    """Per group (labelled as read_rows labels them; ctx_bucket the request's first step's),
    the decode-time sums of speculative requests (`spec` and `empty` lines: what the
    goodput comparison reads, as the sidecar's analysis/speed/goodput.py sums them)."""
    width = len([d for d in dimensions if d != "ctx_bucket"]) or 1
    at = {name: i for i, name in enumerate(SUMS)}
    out: dict[tuple[str, ...], Sums] = defaultdict(DecodeSums)
    for row in rows:
        values, sums = row[:width], row[width:]
        if sums[at["status"]] not in ("spec", "empty") or not sums[at["dec_n"]]:
            continue
        named = dict(zip([d for d in dimensions if d != "ctx_bucket"], values, strict=False))
        named["ctx_bucket"] = sums[at["b"]]
        key = tuple(label(name, named[name], ctx, load) for name in dimensions)
        _add_decode(out[key], sums, at)
    return dict(out)


def _add_decode(ratio: Sums, sums: Sequence[Any], at: dict[str, int]) -> None:
    ratio.requests += int(sums[at["dec_n"]])
    ratio.x += sums[at["dec_x"]]
    ratio.y += sums[at["dec_y"]]
    ratio.xx += sums[at["dec_xx"]]
    ratio.xy += sums[at["dec_xy"]]
    ratio.yy += sums[at["dec_yy"]]
    if isinstance(ratio, DecodeSums):  # loads not recorded (an old log): none of these
        ratio.yb += sums[at["dec_yb"]] or 0.0
        ratio.xb += sums[at["dec_xb"]] or 0.0
        ratio.ybb += sums[at["dec_ybb"]] or 0.0
        ratio.yyb += sums[at["dec_yyb"]] or 0.0
        ratio.yybb += sums[at["dec_yybb"]] or 0.0
        ratio.steps += sums[at["dec_s"]] or 0.0
        ratio.ss += sums[at["dec_ss"]] or 0.0
        ratio.xs += sums[at["dec_xs"]] or 0.0
        ratio.ys += sums[at["dec_ys"]] or 0.0
