"""The config a running sidecar reports, resolved once: the speculative config it was given (or
read off vLLM's command line), vLLM's version from `GET /version` (llama.cpp's build from
`/props`), and the engine from `/v1/models`' `owned_by`.

The config labels every counter, so it is known before the first request is analysed: the
analysis' intake waits for `resolved` (requests are relayed meanwhile; their observations wait
in the bounded queue). vLLM answers `/version` as soon as it serves requests; one that never
does (an older build: a 404; or one that is down for `timeout` seconds) leaves the version
unknown, logged. `timeout` None waits as long as it takes: `serve`'s own vLLM, whose load
time has no bound and which serves nothing before it answers. The config is one per process:
a vLLM that later reports another version (a proxy beside a container that was replaced under
it) is logged and counted (`vllm_version_changed`), and the sidecar should be restarted with
it, as a pod is.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import aiohttp
import structlog

from specwatch.core.records import SpecConfig
from specwatch.engines.detect import LLAMACPP, VLLM, owner_engine
from specwatch.upstream.models import listed_models
from specwatch.upstream.specconfig import read_build_info, read_version, spec_config

log = structlog.get_logger("specwatch.config")

VERSION_PATH = "/version"
PROPS_PATH = "/props"  # llama.cpp's server: no /version, its build in /props
RECHECK_SECONDS = 60.0
# an engine that is up but not serving yet: llama.cpp's server answers every path so while it
# loads its model (server-http.cpp, "Loading model"); asked again, not taken for an answer
_LOADING = 503


async def _get(session: aiohttp.ClientSession, url: str) -> tuple[int, bytes] | None:
    """(status, body), or None when the engine cannot be reached."""
    try:
        async with session.get(url) as response:
            return response.status, await response.read()
    except (aiohttp.ClientError, TimeoutError, OSError):
        return None


class ConfigWatch:
    def __init__(
        self,
        upstream: str,
        label: Callable[[str | None, str], SpecConfig],
        timeout: float | None = 120.0,
        clock: Callable[[], float] = time.monotonic,
        engine: str = VLLM,
    ) -> None:
        """`label`: the run's config for an engine's version (None: unknown) and the engine,
        everything else in it fixed at start (run_label)."""
        self._url = upstream.rstrip("/") + VERSION_PATH
        self._props = upstream.rstrip("/") + PROPS_PATH
        self._upstream = upstream
        self._label = label
        self._timeout, self._clock = timeout, clock
        self.config: SpecConfig = label(None, engine)
        self.resolved = asyncio.Event()
        self.version_changes = 0

    async def _version(self, session: aiohttp.ClientSession) -> tuple[bool, str | None, str | None]:
        """(answered, version, engine): answered is False while the engine cannot be reached
        or is still loading (503), engine None when it did not say. vLLM answers /version;
        llama.cpp's server has none, and names its build in /props."""
        version = await _get(session, self._url)
        if version is None or version[0] == _LOADING:
            return False, None, None
        if version[0] == 200:
            return True, read_version(version[1]), VLLM
        props = await _get(session, self._props)
        if props is not None and props[0] == _LOADING:
            return False, None, None
        build = read_build_info(props[1]) if props is not None and props[0] == 200 else None
        if build is not None:
            return True, build, LLAMACPP
        return True, None, None  # an older vLLM without /version: known to be unknown

    async def _owner(self, session: aiohttp.ClientSession) -> str | None:
        """The engine /v1/models names (`owned_by`): SGLang and TensorRT-LLM may answer
        /version as vLLM does; what they own is theirs alone."""
        return owner_engine(await listed_models(session, self._upstream))

    async def run(self) -> None:
        timeout = aiohttp.ClientTimeout(total=5.0)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            deadline = None if self._timeout is None else self._clock() + self._timeout
            while not self.resolved.is_set():
                answered, version, engine = await self._version(session)
                if answered and engine != LLAMACPP:
                    engine = await self._owner(session) or engine
                if answered or (deadline is not None and self._clock() >= deadline):
                    self._resolve(version, engine, answered)
                    break
                await asyncio.sleep(1.0)
            while True:
                await asyncio.sleep(RECHECK_SECONDS)
                answered, version, _ = await self._version(session)
                if answered and version and version != self.config.vllm_version:
                    self.version_changes += 1
                    log.warning(
                        "vllm_version_changed",
                        config=self.config.id,
                        reported=self.config.vllm_version,
                        now=version,
                        action="restart specwatch with vLLM: its counters carry the config "
                        "it started with",
                    )

    def _resolve(self, version: str | None, engine: str | None, answered: bool) -> None:
        self.config = self._label(version, engine or self.config.engine)
        self.resolved.set()
        log.info(
            "config_resolved",
            **self.config.as_dict(),
            **({} if answered else {"note": f"vLLM did not answer {VERSION_PATH} in time"}),
        )


def run_label(
    speculative: dict[str, Any] | None, track: str, target: str | None
) -> Callable[[str | None, str], SpecConfig]:
    """The run's label, built once at start: the speculative config, the pod's track and the
    model vLLM serves; only the engine and its version are learnt later (`/version`)."""

    def label(version: str | None, engine: str) -> SpecConfig:
        return spec_config(speculative, version, track, target, engine)

    return label
