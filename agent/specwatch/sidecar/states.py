"""What the sidecar keeps on disk under `--state-dir`: the drift detector's baselines (so a
restart does not start blind) and each speculative config's sums (so a restart with another
config is compared with the one before). Without a state directory, nothing is kept."""

from __future__ import annotations

from collections.abc import Callable

import structlog

from specwatch.analysis.analyzer import Analyzer
from specwatch.analysis.compare.changes import ConfigHistory
from specwatch.settings import Settings
from specwatch.store.state import StateFile
from specwatch.upstream.configwatch import ConfigWatch

log = structlog.get_logger("specwatch")

SAVE_EVERY_SECONDS = 60.0
CONFIG_STATE_MAX_AGE = 90 * 86400.0  # a config's sums, and a change, are kept this long


class States:
    """The drift state and the config history, restored at start and saved as the sidecar runs."""

    def __init__(self, settings: Settings, analyzer: Analyzer, clock: Callable[[], float]) -> None:
        self._settings = settings
        self._analyzer = analyzer
        self._clock = clock
        folder = settings.state_dir
        self._drift = StateFile(folder, "drift") if folder else None
        self._config = StateFile(folder, "config") if folder else None
        self.history: ConfigHistory | None = None  # once the config is resolved
        self._saved = clock()

    def restore_drift(self) -> None:
        if self._drift is None:
            return
        drift = self._settings.drift
        max_age = (drift.baseline_buckets + drift.gap_buckets) * drift.bucket_seconds
        data = self._drift.load(self._clock(), max_age)
        if data is None:
            return
        try:
            self._analyzer.restore_drift(data)
        except ValueError as error:
            log.warning("state_fresh", path=str(self._drift.path), reason=f"corrupt: {error}")
            return
        log.info("state_restored", path=str(self._drift.path))

    async def config_known(self, config: ConfigWatch) -> None:
        """Once vLLM's version is known, the config's history, with what earlier runs kept."""
        if self.history is not None:
            return
        await config.resolved.wait()
        self.history = ConfigHistory(config.config, self._settings)
        if self._config is None:
            return
        data = self._config.load(self._clock(), CONFIG_STATE_MAX_AGE)
        if data is None:
            return
        try:
            self.history.restore(data, self._clock())
        except ValueError as error:
            log.warning("state_fresh", path=str(self._config.path), reason=f"corrupt: {error}")

    def save_when_due(self) -> None:
        if self._clock() - self._saved >= SAVE_EVERY_SECONDS:
            self.save()

    def save(self) -> None:
        self._saved = self._clock()
        if self._drift is None:
            return
        try:
            self._drift.save(self._analyzer.drift_state(), self._clock())
            if self._config is not None and self.history is not None:
                live = self._analyzer.since_start_sums()
                timed = self._analyzer.since_start_timed()
                self._config.save(self.history.state(live, timed), self._clock())
        except OSError as error:  # a full disk costs the saved baseline, not the sidecar
            log.warning("state_save_failed", path=str(self._drift.path), error=repr(error))
