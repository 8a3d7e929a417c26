"""`specwatch check-config`: the settings every source gives, validated and printed as JSON."""

from __future__ import annotations

import argparse
import json
import sys

from specwatch.settings import Settings


def run(_args: argparse.Namespace, settings: Settings) -> int:
    print(json.dumps(settings.model_dump(mode="json"), indent=2, sort_keys=True))
    print("specwatch: config ok", file=sys.stderr)
    return 0
