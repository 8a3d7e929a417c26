"""The verdicts `specwatch replay` gives a cycle log, in a form to compare across commits
(tests/fixtures/verdicts/make.py writes them; tests/integration/test_verdicts_unchanged.py holds
them fixed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

LOGS = ("anchor.jsonl.gz", "gain.jsonl.gz", "overdispersed.jsonl.gz")


def verdicts(path: Path) -> dict[str, Any]:
    """Every zone change in order, as logged (but its wall-clock timestamp), and each slice's
    and model's zone at the end, as a user of `replay --json --verbose` sees them."""
    command = ["replay", "--json", "--verbose", "--log-format", "json", str(path)]
    done = subprocess.run(
        [sys.executable, "-m", "specwatch", *command],
        capture_output=True,
        check=True,
    )
    changes = []
    for line in done.stderr.decode().splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "zone_changed":
            event.pop("timestamp", None)
            changes.append(event)
    document = json.loads(done.stdout)
    zones = sorted(
        [row["model"], row["ctx_bucket"], row["task"], row["zone"]] for row in document["slices"]
    ) + sorted([row["model"], "all", "all", row["zone"]] for row in document["models"])
    return {"zone_changed": changes, "zones": zones}
