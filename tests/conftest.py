"""Shared test fixtures: the real vLLM captures, a simulator and a sidecar on loopback ports."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import structlog
from hypothesis import HealthCheck, settings
from specwatch.runtime import Sidecar
from specwatch.sim.acceptance import CostModel
from specwatch.sim.server import SimConfig, SimServer

from tests.support import CAPTURES
from tests.support.http import serve, sidecar_settings

# Wall-clock health checks and deadlines fail on a cold or busy machine, not on a bug: off.
settings.register_profile("specwatch", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("specwatch")


@pytest.fixture(autouse=True)
def _structlog_defaults() -> None:
    """A command run in one test configures structlog for the process: undo it for the next."""
    structlog.reset_defaults()


@pytest.fixture(scope="session")
def captures() -> Path:
    assert CAPTURES.is_dir(), f"the vLLM captures are missing: {CAPTURES}"
    return CAPTURES


@pytest.fixture
def sim_config() -> SimConfig:
    """No sleeping: fast and deterministic. Tests that need latency override this."""
    return SimConfig(sleep=False, cost=CostModel(target_step_ms=0.0, prefill_ms_per_token=0.0))


@pytest.fixture
async def sim(sim_config: SimConfig) -> AsyncIterator[tuple[SimServer, str]]:
    server = SimServer(sim_config)
    runner, url = await serve(server.app())
    yield server, url
    await runner.cleanup()


@pytest.fixture
async def sidecar(sim: tuple[SimServer, str]) -> AsyncIterator[Sidecar]:
    car = Sidecar(sidecar_settings(sim[1]))
    await car.start()
    yield car
    await car.stop()
