"""The verdicts `specwatch replay` gives a cycle log, in a form to compare across commits
(tests/fixtures/verdicts/make.py writes them; tests/integration/test_verdicts_unchanged.py holds
them fixed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.analysis import replay_zone_changes

LOGS = ("anchor.jsonl.gz", "gain.jsonl.gz", "overdispersed.jsonl.gz")


def verdicts(path: Path) -> dict[str, Any]:
    """Every zone change in order, as logged (but its wall-clock timestamp), and each slice's
    and model's zone at the end, as a user of `replay --json --verbose` sees them."""
    document, changes = replay_zone_changes(path)
    for event in changes:
        event.pop("timestamp", None)
    zones = sorted(
        [row["model"], row["ctx_bucket"], row["task"], row["zone"]] for row in document["slices"]
    ) + sorted([row["model"], "all", "all", row["zone"]] for row in document["models"])
    return {"zone_changed": changes, "zones": zones}
