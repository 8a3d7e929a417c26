"""A/B rollout in the proxy: which upstream serves a request, and the rollback switch.

A request's key (the `ab.key_header` header, else its request id) is hashed with SHA-256 to a
point in [0, 100); below `ab.baseline_percent` it goes to the baseline upstream (no
speculation). The same key always lands on the same side, whatever the process or the restart.

Rollback sends every request to the baseline from the next request on. Three sources can hold
it: the admin endpoint, the presence of a flag file, and auto-rollback (a model's overall zone
red for `ab.auto_rollback_seconds`). Traffic is rolled back while any source holds it. Every
change of a source is logged and counted (the A/B switches counter, by `to` and `source`).
Auto-rollback never undoes itself: with all traffic on the baseline, the speculative side has
no evidence to recover on; an operator rolls forward (POST /admin/rollback {"rollback": false}
clears the admin and auto sources).

The admin endpoints that read and switch it (GET /admin/ab, POST /admin/rollback) are the
admin port's, in sidecar/admin.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import structlog

from specwatch import conventions as C
from specwatch.core.records import ABState
from specwatch.settings import ABSettings

log = structlog.get_logger("specwatch.ab")


def point(key: str) -> float:
    """The key's place in [0, 100): uniform, and stable across processes and versions."""
    digest = hashlib.sha256(key.encode("utf-8", errors="surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64 * 100.0


class ABRouter:
    """Per request: the variant and its upstream; holds the rollback sources."""

    def __init__(
        self, cfg: ABSettings, spec_upstream: str, clock: Callable[[], float] = time.time
    ) -> None:
        self.cfg = cfg
        self.enabled = cfg.baseline_upstream is not None
        self.spec_upstream = spec_upstream
        self.baseline_upstream = cfg.baseline_upstream or spec_upstream
        self._clock = clock
        self._held: dict[str, str | None] = dict.fromkeys(C.ABSource)  # source -> reason
        self.switches: Counter[tuple[str, str]] = Counter()  # (to, source)
        self.changed_at: float | None = None
        self._red_since: dict[str, float] = {}

    @property
    def rolled_back(self) -> bool:
        return any(reason is not None for reason in self._held.values())

    @property
    def held_by(self) -> dict[str, str]:
        return {str(source): reason for source, reason in self._held.items() if reason is not None}

    def variant(self, key: str) -> str:
        if not self.enabled:
            return C.VARIANT_SPEC
        if self.rolled_back or point(key) < self.cfg.baseline_percent:
            return C.VARIANT_BASELINE
        return C.VARIANT_SPEC

    def upstream(self, variant: str) -> str:
        return self.baseline_upstream if variant == C.VARIANT_BASELINE else self.spec_upstream

    def hold(self, source: str, on: bool, reason: str) -> bool:
        """Set one source; True when it changed. Logged and counted on every change."""
        if source not in self._held:
            raise ValueError(f"unknown rollback source {source!r}")
        if (self._held[source] is not None) == on:
            return False
        before = self.rolled_back
        self._held[source] = reason if on else None
        to = C.Switch.ROLLED_BACK if on else C.Switch.ROLLED_FORWARD
        self.switches[to, source] += 1
        self.changed_at = self._clock()
        log.warning(
            "ab_rollback" if on else "ab_roll_forward",
            source=source,
            reason=reason,
            rolled_back=self.rolled_back,
            traffic_changed=before != self.rolled_back,
        )
        return True

    def check_zones(self, red_models: set[str], now: float) -> None:
        """Auto-rollback: a model whose overall zone has been red for the configured time."""
        limit = self.cfg.auto_rollback_seconds
        for model in list(self._red_since):
            if model not in red_models:
                del self._red_since[model]
        for model in red_models:
            since = self._red_since.setdefault(model, now)
            if limit is not None and self.enabled and now - since >= limit:
                reason = f"{model}: overall zone red for {now - since:.0f} s"
                self.hold(C.ABSource.AUTO, True, reason)

    async def watch_file(self, path: Path) -> None:
        """Rolled back while `path` exists (polled; survives the file appearing later)."""
        while True:
            exists = await asyncio.to_thread(path.exists)
            self.hold(C.ABSource.FILE, exists, f"flag file {path}")
            await asyncio.sleep(self.cfg.rollback_poll_seconds)

    def snapshot(self) -> ABState:
        switches: dict[tuple[str, str], int] = {
            (to, source): self.switches[to, source] for to in C.Switch for source in C.ABSource
        }
        return ABState(
            enabled=self.enabled,
            baseline_percent=self.cfg.baseline_percent,
            key_header=self.cfg.key_header,
            rolled_back=self.rolled_back,
            held_by=self.held_by,
            changed_at=self.changed_at,
            switches=switches,
        )
