"""`specwatch compare A B`: two sets of cycle logs (two configs, canary and stable, before
and after an upgrade), slice by slice, with the live comparison's statistics.

Each side is aggregated by fleet analysis (commands/shared/fleet.py); the differences, verdicts,
the family-wise guard, the overall change at B's mix and the mix shift come from
analysis/compare/alpha.py, the code the sidecar's own config-change comparison runs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from specwatch.analysis.compare.alpha import ModelComparison, SliceComparison, compare_models
from specwatch.analysis.compare.goodput import TpotComparison, compare_tpot
from specwatch.analysis.counting.stats import difference_interval
from specwatch.analysis.counting.sums import Sums
from specwatch.commands.shared.fleet import (
    UsageError,
    aggregated,
    attained,
    engine,
    grouped,
    report_lines,
    request_of,
)
from specwatch.conventions import TRACK_CANARY, TRACK_STABLE
from specwatch.export.fields import comparison_row, model_comparison
from specwatch.fleet.groups import Group, Tally, decode_cells
from specwatch.fleet.source import SourceError
from specwatch.settings import Settings

SIDES = ("a", "b")
Side = dict[tuple[str, ...], Sums]


def _by_model_first(by: tuple[str, ...]) -> tuple[str, ...]:
    """Comparisons are per model: the model leads every key."""
    return ("model", *(name for name in by if name != "model"))


def _sides(
    fleet: Any, args: argparse.Namespace, settings: Settings
) -> tuple[tuple[str, str], dict[bool, tuple[Side, Side]], tuple[str, ...], Tally]:
    """(names of A and B), per rollup-or-not the sums of each side, the key's dimensions, and
    the lines read."""
    paths = list(args.paths)
    if args.split is None:
        if len(paths) != 2:
            raise UsageError("give two paths (A and B), or one set and --split config|track")
        requests = [request_of(_with(args, [path]), args.by) for path in paths]
        by = _by_model_first(requests[0].by)
        tally = Tally()
        out: dict[bool, list[Side]] = {False: [], True: []}
        for request in requests:
            for rollup, dims in ((False, by), (True, ("model",))):
                groups, read = grouped(fleet, request, settings, dims)
                out[rollup].append({group.key: Sums.of(group.counts, "alpha") for group in groups})
                if not rollup:
                    for status, n in read.lines.items():
                        tally.lines[status] += n
        return (
            (str(paths[0]), str(paths[1])),
            {rollup: (sides[0], sides[1]) for rollup, sides in out.items()},
            by,
            tally,
        )
    request = request_of(_with(args, paths), args.by)
    by = _by_model_first(tuple(name for name in request.by if name != args.split))
    split: dict[bool, tuple[list[Group], Tally]] = {
        rollup: grouped(fleet, request, settings, (*dims, args.split))
        for rollup, dims in ((False, by), (True, ("model",)))
    }
    found = sorted({group.key[-1] for group in split[True][0]})
    names = (args.a, args.b) if args.a and args.b else _ordered(fleet, request, args.split, found)
    if len(names) != 2 or any(name not in found for name in names):
        raise UsageError(
            f"--split {args.split}: the logs hold {', '.join(found) or 'no value'}; "
            "name the two to compare with --a and --b"
        )
    sides: dict[bool, tuple[Side, Side]] = {}
    for rollup, (groups, _) in split.items():
        a = {g.key[:-1]: Sums.of(g.counts, "alpha") for g in groups if g.key[-1] == names[0]}
        b = {g.key[:-1]: Sums.of(g.counts, "alpha") for g in groups if g.key[-1] == names[1]}
        sides[rollup] = (a, b)
    return (names[0], names[1]), sides, by, split[False][1]


def _ordered(fleet: Any, request: Any, split: str, found: list[str]) -> tuple[str, ...]:
    """The two sides the way a user reads them: A the control, B the change judged. Tracks:
    stable, then the canary; configs: the older, then the newer (by their first request)."""
    if split == "track" and set(found) == {TRACK_STABLE, TRACK_CANARY}:
        return (TRACK_STABLE, TRACK_CANARY)
    if split == "config" and len(found) == 2:
        seen = fleet.first_seen(request.files, "config")
        return tuple(sorted(found, key=lambda name: (seen.get(name, math.inf), name)))
    return tuple(found)


def _sides_in_words(split: str | None, names: tuple[str, str]) -> dict[str, str]:
    """What A and B are, said: `ratio` and `difference` are always B against A."""
    if split == "track" and names == (TRACK_STABLE, TRACK_CANARY):
        a, b = "the control: the stable track", "the change judged: the canary track"
    elif split == "config":
        a, b = "the control: the older config", "the change judged: the newer config"
    else:
        a, b = "the control", "the change judged"
    return {
        "a": f"{names[0]} ({a})",
        "b": f"{names[1]} ({b}); ratios are B / A and differences B - A: `slower` "
        "means B decodes slower than A, `worse` that B accepts less",
    }


Cells = dict[tuple[str, ...], Sums]


def _tpot_sides(
    fleet: Any, args: argparse.Namespace, settings: Settings, names: tuple[str, str]
) -> tuple[Cells, Cells]:
    """Each side's decode-time sums per slice and load bucket (the load last in the key)."""
    from specwatch.analysis.counting.slicing import CtxBuckets, LoadBuckets

    ctx, load = CtxBuckets(settings.ctx_buckets), LoadBuckets(settings.load.batch_edges)

    def cells(paths: list[str], dims: tuple[str, ...]) -> Cells:
        request = request_of(_with(args, paths), args.by)
        return decode_cells(aggregated(fleet, request, settings, dims, True), dims, ctx, load)

    by = _by_model_first(request_of(_with(args, list(args.paths)), args.by).by)
    if args.split is None:
        by = tuple(name for name in by if name != "load")
        return cells([args.paths[0]], (*by, "load")), cells([args.paths[1]], (*by, "load"))
    by = tuple(name for name in by if name not in ("load", args.split))
    both = cells(list(args.paths), (*by, "load", args.split))
    a = {key[:-1]: sums for key, sums in both.items() if key[-1] == names[0]}
    b = {key[:-1]: sums for key, sums in both.items() if key[-1] == names[1]}
    return a, b


def _with(args: argparse.Namespace, paths: list[str]) -> argparse.Namespace:
    return argparse.Namespace(**{**vars(args), "paths": paths})


def _pairs(a: Side, b: Side) -> list[tuple[tuple[str, ...], Sums, Sums]]:
    return [(key, a.get(key, Sums()), b.get(key, Sums())) for key in sorted(set(a) | set(b))]


def run(args: argparse.Namespace, settings: Settings) -> int:
    try:
        fleet = engine(args)
        if fleet is None:
            print(
                "specwatch: compare needs DuckDB: pip install 'specwatch[analyze]'",
                file=sys.stderr,
            )
            return 2
        names, sides, by, tally = _sides(fleet, args, settings)
    except (UsageError, SourceError) as error:
        print(f"specwatch: compare: {error}", file=sys.stderr)
        return 2 if isinstance(error, UsageError) else 1
    report_lines(tally, "compare")
    cfg, zones = settings.canary, settings.zones
    slices, models = compare_models(
        _pairs(*sides[True]),
        _pairs(*sides[False]),
        cfg.confidence,
        cfg.margin,
        zones.min_trials,
        zones.min_requests,
    )
    tpot_slices: list[TpotComparison] = []
    tpot_models: list[TpotComparison] = []
    if args.metric != "alpha":
        try:
            before, after = _tpot_sides(fleet, args, settings, names)
        except SourceError as error:
            print(f"specwatch: compare: {error}", file=sys.stderr)
            return 1
        tpot_slices, tpot_models = compare_tpot(
            before,
            after,
            cfg.confidence,
            cfg.tpot_margin,
            cfg.tpot_min_cell_requests,
            zones.min_requests,
        )
    try:
        slos = _slo_rows(fleet, args, settings, names) if settings.latency_slos else None
    except SourceError as error:
        print(f"specwatch: compare: {error}", file=sys.stderr)
        return 1
    if not models and not tpot_models:
        print("specwatch: compare: no speculative request on either side", file=sys.stderr)
        return 1
    tpot_of = {row.key: row.verdict for row in [*tpot_slices, *tpot_models]}
    document: dict[str, Any] = {
        "a": names[0],
        "b": names[1],
        "sides": _sides_in_words(args.split, names),
        "by": list(by),
        "metrics": ["alpha", "tpot"] if args.metric is None else [args.metric],
        "confidence": cfg.confidence,
    }
    if args.metric != "tpot":
        document |= {
            "margin": cfg.margin,
            "slices": [_row(row, by, tpot_of) for row in slices],
            "models": [_model(model, tpot_of) for model in models],
        }
    if args.metric != "alpha":
        document["tpot"] = {
            "margin": cfg.tpot_margin,
            "slices": [_tpot_row(row, by) for row in tpot_slices],
            "models": [_tpot_row(row, ("model",)) for row in tpot_models],
        }
    if slos is not None:
        document["latency_slos"] = slos
    if args.json:
        sys.stdout.write(json.dumps(document) + "\n")
    else:
        _print(document, by)
    return 0


def _slo_rows(
    fleet: Any, args: argparse.Namespace, settings: Settings, names: tuple[str, str]
) -> list[dict[str, Any]]:
    """Per latency objective, model and variant each side's attainment and B - A with
    Newcombe's interval (over all loads: the live alert compares within each load bucket)."""
    paths = list(args.paths)
    if args.split is None:
        a, b = (
            attained(fleet, request_of(_with(args, [path]), "model"), settings, ("model",))
            for path in paths
        )
    else:
        dims = ("model", args.split)
        both = attained(fleet, request_of(_with(args, paths), "model"), settings, dims)
        a = [replace(x, key=x.key[:1]) for x in both if x.key[1] == names[0]]
        b = [replace(x, key=x.key[:1]) for x in both if x.key[1] == names[1]]
    before = {(x.objective.name, x.key[0], x.variant): x for x in a}
    rows = []
    for x in b:
        y = before.get((x.objective.name, x.key[0], x.variant))
        if y is None:
            continue
        d = difference_interval(x.interval, y.interval)
        rows.append(
            {
                "model": x.key[0],
                **{k: v for k, v in x.fields().items() if k in ("variant", "slo", "objective")},
                "a": y.fields(),
                "b": x.fields(),
                "difference": {"estimate": d.estimate, "lower": d.lower, "upper": d.upper},
            }
        )
    return rows


def _row(
    row: SliceComparison, by: tuple[str, ...], tpot_of: dict[tuple[str, ...], str]
) -> dict[str, Any]:
    return {**comparison_row(row, by, SIDES), "tpot_verdict": tpot_of.get(row.key)}


def _tpot_row(row: TpotComparison, by: tuple[str, ...]) -> dict[str, Any]:
    return row.as_dict(by, ("a", "b"))


def _model(model: ModelComparison, tpot_of: dict[tuple[str, ...], str]) -> dict[str, Any]:
    return {
        **model_comparison(model, ("model",), SIDES),
        "tpot_verdict": tpot_of.get(model.rollup.key),
    }


def _print(document: dict[str, Any], by: tuple[str, ...]) -> None:
    from specwatch.commands.shared.table import console

    out = console()
    if "tpot" in document:  # what users feel first
        _print_tpot(out, document, by)
    if "slices" in document:
        _print_alpha(out, document, by)
    for row in document.get("latency_slos", ()):
        a, b, d = row["a"], row["b"], row["difference"]
        out.print(
            f"{row['model']} ({row['variant']}): latency objective {row['slo']}: attainment "
            f"A {a['attainment']:.4f} ({a['requests']}), B {b['attainment']:.4f} "
            f"({b['requests']}), B - A {d['estimate']:+.4f} [{d['lower']:+.4f}, "
            f"{d['upper']:+.4f}]",
            highlight=False,
        )


def _show(
    out: Any,
    document: dict[str, Any],
    by: tuple[str, ...],
    what: str,
    columns: tuple[str, str, str],
    rows: list[dict[str, Any]],
    cells: tuple[Callable[[dict[str, Any]], str], Callable[[dict[str, Any]], str]],
) -> None:
    """One comparison's table: the keys, each side, B against A, the verdict."""
    from rich.table import Table

    from specwatch.commands.shared.table import show

    level = f"{document['confidence']:.0%}"
    title = (
        f"{what}: B ({document['b']}, the change judged) against A ({document['a']}, the "
        f"control), by {', '.join(by)}"
    )
    table = Table(title=title, title_justify="left", pad_edge=False)
    for name in by:
        table.add_column(name)
    for name in (*columns[:2], f"{columns[2]} [{level} family-wise]", "verdict"):
        table.add_column(name, justify="right")
    side, against = cells
    for row in rows:
        keys = [str(row.get(name, "all")) for name in by]
        table.add_row(*keys, side(row["a"]), side(row["b"]), against(row), row["verdict"])
    show(out, table)


def _print_tpot(out: Any, document: dict[str, Any], by: tuple[str, ...]) -> None:
    def side(values: dict[str, Any]) -> str:
        tpot = values["tpot_seconds"]
        return "-" if tpot is None else f"{tpot * 1000:.2f} ({values['requests']})"

    def ratio(row: dict[str, Any]) -> str:
        r = row["ratio"]
        return "-" if r is None else f"{r['estimate']:.3f} [{r['lower']:.3f}, {r['upper']:.3f}]"

    tpot = document["tpot"]
    columns = ("A TPOT ms (reqs)", "B TPOT ms (reqs)", "B / A")
    what = "Decode time per output token"
    _show(out, document, by, what, columns, [*tpot["models"], *tpot["slices"]], (side, ratio))
    for row in tpot["models"]:
        said = [row["factors"]["said"]] if row["factors"] else []
        moved = row["load_adjustment"] is not None and abs(row["load_adjustment"] - 1) >= 0.005
        if moved and "straight line" not in (row["caveat"] or ""):  # else the caveat says it
            said.append(
                f"compared at the same load: B's loads moved the raw ratio by "
                f"{1 / row['load_adjustment'] - 1:+.1%} (taken out)"
            )
        said += [text for text in (row["reason"], row["caveat"]) if text]
        for text in said:
            out.print(f"{row['model']}: {text}", highlight=False)


def _print_alpha(out: Any, document: dict[str, Any], by: tuple[str, ...]) -> None:
    def side(values: dict[str, Any]) -> str:
        alpha = values["alpha"]
        return "-" if alpha is None else f"{alpha:.3f} ({values['requests']})"

    def difference(row: dict[str, Any]) -> str:
        d = row["difference"]
        return "-" if d is None else f"{d['estimate']:+.3f} [{d['lower']:+.3f}, {d['upper']:+.3f}]"

    columns = ("A alpha (reqs)", "B alpha (reqs)", "B - A")
    rows = [*document["models"], *document["slices"]]
    _show(out, document, by, "Acceptance", columns, rows, (side, difference))
    for model in document["models"]:
        overall = model["overall"]
        if overall is not None:
            out.print(
                f"{model['model']}: overall change {overall['total']:+.3f} = "
                f"{overall['rate']:+.3f} at B's mix (the config) {overall['mix']:+.3f} "
                f"(the traffic mix; PSI {model['mix_psi'] or 0:.2f})",
                highlight=False,
            )
        if model["caveat"]:
            out.print(f"{model['model']}: {model['caveat']}", highlight=False)
