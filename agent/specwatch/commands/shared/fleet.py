"""What analyze and compare share: the files, grouping and range the arguments name, the DuckDB
engine, the groups read back, and what was not counted said on stderr."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

from specwatch.fleet import slo
from specwatch.fleet.groups import Group, Tally, read_rows
from specwatch.fleet.source import Files, SourceError, find, when
from specwatch.settings import Settings

DIMENSIONS = ("model", "config", "track", "ctx_bucket", "task", "load", "day")


@dataclass(frozen=True, slots=True)
class Request:
    """What one aggregation is asked: the files, the grouping, the time range."""

    files: Files
    by: tuple[str, ...]
    since: float | None
    until: float | None


class UsageError(ValueError):
    pass


def dimensions(text: str) -> tuple[str, ...]:
    """--by: names from DIMENSIONS, comma-separated, each once."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in DIMENSIONS]
    if unknown or not names or len(set(names)) != len(names):
        raise UsageError(
            f"--by {text!r}: give each of {', '.join(DIMENSIONS)} at most once, comma-separated"
        )
    return names


def request_of(args: argparse.Namespace, by: str) -> Request:
    """The files and the range the arguments name (UsageError, SourceError when wrong)."""
    files = find([str(path) for path in args.paths])
    for missing in files.missing:
        print(f"specwatch: {args.command}: nothing matches {missing!r}", file=sys.stderr)
    if not files.count:
        raise UsageError("no file to read")
    try:
        since = when(args.since) if args.since else None
        until = when(args.until) if args.until else None
    except SourceError as error:
        raise UsageError(str(error)) from None
    if since is not None and until is not None and until <= since:
        raise UsageError("--until is not after --since")
    return Request(files, dimensions(by), since, until)


def engine(args: argparse.Namespace) -> Any:
    """The DuckDB engine, or None (said on stderr) when the `analyze` extra is missing."""
    try:
        from specwatch.fleet.engine import Engine
    except ImportError:  # pragma: no cover - the extra is installed wherever tests run
        return None
    progress = sys.stderr if not args.quiet else None
    return Engine(args.threads, args.memory_limit, progress)


def aggregated(
    fleet: Any, request: Request, settings: Settings, dims: tuple[str, ...], with_load: bool
) -> list[tuple[Any, ...]]:
    """fleet/sql.py's rows of the request's files, grouped by `dims`."""
    rows: list[tuple[Any, ...]] = fleet.aggregate(
        request.files,
        dims,
        settings.ctx_buckets,
        settings.load.batch_edges,
        request.since,
        request.until,
        with_load=with_load,
    )
    return rows


def grouped(
    fleet: Any,
    request: Request,
    settings: Settings,
    by: tuple[str, ...] | None = None,
    tpot: bool = False,
) -> tuple[list[Group], Tally]:
    """The groups of `by` (else the request's); `tpot`: with their decode-time sums."""
    dims = by or request.by
    rows = aggregated(fleet, request, settings, dims, with_load=tpot)
    from specwatch.analysis.counting.slicing import CtxBuckets, LoadBuckets

    return read_rows(
        rows,
        dims,
        CtxBuckets(settings.ctx_buckets),
        LoadBuckets(settings.load.batch_edges),
        settings.limits.max_position,
        settings.zones.confidence,
    )


def attained(
    fleet: Any, request: Request, settings: Settings, by: tuple[str, ...]
) -> list[slo.Attainment]:
    """Each latency objective's attainment per group of `by` and variant (fleet/slo.py)."""
    from specwatch.analysis.counting.slicing import CtxBuckets, LoadBuckets

    objectives = settings.latency_slos
    ctx, load = settings.ctx_buckets, settings.load.batch_edges

    def build(source: str) -> str:
        return slo.query(source, by, objectives, ctx, load, request.since, request.until)

    rows = fleet.select(request.files, slo.needed(by), build)
    buckets = (CtxBuckets(ctx), LoadBuckets(load))
    return slo.attainments(rows, by, objectives, buckets, settings.zones.confidence)


def report_lines(tally: Tally, command: str) -> None:
    """What was not counted, on stderr: bad lines are never silent."""
    lines = tally.lines
    if lines["bad"]:
        print(
            f"specwatch: {command}: {lines['bad']} line(s) are not cycle-log request lines "
            "(not JSON, a field missing or of the wrong type, per-step arrays that disagree): "
            "not counted; `specwatch replay FILE` names each",
            file=sys.stderr,
        )
    if lines["outside"]:
        print(
            f"specwatch: {command}: {lines['outside']} request(s) outside --since/--until",
            file=sys.stderr,
        )
