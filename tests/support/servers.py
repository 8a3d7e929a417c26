"""Real Prometheus and Alertmanager on loopback for the e2e tests (Debian packages)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from specwatch.upstream.child import free_port

from tests.support.http import eventually
from tests.support.tools import binary


@contextlib.contextmanager
def started(argv: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        process.terminate()
        process.wait(timeout=20)


INTERVAL_SECONDS = 1  # Prometheus' scrape and rule-evaluation interval in the tests


@contextlib.contextmanager
def prometheus(
    workdir: Path, rule_files: list[str], targets: list[str], alertmanager: str | None = None
) -> Iterator[str]:
    """Prometheus scraping `targets` as job `specwatch` every second; yields its base URL."""
    port = free_port()
    config: dict[str, Any] = {
        "global": {
            "scrape_interval": f"{INTERVAL_SECONDS}s",
            "evaluation_interval": f"{INTERVAL_SECONDS}s",
        },
        "rule_files": rule_files,
        "scrape_configs": [{"job_name": "specwatch", "static_configs": [{"targets": targets}]}],
    }
    if alertmanager is not None:
        config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]}
    (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
    argv = [
        binary("prometheus"), f"--config.file={workdir / 'prometheus.yml'}",
        f"--storage.tsdb.path={workdir / 'prom-data'}", f"--web.listen-address=127.0.0.1:{port}",
    ]  # fmt: skip
    with started(argv, workdir / "prometheus.log"):
        yield f"http://127.0.0.1:{port}"


async def scraping(prom: str, seconds: float = 30.0) -> None:
    """Until Prometheus has scraped every target once (`up` is 1 for each): a series is first
    seen then, not after its discovery throttle (~5 s)."""

    async def up() -> bool:
        try:
            result = api(prom, "/api/v1/query", query="min(up)")["data"]["result"]
        except OSError:
            return False
        return bool(result) and float(result[0]["value"][1]) == 1.0

    await eventually(up, seconds=seconds, every=0.2)


def api(base: str, path: str, **params: str | float) -> Any:
    url = f"{base}{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.load(response)
