"""Every metric a generated rule reads is exported by specwatch or recorded by a rule."""

from __future__ import annotations

import json
import re

import aiohttp
import yaml
from prometheus_client.parser import text_string_to_metric_families
from specwatch.gen.dashboards import panel_queries, render_dashboards
from specwatch.gen.writer import ALERTING_RULES, RECORDING_RULES
from specwatch.settings import load_settings
from specwatch.sidecar.sidecar import Sidecar
from specwatch.sim.server import SimServer

from tests.support.http import post, sidecar_settings
from tests.support.promtool import generated

RECORDED = re.compile(r"\b[a-z_]+:[a-z_]+:[a-z0-9_]+\b")
EXPORTED = re.compile(r"(?<![\w:])specwatch_[a-z_]+(?![\w:])")  # not inside a recorded name


async def exported_names(sidecar: Sidecar, proxy: str, admin: str) -> set[str]:
    """Every family and sample name on a live /metrics after traffic and a scrape of vLLM."""
    async with aiohttp.ClientSession() as session:
        for i in range(3):
            await post(session, proxy + "/v1/completions", {"prompt": f"p {i}", "max_tokens": 20})
        await sidecar.drained()
        async with session.post(proxy + "/v1/completions", data=b"not json") as response:
            await response.read()  # a request specwatch cannot parse: a counted parse error
        await sidecar.drained()
        async with session.get(admin + "/metrics") as response:
            text = await response.text()
    names = set()
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        if family.type == "counter":
            names.add(family.name + "_total")
        names.update(sample.name for sample in family.samples)
    return names


async def test_every_metric_a_rule_or_dashboard_reads_exists(sim: tuple[SimServer, str]) -> None:
    # A/B (to the same simulator, 0%), the shadow check and a price: their series exist too.
    settings = sidecar_settings(
        sim[1],
        ab={"baseline_upstream": sim[1]},
        shadow={"fraction": 0.5},
        cost={"price_per_accelerator_hour": 2.0},
    )
    sidecar = Sidecar(settings)
    await sidecar.start()
    proxy = f"http://127.0.0.1:{sidecar.ports.proxy}"
    admin = f"http://127.0.0.1:{sidecar.ports.admin}"
    try:
        exported = await exported_names(sidecar, proxy, admin)
    finally:
        await sidecar.stop()
    files = generated()
    recording = yaml.safe_load(files[RECORDING_RULES])["groups"]
    alerting = yaml.safe_load(files[ALERTING_RULES])["groups"]
    recorded = {rule["record"] for group in recording for rule in group["rules"]}
    used_recorded: set[str] = set()
    used_exported: set[str] = set()
    for group in recording + alerting:
        for rule in group["rules"]:
            used_recorded |= set(RECORDED.findall(rule["expr"]))
            used_exported |= set(EXPORTED.findall(rule["expr"]))
            for annotation in rule.get("annotations", {}).values():
                used_recorded |= set(RECORDED.findall(annotation))
    for data in render_dashboards(load_settings()).values():
        for _title, expr in panel_queries(json.loads(data)):
            used_recorded |= set(RECORDED.findall(expr))
            used_exported |= set(EXPORTED.findall(expr))
    assert used_recorded, "the pattern found nothing: the test would prove nothing"
    assert set() == used_recorded - recorded
    assert set() == used_exported - exported
