"""State that survives restarts: one JSON file per kind under --state-dir, written atomically.

A missing, stale or corrupt file gives one clear log line and a fresh start, never a crash.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import orjson
import structlog

log = structlog.get_logger("specwatch.state")


class StateFile:
    def __init__(self, directory: Path, name: str) -> None:
        self.path = directory / f"{name}.json"

    def save(self, state: Any, now: float) -> None:
        """Write to a temporary file in the same directory, fsync, then rename over the old."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = orjson.dumps({"saved_at": now, "state": state})
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def load(self, now: float, max_age: float) -> Any | None:
        """The saved state, or None (with one log line saying why) when there is none to use."""
        try:
            document = orjson.loads(self.path.read_bytes())
        except FileNotFoundError:
            log.info("state_fresh", path=str(self.path), reason="no saved state")
            return None
        except (OSError, orjson.JSONDecodeError) as error:
            log.warning("state_fresh", path=str(self.path), reason=f"unreadable: {error}")
            return None
        if not isinstance(document, dict) or not isinstance(document.get("saved_at"), int | float):
            log.warning("state_fresh", path=str(self.path), reason="not a specwatch state file")
            return None
        age = now - document["saved_at"]
        if age > max_age:
            log.info("state_fresh", path=str(self.path), reason=f"stale: saved {age:.0f} s ago")
            return None
        return document.get("state")
