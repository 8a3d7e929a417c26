from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from specwatch.cli.main import main
from specwatch.settings import ConfigError, load_settings


def test_defaults_match_the_reference_thresholds() -> None:
    settings = load_settings()
    assert (8000, 9400, "alpha") == (settings.port, settings.admin_port, settings.zones.metric)
    assert (0.70, 0.50, 1000, 30) == (
        settings.zones.green,
        settings.zones.red,
        settings.zones.min_trials,
        settings.zones.min_requests,
    )
    assert (512, 2048, 4096, 8192, 32768) == settings.ctx_buckets


def test_environment_takes_comma_lists_and_nested_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECWATCH_CTX_BUCKETS", "256,1024")
    monkeypatch.setenv("SPECWATCH_ZONES__GREEN", "0.8")
    settings = load_settings()
    assert (256, 1024) == settings.ctx_buckets
    assert 0.8 == settings.zones.green


def test_flags_override_environment_which_overrides_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "specwatch.yaml"
    config.write_text("port: 7000\nadmin_port: 7001\nzones:\n  red: 0.4\n  metric: rate\n")
    monkeypatch.setenv("SPECWATCH_PORT", "7100")
    settings = load_settings(config, zones={"metric": "alpha"})
    assert (7100, 7001) == (settings.port, settings.admin_port)
    # a flag for one nested field keeps the file's other nested fields
    assert ("alpha", 0.4) == (settings.zones.metric, settings.zones.red)


def test_each_bad_field_gets_its_own_line() -> None:
    with pytest.raises(ConfigError) as error:
        load_settings(port="x", ctx_buckets="512,100", upstream="localhost:8001")
    lines = error.value.lines
    assert 3 == len(lines)
    assert any(line.startswith("port:") for line in lines)
    assert any(line.startswith("ctx_buckets:") and "increasing" in line for line in lines)
    assert any(line.startswith("upstream:") and "http://" in line for line in lines)


def test_thresholds_out_of_order_are_rejected() -> None:
    with pytest.raises(ConfigError) as error:
        load_settings(zones={"green": 0.5, "red": 0.6})
    assert "red + indifference <= green - indifference" in error.value.lines[0]


def test_unknown_settings_in_yaml_are_named(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("zones:\n  gren: 0.8\n")
    with pytest.raises(ConfigError) as error:
        load_settings(config)
    line = f"{config}: zones.gren: unknown setting; did you mean zones.green? (got 0.8)"
    assert [line] == error.value.lines  # the file named: that is where the value came from


@pytest.mark.parametrize(
    ("yaml_text", "line"),
    [
        ("green: 0.8\n", "green: unknown setting; did you mean zones.green? (got 0.8)"),
        ("zones:\n  evidnce: 9\n", "zones.evidnce: unknown setting; did you mean zones.evidence?"),
        ("upstrem: http://h:1\n", "upstrem: unknown setting; did you mean upstream?"),
        ("flux: 1\n", "flux: unknown setting (got 1)"),
    ],
)
def test_an_unknown_key_is_named_with_the_setting_it_was_likely_meant_as(
    tmp_path: Path, yaml_text: str, line: str
) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(yaml_text)
    with pytest.raises(ConfigError) as error:
        load_settings(config)
    assert [f"{config}: {line}"] == [got[: len(f"{config}: {line}")] for got in error.value.lines]


def test_an_unknown_specwatch_variable_is_refused_with_the_one_meant(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SPECWATCH_ZONE__GREEN", "0.8")
    monkeypatch.setenv("SPECWATCH_NOTHING_LIKE_IT", "1")
    monkeypatch.setenv("SPECWATCH_ZONES__GREEN", "0.8")  # known: not named
    assert 2 == main(["check-config"])
    assert [
        "specwatch: config: environment: SPECWATCH_NOTHING_LIKE_IT: unknown setting",
        "specwatch: config: environment: SPECWATCH_ZONE__GREEN: unknown setting; "
        "did you mean SPECWATCH_ZONES__GREEN?",
    ] == capsys.readouterr().err.strip().splitlines()


def test_malformed_yaml_is_one_line_naming_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "specwatch.yaml"
    config.write_text("zones:\n  green: 0.8\n red: [\n")
    assert 2 == main(["check-config", "--config", str(config)])
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"specwatch: config: {config}: ")
    assert f'in "{config}", line 3' in line
    assert "config: config:" not in line
    assert "<byte string>" not in line


def test_check_config_exits_non_zero_with_one_line_per_bad_field(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["check-config", "--port", "99999", "--zone-metric", "median"])
    err = capsys.readouterr().err.strip().splitlines()
    assert 2 == code
    assert 2 == len(err)
    assert all(line.startswith("specwatch: config: ") for line in err)


def test_check_config_prints_the_resolved_settings(capsys: pytest.CaptureFixture[str]) -> None:
    assert 0 == main(["check-config", "--ctx-buckets", "128,1024", "--window", "60"])
    out = capsys.readouterr().out
    assert '"ctx_buckets": [\n    128,\n    1024\n  ]' in out
    assert '"length_seconds": 60.0' in out


def test_a_missing_config_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as error:
        load_settings(tmp_path / "nope.yaml")
    assert "no such file" in error.value.lines[0]


def test_a_config_file_that_is_not_yaml_text_is_a_clear_error(tmp_path: Path) -> None:
    """Found by fuzzing: a NUL byte made PyYAML raise past the loader (a crash, not a line)."""
    config = tmp_path / "bad.yaml"
    config.write_bytes(b"tasks:\n  allo\x00\x00\x00wlist: [chat]\n")
    with pytest.raises(ConfigError) as error:
        load_settings(config)
    assert error.value.lines[0].startswith(f"{config}: unacceptable character #x0000")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"1: x\n", "bad.yaml: setting names are text, got 1"),  # found by fuzzing: a crash
        (b"- port\n- 8000\n", "must hold a mapping of settings, not a list"),
    ],
)
def test_a_config_file_of_the_wrong_shape_is_one_clear_line(
    tmp_path: Path, content: bytes, message: str
) -> None:
    config = tmp_path / "bad.yaml"
    config.write_bytes(content)
    with pytest.raises(ConfigError) as error:
        load_settings(config)
    assert message in error.value.lines[0]


@pytest.mark.parametrize(
    "overrides",
    [
        {"window": {"length_seconds": 1e-300, "bucket_seconds": 1e-300}},
        {"zones": {"evaluation_interval_seconds": 1e-9}},
        {"drift": {"bucket_seconds": 1e-9}},
        {"load": {"window_seconds": 1e-9}},
        {"limits": {"max_position": 100_000_000}},
    ],
)
def test_settings_the_analysis_cannot_run_on_are_refused(overrides: dict[str, Any]) -> None:
    """Each once passed check-config: a window bucket of 1e-300 s made every record raise
    (int(ts // bucket) overflows), an evaluation interval below a timestamp's precision
    never advanced a replay's clock, and max_position 1e8 allocated 800 MB per count (a
    20 GB replay of three requests). The bounds leave room for every real deployment."""
    with pytest.raises(ConfigError):
        load_settings(**overrides)
    low: dict[str, Any] = {
        "window": {"length_seconds": 0.001, "bucket_seconds": 0.001},
        "zones": {"evaluation_interval_seconds": 0.001}, "drift": {"bucket_seconds": 0.001},
        "load": {"window_seconds": 0.001}, "limits": {"max_position": 256},
    }  # fmt: skip
    load_settings(**low)


@pytest.mark.parametrize(
    "url", ["notaurl", "ftp://h", "http://", "http://[::1", "http://h:notaport", "https://h:99999",
            "http://h:0"],
)  # fmt: skip
def test_an_upstream_the_proxy_could_not_connect_to_is_refused_by_check_config(url: str) -> None:
    """A broken IPv6 host or port passed check-config and failed at start (or at the first
    request); each is now a config line, for the baseline upstream too."""
    with pytest.raises(ConfigError, match="upstream"):
        load_settings(upstream=url)
    with pytest.raises(ConfigError, match="baseline_upstream"):
        load_settings(ab={"baseline_upstream": url})
    assert "http://[::1]:8000" == load_settings(upstream="http://[::1]:8000/").upstream


@pytest.mark.parametrize("path", ["/v1", "/v1/", "/openai/v1", "/?x=1"])
def test_an_upstream_with_a_path_is_refused_in_one_line_that_says_what_to_give(path: str) -> None:
    """`--upstream http://host:8001/v1`, the OpenAI client's habit, had /readyz probe
    /v1/health and stay 503: refused, with the address to give instead."""
    with pytest.raises(ConfigError) as error:
        load_settings(upstream=f"http://vllm:8001{path}")
    (line,) = error.value.lines
    assert line.startswith("upstream: must be the server's address without a path")
    assert "e.g. http://vllm:8001:" in line
    assert "http://vllm:8001" == load_settings(upstream="http://vllm:8001/").upstream


def test_a_byte_budget_smaller_than_one_response_is_refused() -> None:
    """A budget below the response limit could never hold a body the limit allows."""
    limits = {"max_response_bytes": 8192, "max_observed_bytes": 8191}
    with pytest.raises(ConfigError, match="max_observed_bytes"):
        load_settings(limits=limits)
    assert (
        8192
        == load_settings(limits={**limits, "max_observed_bytes": 8192}).limits.max_observed_bytes
    )
