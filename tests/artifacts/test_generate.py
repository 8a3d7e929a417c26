"""The generated rules and Alertmanager config: committed, valid, tested, consistent."""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from specwatch import conventions as C
from specwatch.cli.main import main
from specwatch.gen.dashboards import panel_queries
from specwatch.gen.promql import HEADER
from specwatch.gen.writer import (
    ALERTING_RULES,
    ALERTMANAGER,
    PROMETHEUS_RULE,
    RECORDING_RULES,
    TEMPLATE,
    render,
)
from specwatch.settings import load_settings

from tests.support import ROOT
from tests.support.promtool import changed_rules, closure, generated, pruned, read_yaml
from tests.support.tools import binary

ALERTS = ROOT / "alerts"


def run(*argv: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, check=False)


@pytest.fixture
def written(tmp_path: Path) -> Path:
    """The files the generator writes now, under tmp_path as in the repository (the tools
    check what the generator writes; test_the_committed_files_are_what_generate_writes holds
    the committed copies equal to it)."""
    for name, data in generated().items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    return tmp_path


def test_the_committed_files_are_what_generate_writes() -> None:
    for name, data in generated().items():
        assert data == (ROOT / name).read_bytes(), f"{name}: run `specwatch generate`"


def test_generate_check_fails_on_a_stale_file_and_says_what_to_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert 0 == main(["generate", "--out", str(tmp_path)])
    assert 0 == main(["generate", "--out", str(tmp_path), "--check"])
    (tmp_path / RECORDING_RULES).write_text("groups: []\n")
    assert 1 == main(["generate", "--out", str(tmp_path), "--check"])
    err = capsys.readouterr().err
    assert f"{RECORDING_RULES} is out of date" in err
    assert "run `specwatch generate`" in err


def test_an_out_directory_that_cannot_be_written_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file where the directory should be (a mistyped --out): once a traceback."""
    (tmp_path / "file").write_text("")
    assert 1 == main(["generate", "--out", str(tmp_path / "file")])
    err = capsys.readouterr().err
    assert f"specwatch: generate: cannot write under '{tmp_path / 'file'}'" in err
    assert "Traceback" not in err


def test_every_file_says_it_is_generated() -> None:
    for name, data in generated().items():
        if name.endswith(".json"):  # JSON has no comments: the dashboard's description says it
            assert HEADER in json.loads(data)["description"], name
        else:
            assert HEADER.encode() in data.splitlines()[0], name


def test_time_scale_divides_every_window_and_for(tmp_path: Path) -> None:
    files = render(load_settings(), time_scale=60)
    recording = files[RECORDING_RULES].decode()
    alerting = files[ALERTING_RULES].decode()
    assert "rate(specwatch_accepted_tokens_total[5s])" in recording
    assert "[1h]" not in recording
    assert "offset 5s" in recording  # a window's bounds read series at least that old
    assert "[1m])" in alerting  # no yellow within the hour after a red
    assert "[30s]))" in recording  # the canary's gain per token over 30 minutes
    assert "[30m]" not in recording
    assert "for: 5s" in alerting
    # names keep their production windows, so dashboards and alerts read the same series
    assert "slice:specwatch_acceptance_alpha:ratio_rate1h" in alerting


def test_an_objective_whose_burn_rate_cannot_be_reached_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import os

    os.environ["SPECWATCH_ALERTS__SLO_TARGET"] = "0.9"
    try:
        assert 2 == main(["generate", "--check"])
    finally:
        del os.environ["SPECWATCH_ALERTS__SLO_TARGET"]
    assert "can never be reached" in capsys.readouterr().err


def test_promtool_accepts_every_rule_file(written: Path) -> None:
    promtool = binary("promtool")
    for name in (RECORDING_RULES, ALERTING_RULES):
        result = run(promtool, "check", "rules", name, cwd=written)
        assert 0 == result.returncode, result.stdout + result.stderr


def test_the_prometheusrule_carries_exactly_the_generated_groups() -> None:
    files = generated()
    operator = read_yaml(files[PROMETHEUS_RULE])
    recording = read_yaml(files[RECORDING_RULES])["groups"]
    alerting = read_yaml(files[ALERTING_RULES])["groups"]
    assert ("PrometheusRule", recording + alerting) == (
        operator["kind"],
        operator["spec"]["groups"],
    )


def test_the_hand_written_promtool_tests_pass(tmp_path: Path) -> None:
    promtool = binary("promtool")
    tests = sorted((ALERTS / "tests").glob("*.test.yml"))
    assert len(tests) >= 4
    # one promtool per file, side by side, each on the generated rules its alerts and
    # expressions reach (tests/support/promtool.py says why); many times longer on a machine
    # busy with other work, which the deadline allows: it only stops a hang
    running = []
    files_now = generated()
    changed = changed_rules(files_now)  # under mutation testing: the cases a mutant can fail
    for path in tests:
        copy = pruned(path, tmp_path / path.stem, files_now, changed)
        if copy is None:
            continue
        running.append((path.name, subprocess.Popen([promtool, "test", "rules", copy.name],
                        cwd=copy.parent, text=True, stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT)))  # fmt: skip
    try:
        for name, process in running:
            output, _ = process.communicate(timeout=2400)
            assert 0 == process.returncode, f"{name}:\n{output}"
    finally:  # one failed: the others are not left running
        for _, process in running:
            if process.poll() is None:
                process.kill()
                process.wait()


def test_a_promtool_test_runs_on_every_rule_its_alerts_read() -> None:
    # the pruning may only drop what cannot matter: the yellow alert reaches the red one through
    # the ALERTS series, and the recorded gates through both; the latency SLO's rules it cannot
    names = (RECORDING_RULES, ALERTING_RULES)
    files = [read_yaml((ROOT / name).read_text()) for name in names]
    reached = closure(files, {"SpecDecodeSliceYellow"})
    assert {"SpecDecodeSliceRed", "slice:specwatch_zone_evidence_gate:robust1h"} <= reached
    assert not any(name.startswith("slo:sli_error") for name in reached)


def test_every_alert_has_a_positive_and_a_negative_promtool_case() -> None:
    alerts = [r["alert"] for g in read_yaml((ROOT / ALERTING_RULES).read_text())["groups"]
              for r in g["rules"]]  # fmt: skip
    positive: set[str] = set()
    negative: set[str] = set()
    for path in (ALERTS / "tests").glob("*.test.yml"):
        for case in read_yaml(path.read_text())["tests"]:
            for check in case.get("alert_rule_test", []):
                (positive if check["exp_alerts"] else negative).add(check["alertname"])
    assert set(alerts) <= positive, set(alerts) - positive
    assert set(alerts) <= negative, set(alerts) - negative


def test_every_alert_has_severity_summary_description_and_its_runbook(written: Path) -> None:
    """As shipped, no link is made up: each alert carries the steps of its runbook section."""
    runbooks = (written / "alerts" / "runbooks.md").read_text()
    for group in read_yaml((written / ALERTING_RULES).read_text())["groups"]:
        for rule in group["rules"]:
            assert re.fullmatch(r"SpecDecode[A-Z][A-Za-z]+", rule["alert"])
            assert rule["labels"]["severity"] in {"critical", "warning", "info"}
            annotations = rule["annotations"]
            assert {"summary", "description", "runbook"} == set(annotations) - {"value", "cause"}
            if "cause" in annotations:  # the zone alerts: each cause has its runbook section
                assert "#cause-{{ $labels.cause }}" in annotations["cause"]
                for kind in C.CauseKind:
                    assert f'<a id="cause-{kind}"></a>\n## {kind}\n' in runbooks
            section = runbooks[runbooks.index(f"## {rule['alert']}\n") :]
            steps = section[section.index("**What to do.**") :].split("**The rule")[0]
            assert annotations["runbook"] == steps.removeprefix("**What to do.**").strip()


def test_with_a_published_runbook_every_alert_links_to_its_section() -> None:
    base = "https://wiki.example.org/specwatch/runbooks"
    files = render(load_settings(alerts={"runbook_base_url": base}))
    runbooks = (ALERTS / "runbooks.md").read_text()
    for group in read_yaml(files[ALERTING_RULES])["groups"]:
        for rule in group["rules"]:
            url = rule["annotations"]["runbook_url"]
            assert url == f"{base}#{rule['alert'].lower()}"
            assert f'<a id="{rule["alert"].lower()}"></a>' in runbooks
    config = files[ALERTMANAGER].decode()
    assert "{{ .CommonAnnotations.runbook_url }}" in config
    assert "runbook_url" not in generated()[ALERTMANAGER].decode()


def test_amtool_accepts_the_alertmanager_config(written: Path) -> None:
    result = run(binary("amtool"), "check-config", ALERTMANAGER, cwd=written)
    assert 0 == result.returncode, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("labels", "receiver"),
    [
        ("severity=critical", "specwatch-critical"),
        ("severity=warning", "specwatch-warning"),
        ("severity=info", "specwatch-info"),
        ("severity=other", "specwatch-warning"),
    ],
)
def test_each_severity_is_routed_to_its_receiver(labels: str, receiver: str, written: Path) -> None:
    result = run(
        binary("amtool"), "config", "routes", "test", "--config.file", ALERTMANAGER,
        f"--verify.receivers={receiver}", labels, "model=m", "ctx_bucket=0-512", "task=code",
        cwd=written,
    )  # fmt: skip
    assert 0 == result.returncode, result.stdout + result.stderr


def test_the_slack_and_pagerduty_templates_render(written: Path) -> None:
    amtool = binary("amtool")
    for name in (
        "specwatch.slack.title",
        "specwatch.slack.text",
        "specwatch.pagerduty.description",
    ):
        result = run(
            amtool, "template", "render", f"--template.glob={TEMPLATE}",
            f'--template.text={{{{ template "{name}" . }}}}', cwd=written,
        )  # fmt: skip
        assert 0 == result.returncode, result.stdout + result.stderr
        assert result.stdout.strip(), name


def queries(files: dict[str, bytes], annotations: bool = False) -> list[tuple[str, str]]:
    """(where, PromQL) of every generated rule (with its annotations' text, which may query
    too, when asked) and every dashboard query."""
    found = [
        (
            rule.get("record", rule.get("alert")),
            rule["expr"] + ("\n".join(rule.get("annotations", {}).values()) if annotations else ""),
        )
        for name in (RECORDING_RULES, ALERTING_RULES)
        for group in read_yaml(files[name])["groups"]
        for rule in group["rules"]
    ]
    for name, data in files.items():
        if name.endswith(".json"):
            found += [(f"{name}: {title}", expr) for title, expr in panel_queries(json.loads(data))]
    return found


def test_each_recorded_series_has_one_rule_and_no_expression_holds_a_python_none() -> None:
    """Two rules recording one name with the same labels write the same series twice (the
    second overwrites the first at every evaluation); `None` in PromQL is a Python value
    written where a name should be (`on(None)` matches on a label no series has: every
    series)."""
    files = generated()
    recording = read_yaml(files[RECORDING_RULES])["groups"]
    recorded = [
        (rule["record"], tuple(sorted((rule.get("labels") or {}).items())))
        for group in recording
        for rule in group["rules"]
    ]
    assert len(recorded) > 300
    assert [] == [name for name, count in Counter(recorded).items() if count > 1]
    texts = queries(files, annotations=True)
    assert [] == [name for name, text in texts if re.search(r"\bNone\b", text)]


# what an aggregation or a match names: `sum by (...)`, `on(...)`, `group_left(...)`, ...
CLAUSE = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)")


def test_every_label_an_expression_groups_or_matches_by_is_one_the_series_carry() -> None:
    """A misspelt label in `by (...)` or `on(...)` is no error in PromQL: the series lose it
    (aggregated away) or all match (no series has it)."""
    known = {str(label) for label in C.Label}
    # Prometheus' own (the target, a histogram's bucket), the cause the zone rules write with
    # label_replace, the window label of Sloth-style SLO rules
    known |= {"instance", "le", "cause", "sloth_window"}
    files = generated()
    exprs = [expr for _, expr in queries(files)]
    named = {label.strip() for expr in exprs for clause in CLAUSE.findall(expr)
             for label in clause.split(",") if label.strip()}  # fmt: skip
    assert {"model", "ctx_bucket", "task", "config", "load"} <= named
    assert set() == named - known
