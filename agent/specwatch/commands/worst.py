"""`specwatch worst`: the requests behind extremes and red slices, from cycle logs.

A row per request: the extremes (`high`: accepted nearly all it tried, loops; `low`: nearly
none) and, as `low` too, the requests of slices red at the end of the replay that accepted
less than the red threshold. Rows carry the request's own per-position acceptance and the
causes of its slice and model, so a draft-retraining pipeline can pick its hard samples and
join them with its own request store by `request_id`. Text is there only if the log has it
(`cycle_log.capture_text`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import orjson

from specwatch import conventions as C
from specwatch.analysis.causes.rules import extreme_kind
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.slicing import CtxBuckets
from specwatch.analysis.replay import SpanTooLong, replay
from specwatch.analysis.views import SliceView
from specwatch.core.httpjson import dumps
from specwatch.core.records import RequestRecord, SliceKey, SpecConfig
from specwatch.settings import Settings


def _row(
    record: RequestRecord, kind: str, counts: Counts, ctx: str, causes: list[str]
) -> dict[str, Any]:
    spec = record.spec
    assert spec is not None
    drafted_by = counts.drafted_by_position
    row: dict[str, Any] = {
        "request_id": record.request_id,
        "kind": kind,
        "model": record.model,
        "config": record.config,
        "ctx_bucket": ctx,
        "task": record.task,
        "ts": record.ts,
        "prompt_tokens": record.prompt_tokens,
        "completion_tokens": record.completion_tokens,
        "alpha": counts.accepted / counts.trials if counts.trials else None,
        "tau": 1.0 + counts.accepted / counts.steps if counts.steps else None,
        "per_position": [
            a / n if n else None
            for a, n in zip(counts.by_position[: counts.max_drafted], drafted_by, strict=False)
        ],
        "causes": causes,
    }
    for key in ("prompt_text", "completion_text"):
        if getattr(record, key) is not None:
            row[key] = getattr(record, key)
    return row


def worst_rows(
    records: list[RequestRecord],
    settings: Settings,
    config: SpecConfig | None,
    kind: str | None,
    limit: int,
) -> list[dict[str, Any]]:
    """The rows, worst first in each kind (`kind` None: both), at most `limit` of each."""
    analyzer, end = replay(records, settings, config)
    snapshot = analyzer.snapshot(end)
    views: dict[SliceKey, SliceView] = {v.key: v for v in (*snapshot.slices, *snapshot.rollups)}
    buckets = CtxBuckets(settings.ctx_buckets)
    red = settings.zones.red
    found: dict[str, list[tuple[float, dict[str, Any]]]] = {C.Extreme.HIGH: [], C.Extreme.LOW: []}
    for record in records:
        spec = record.spec
        if spec is None or not spec.steps or record.variant == C.VARIANT_BASELINE:
            continue
        counts = Counts.of_request(spec.drafted, spec.accepted, settings.limits.max_position)
        ctx = (
            C.UNKNOWN_CTX
            if record.prompt_tokens is None
            else buckets.label(record.prompt_tokens + 1)
        )
        key = SliceKey(record.model, ctx, record.task)
        alpha = counts.accepted / counts.trials if counts.trials else 0.0
        row_kind = extreme_kind(counts.accepted, counts.trials, counts.drafted)
        view = views.get(key)
        if row_kind is None and view is not None and view.zone == C.Zone.RED and alpha < red:
            row_kind = C.Extreme.LOW  # behind a red slice
        if row_kind is None or (kind is not None and row_kind != kind):
            continue
        rollup = views.get(SliceKey(record.model, C.ALL, C.ALL))
        causes = sorted({cause.kind for v in (view, rollup) if v is not None for cause in v.causes})
        row = _row(record, row_kind, counts, ctx, causes)
        found[row_kind].append((-alpha if row_kind == C.Extreme.HIGH else alpha, row))
    out = []
    for rows in found.values():
        rows.sort(key=lambda item: item[0])
        out += [row for _, row in rows[:limit]]
    return out


def run(args: argparse.Namespace, settings: Settings) -> int:
    from specwatch.commands.shared.cyclelogs import read_logs

    read = read_logs(args.files, "worst")
    if read is None:
        return 1
    records, errors, config = read
    try:
        rows = worst_rows(records, settings, config, args.kind, args.limit)
    except SpanTooLong as error:
        print(f"specwatch: worst: {error}", file=sys.stderr)
        return 1
    if args.json:
        document = {"files": [str(p) for p in args.files], "records": len(records), "rows": rows}
        sys.stdout.write(dumps(document).decode() + "\n")
    else:
        sys.stdout.write("".join(orjson.dumps(row).decode() + "\n" for row in rows))
        if not rows:  # said on stderr: stdout stays JSON lines for a pipe
            which = f"{args.kind} " if args.kind else ""
            print(
                f"specwatch: worst: no {which}extreme request and none behind a red slice in "
                f"{len(records)} records",
                file=sys.stderr,
            )
    for bad in errors:
        print(f"specwatch: worst: {bad.path}:{bad.line}: {bad.reason}", file=sys.stderr)
    return 0
