"""`specwatch generate`: the rules, alerts, routes, dashboards and manifests written (or, with
--check, compared with what is committed)."""

from __future__ import annotations

import argparse
import sys

from specwatch.settings import Settings


def run(args: argparse.Namespace, settings: Settings) -> int:
    from specwatch.gen.alert_rules import GenerateError
    from specwatch.gen.writer import render, stale, write

    try:
        files = render(settings, args.time_scale)
    except GenerateError as error:
        print(f"specwatch: generate: {error}", file=sys.stderr)
        return 2
    if args.check:
        if not args.out.is_dir():
            print(f"specwatch: generate: --out {args.out}: no such directory", file=sys.stderr)
            return 2
        outdated = stale(files, args.out)
        for name in outdated:
            state = "out of date" if (args.out / name).exists() else "missing"
            print(f"specwatch: generate: {name} is {state}", file=sys.stderr)
        if outdated:
            print(
                "specwatch: generate: run `specwatch generate` and commit the result",
                file=sys.stderr,
            )
            return 1
        print(f"specwatch: generate: {len(files)} files up to date", file=sys.stderr)
        return 0
    try:
        for path in write(files, args.out):
            print(f"specwatch: generate: wrote {path}", file=sys.stderr)
    except OSError as error:  # a read-only or mistyped --out: said, not a traceback
        where = str(args.out)
        print(f"specwatch: generate: cannot write under {where!r}: {error}", file=sys.stderr)
        return 1
    return 0
