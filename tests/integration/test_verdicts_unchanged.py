"""What `specwatch replay` judges on three committed cycle logs (tests/fixtures/verdicts) stays
what it was when expected.json was written: every zone change (when, from what to what, the
evidence and the window that decided) and every final zone. A change that is meant to make the
analysis cheaper must leave all of it as it was; one meant to change a verdict rewrites
expected.json with make.py and says why."""

from __future__ import annotations

import json

import pytest

from tests.support import ROOT
from tests.support.verdicts import LOGS, verdicts

FIXTURES = ROOT / "tests" / "fixtures" / "verdicts"


@pytest.mark.parametrize("name", LOGS)
def test_replay_gives_the_verdicts_it_gave(name: str) -> None:
    expected = json.loads((FIXTURES / "expected.json").read_text())[name]
    got = verdicts(FIXTURES / name)
    assert got["zones"] == expected["zones"]
    assert len(got["zone_changed"]) == len(expected["zone_changed"])
    for seen, wanted in zip(got["zone_changed"], expected["zone_changed"], strict=True):
        assert seen == wanted


def test_the_logs_hold_turns_of_every_kind() -> None:
    """The fixture would hold nothing fixed if its logs made no verdicts: greens, reds and
    yellows, entered from insufficient and from one another, on acceptance and on the gain."""
    expected = json.loads((FIXTURES / "expected.json").read_text())
    turns = {
        (event["previous"], event["zone"])
        for log in expected.values()
        for event in log["zone_changed"]
    }
    assert {("insufficient", "yellow"), ("yellow", "green"), ("green", "red")} <= turns
    methods = {event["gain_method"] for event in expected["gain.jsonl.gz"]["zone_changed"]}
    assert "measured" in methods
