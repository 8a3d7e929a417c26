"""The Alertmanager config's receivers as the on-call reads them: each field of a Slack or
PagerDuty config rendered by amtool, with specwatch.tmpl, on the data a real Alertmanager hands
its templates for a red slice (tests/fixtures/alertmanager-0.25, tools/capture_alertmanager.py).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from specwatch.gen import promql as Q
from specwatch.gen.alertmanager import TEMPLATE_FILE, TEMPLATES, alertmanager_config
from specwatch.settings import Settings, load_settings

from tests.support import ROOT
from tests.support.tools import binary

RED = json.loads((ROOT / "tests/fixtures/alertmanager-0.25/webhook-red.json").read_text())
# the event severities PagerDuty's Events API v2 accepts
PAGERDUTY_SEVERITIES = {"critical", "error", "warning", "info"}


class Amtool:
    """Renders a config field's template text as Alertmanager would, on `data`."""

    def __init__(self, tmp_path: Path, data: dict[str, Any]) -> None:
        self.glob = tmp_path / TEMPLATE_FILE
        self.glob.write_text(TEMPLATES)
        self.data = tmp_path / "data.json"
        self.data.write_text(json.dumps(data))

    def __call__(self, text: str) -> str:
        done = subprocess.run(
            [binary("amtool"), "template", "render", f"--template.glob={self.glob}",
             f"--template.text={text}", f"--template.data={self.data}"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert 0 == done.returncode, done.stdout + done.stderr
        return done.stdout.removesuffix("\n")


def receivers(settings: Settings) -> dict[str, dict[str, Any]]:
    config = alertmanager_config(settings, Q.Windows(1.0))
    return {receiver["name"]: receiver for receiver in config["receivers"]}


def test_a_red_slice_pages_with_the_slice_its_zone_and_what_to_do(tmp_path: Path) -> None:
    render = Amtool(tmp_path, RED)
    words = RED["commonAnnotations"]
    (page,) = receivers(load_settings())["specwatch-critical"]["pagerduty_configs"]
    assert "critical" == page["severity"]
    assert f"SpecDecodeSliceRed: {words['summary']}" == render(page["description"])
    details = {key: render(text) for key, text in page["details"].items()}
    assert {
        "slice": "model=sim-llama ctx_bucket=0-512 task=code instance=pod-a:9400",
        "zone": "red",
        "description": words["description"],
        "runbook": words["runbook"],
    } == details
    assert "links" not in page  # no runbook published: no link made up


def test_its_slack_message_says_the_same_and_what_to_do(tmp_path: Path) -> None:
    render = Amtool(tmp_path, RED)
    words = RED["commonAnnotations"]
    (message,) = receivers(load_settings())["specwatch-critical"]["slack_configs"]
    assert "#specwatch-page" == message["channel"]
    assert (
        "[FIRING:1] SpecDecodeSliceRed (red) model=sim-llama ctx_bucket=0-512 task=code "
        "instance=pod-a:9400" == render(message["title"])
    )
    text = render(message["text"])
    assert text.startswith(f"*{words['summary']}*\n{words['description']}\n")
    assert "zone: red · slice: sim-llama / 0-512 / code\n" in text
    assert text.endswith(f"what to do:\n{words['runbook']}")


def test_with_a_published_runbook_the_page_and_the_message_link_to_it(tmp_path: Path) -> None:
    url = "https://wiki.example.org/specwatch/runbooks#specdecodeslicered"
    data = {**RED, "commonAnnotations": {**RED["commonAnnotations"], "runbook_url": url}}
    data["alerts"] = [{**a, "annotations": {**a["annotations"], "runbook_url": url}}
                      for a in RED["alerts"]]  # fmt: skip
    render = Amtool(tmp_path, data)
    settings = load_settings(alerts={"runbook_base_url": "https://wiki.example.org/specwatch"})
    critical = receivers(settings)["specwatch-critical"]
    (page,) = critical["pagerduty_configs"]
    assert url == render(page["details"]["runbook_url"])
    assert [{"href": url, "text": "runbook"}] == [
        {key: render(value) for key, value in link.items()} for link in page["links"]
    ]
    (message,) = critical["slack_configs"]
    assert render(message["text"]).endswith(f"runbook: {url}")


@pytest.mark.parametrize("info", ["#specwatch-info", None])
def test_every_message_is_resolved_too_and_info_goes_to_its_channel_or_nowhere(
    info: str | None,
) -> None:
    found = receivers(load_settings(alerts={"slack_channel_info": info}))
    channels = {
        name: [c["channel"] for c in receiver.get("slack_configs", [])]
        for name, receiver in found.items()
    }
    assert {
        "specwatch-critical": ["#specwatch-page"],
        "specwatch-warning": ["#specwatch"],
        "specwatch-info": [] if info is None else [info],
    } == channels
    configs = [c for r in found.values() for key in ("slack_configs", "pagerduty_configs")
               for c in r.get(key, [])]  # fmt: skip
    assert len(configs) == 3 + (info is not None)
    assert all(c["send_resolved"] is True for c in configs)
    for receiver in found.values():
        for page in receiver.get("pagerduty_configs", []):
            assert page["severity"] in PAGERDUTY_SEVERITIES


def test_a_yellow_slice_and_any_other_alert_name_their_zone(tmp_path: Path) -> None:
    zone = '{{ template "specwatch.zone" . }}'
    for alertname, severity, expected in (
        ("SpecDecodeSliceYellow", "warning", "yellow"),
        ("SpecDecodeDrift", "info", "info"),
    ):
        common = {**RED["commonLabels"], "alertname": alertname, "severity": severity}
        data = {**RED, "commonLabels": common}
        assert expected == Amtool(tmp_path, data)(zone)


def matches(matchers: list[str], labels: dict[str, str]) -> bool:
    """Alertmanager's equality matchers (`name="value"`, the only kind the config writes)."""
    pairs = [re.fullmatch(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"', m) for m in matchers]
    assert all(pairs), matchers
    return all(labels.get(p[1]) == p[2] for p in pairs if p is not None)


def test_a_slices_warnings_are_held_back_while_it_has_a_critical() -> None:
    """The inhibit rule, read as Alertmanager reads it, on the labels the generated alerts
    carry: a red slice (critical) silences its yellow (warning), not another slice's."""
    (rule,) = alertmanager_config(load_settings(), Q.Windows(1.0))["inhibit_rules"]
    red = {**RED["commonLabels"]}
    yellow = {**red, "alertname": "SpecDecodeSliceYellow", "severity": "warning"}
    other = {**yellow, "task": "chat"}
    assert matches(rule["source_matchers"], red)
    assert not matches(rule["source_matchers"], yellow)
    assert matches(rule["target_matchers"], yellow)
    assert not matches(rule["target_matchers"], red)
    # a label neither carries is equal, as Alertmanager reads `equal`
    assert all(red.get(label) == yellow.get(label) for label in rule["equal"])
    assert any(red.get(label) != other.get(label) for label in rule["equal"])
    assert {"model", "ctx_bucket", "task"} <= set(rule["equal"])
