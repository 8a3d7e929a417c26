"""The command line as a new operator meets it: replay's and advise's answers on thin, empty,
compressed and long logs; per-command help; tables that survive a pipe."""

from __future__ import annotations

import gzip
import importlib.util
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from specwatch import conventions as C
from specwatch.cli.main import main
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.store.cyclelog import to_line


def write_log(path: Path, n: int, spacing: float = 20.0, model: str = "m", task: str = "code",
              first: int = 0) -> bytes:  # fmt: skip
    """n requests of 24 steps at K = 5, `spacing` seconds apart; the bytes written."""
    lines = b"".join(
        to_line(
            RequestRecord(
                ts=1_790_000_000.0 + (first + i) * spacing, request_id=f"{model}-{first + i}",
                model=model, task=task, outcome=C.Outcome.OBSERVED, prompt_tokens=100,
                completion_tokens=30, latency=Latency(),
                spec=SpecDecodeBlock(5, (5,) * 24, (1, 0, 1, 2, 1, 0, 1, 1 + i % 2) * 3),
            )
        )
        for i in range(n)
    )  # fmt: skip
    path.write_bytes(lines)
    return lines


def test_replay_shows_since_the_start_says_so_and_names_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """27 requests over 520 s: the default 300 s window holds only the last 15."""
    log = tmp_path / "cycles.jsonl"
    write_log(log, 27)
    assert 0 == main(["replay", str(log)])
    out = capsys.readouterr().out
    assert "27 record(s); since the first record" in out
    assert "(520 s)" in out
    rows = [line.split() for line in out.splitlines() if line.startswith("m ")]
    assert ["m", "0-512", "code", "27"] == rows[0][:4]
    assert ["m", "all", "all", "27"] == rows[-1][:4]

    assert 0 == main(["replay", "--last-window", str(log)])
    out = capsys.readouterr().out
    assert "the last window: 300 s" in out
    rows = [line.split() for line in out.splitlines() if line.startswith("m ")]
    assert "15" == rows[-1][3]


def test_replay_reads_a_gzip_log_whatever_its_name_and_keeps_what_precedes_a_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain.jsonl"
    data = write_log(plain, 40)
    rotated = tmp_path / "cycles.jsonl.1"  # logrotate's compress keeps names like this too
    rotated.write_bytes(gzip.compress(data))
    assert 0 == main(["replay", "--json", str(rotated)])
    from_gzip = json.loads(capsys.readouterr().out)
    assert 0 == main(["replay", "--json", str(plain)])
    assert from_gzip["slices"] == json.loads(capsys.readouterr().out)["slices"]

    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(data)[:-40])
    assert 0 == main(["replay", "--json", str(cut)])
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert 30 <= document["replay"]["records"] < 40
    assert ["gzip data cut short"] == [
        bad["reason"][:19] for bad in document["replay"]["bad_lines"]
    ]


@pytest.mark.parametrize("content", [b"", b"{not json\n\x00\x01\n", b"\n\n"])
@pytest.mark.parametrize("command", ["replay", "advise"])
def test_a_log_without_records_is_said_with_a_non_zero_exit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, command: str
) -> None:
    log = tmp_path / "empty.jsonl"
    log.write_bytes(content)
    argv = ["replay", str(log)] if command == "replay" else ["advise", "--cycle-log", str(log)]
    assert 1 == main(argv)
    captured = capsys.readouterr()
    assert "" == captured.out
    assert captured.err.strip().endswith(f"specwatch: {command}: no records in {log}")


@pytest.mark.parametrize("window", ["100000", "3600", "86400"])
def test_replay_takes_any_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], window: str
) -> None:
    log = tmp_path / "cycles.jsonl"
    write_log(log, 40, spacing=700.0)  # 7.6 hours
    assert 0 == main(["replay", "--last-window", "--window", window, str(log)])
    out = capsys.readouterr().out
    assert f"the last window: {window} s" in out
    expected = min(40, int(float(window) // 700) + 1)
    rows = [line.split() for line in out.splitlines() if line.startswith("m ")]
    assert str(expected) == rows[-1][3]


def test_advise_on_too_little_traffic_refuses_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One request of a few steps once read as 'try K=6 on a canary', with a K table."""
    log = tmp_path / "cycles.jsonl"
    write_log(log, 1)
    assert 1 == main(["advise", "--cycle-log", str(log)])
    captured = capsys.readouterr()
    assert "" == captured.out
    assert [
        "specwatch: advise: m: 1 request(s) and 45 verified draft tokens since the first "
        "record; advice needs 30 and 1000 (zones.min_requests, zones.min_trials)"
    ] == captured.err.strip().splitlines()


def test_advise_advises_on_the_models_with_enough_and_names_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    enough, thin = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_log(enough, 40, model="big")
    write_log(thin, 3, model="small")
    assert 0 == main(["advise", "--json", "--cycle-log", str(enough), str(thin)])
    captured = capsys.readouterr()
    models = {entry["model"] for entry in json.loads(captured.out)["slices"]}
    assert {"big"} == models
    assert "specwatch: advise: small: 3 request(s)" in captured.err


def test_piped_tables_are_not_wrapped_or_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "cycles.jsonl"
    write_log(log, 40, task="summarization", model="meta-llama/Llama-3.1-70B-Instruct-long-name")
    assert 0 == main(["replay", "--tasks", "summarization", str(log)])
    out = capsys.readouterr().out
    assert "…" not in out
    row = next(line for line in out.splitlines() if " 0-512 " in line)
    assert "meta-llama/Llama-3.1-70B-Instruct-long-name" in row
    assert "summarization" in row
    assert "insufficient" in row or "yellow" in row or "red" in row or "green" in row


@pytest.fixture
def help_of(capsys: pytest.CaptureFixture[str]) -> Callable[[str], str]:
    """`specwatch COMMAND --help` as a user reads it."""

    def read(command: str) -> str:
        with pytest.raises(SystemExit) as done:
            main([command, "--help"])
        assert 0 == done.value.code
        return capsys.readouterr().out

    return read


PROXY_ONLY = ("--upstream", "--port", "--baseline-upstream", "--vllm-log", "--drain-seconds")


@pytest.mark.parametrize("command", ["replay", "generate", "advise", "snapshot"])
def test_offline_commands_list_none_of_the_proxy_flags(
    help_of: Callable[[str], str], command: str
) -> None:
    text = help_of(command)
    assert [flag for flag in PROXY_ONLY if f"{flag} " in text] == []


@pytest.mark.parametrize(
    "command",
    ["serve", "proxy", "check-config", "replay", "generate", "advise", "snapshot", "sim",
     "bench", "demo"],
)  # fmt: skip
def test_every_command_says_what_it_does(help_of: Callable[[str], str], command: str) -> None:
    text = help_of(command)
    description = text.split("\n\n")[1]
    assert len(description) > 20, text


@pytest.mark.parametrize(
    ("command", "flag", "default"),
    [
        ("proxy", "--ctx-buckets", "512,2048,4096,8192,32768"),
        ("proxy", "--tasks", "chat,code"),
        ("proxy", "--window", "300"),
        ("proxy", "--upstream", "http://127.0.0.1:8001"),
        ("bench", "--out", "bench-report"),
        ("sim", "--step-ms", "4.0"),
        ("sim", "--port", "8001"),
        ("demo", "--duration", "45.0"),
    ],
)
def test_help_names_each_default(
    help_of: Callable[[str], str], command: str, flag: str, default: str
) -> None:
    text = help_of(command)
    entry = text[text.index(f"\n  {flag} ") :][:300]  # its line in the options, not the usage
    assert "(default: " + default in " ".join(entry.split()).replace(", ", ",")


@pytest.mark.parametrize(
    "command",
    [
        ["bench", "--url", "http://127.0.0.1:9"],
        ["snapshot", "--prometheus", "http://p", "--out", "x.png"],
    ],
)
def test_without_the_bench_extra_bench_and_snapshot_say_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """The sidecar's image has no matplotlib: the commands that plot say so in one line."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name)
    )
    assert 2 == main(command)
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"specwatch: {command[0]} needs ")
    assert line.endswith("matplotlib: pip install 'specwatch[bench]'")


@pytest.mark.parametrize(
    ("variable", "value", "argv", "said"),
    [
        ("SPECWATCH_PORT", "abc", ["check-config"], "environment: SPECWATCH_PORT: Input should"),
        ("SPECWATCH_ZONES__GREN", "0.7", ["check-config"], "did you mean SPECWATCH_ZONES__GREEN?"),
        ("SPECWATCH_ZONES__GREEN", "x", ["replay", "none.jsonl"], "SPECWATCH_ZONES__GREEN: "),
        ("SPECWATCH_UPSTREAM", "http://127.0.0.1:8001/v1", ["proxy"], "SPECWATCH_UPSTREAM: must"),
        ("SPECWATCH_PORT", "abc", ["sim"], "environment: SPECWATCH_PORT"),
        # a setting with parts given as no JSON: the variable, not "None: ... EnvSettingsSource"
        ("SPECWATCH_ZONES", "{bad", ["check-config"], "environment: SPECWATCH_ZONES: not JSON"),
        # an item of a list: the variable and the item, not `ctx_buckets.1`
        ("SPECWATCH_CTX_BUCKETS", "512,abc", ["check-config"],
         "environment: SPECWATCH_CTX_BUCKETS (item 1): Input should be a valid integer"),
    ],
)  # fmt: skip
def test_a_bad_environment_value_is_one_line_naming_the_variable_and_exit_code_2(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    variable: str,
    value: str,
    argv: list[str],
    said: str,
) -> None:
    monkeypatch.setenv(variable, value)
    assert 2 == main(argv)
    err = capsys.readouterr().err
    assert 1 == len(err.splitlines()), err
    assert said in err
    assert "Traceback" not in err


@pytest.mark.parametrize("argv", [["--help"], ["proxy", "--help"], ["check-config", "--help"]])
def test_help_prints_whatever_the_environment_holds(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    monkeypatch.setenv("SPECWATCH_PORT", "abc")
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert 0 == done.value.code
    out = capsys.readouterr().out
    assert "usage: specwatch" in out
    if argv != ["--help"]:  # a command's settings: their defaults said to be the built-in ones
        assert "the defaults shown are the built-in ones: environment: SPECWATCH_PORT" in out


def test_a_file_that_is_not_a_cycle_log_is_a_few_lines_not_one_per_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README given by mistake: the first bad lines named, the rest counted; a reason is
    cut at a word, not mid-word."""
    text = tmp_path / "notes.txt"  # (any file that is not a cycle log)
    text.write_text("# notes\n" + "some words, not JSON at all\n" * 300)
    assert 1 == main(["replay", str(text)])
    err = capsys.readouterr().err.splitlines()
    assert len(err) <= 8, err
    assert "... and 296 more bad line(s)" in err[-3]
    assert "301 bad line(s) skipped" in err[-2]
    assert all(line.endswith(")") for line in err[:5]), err[:5]  # "(... ...)", no torn word


def test_replay_keeps_its_log_to_itself_unless_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The table or document is the product: zone_changed lines only with --verbose."""
    log = tmp_path / "cycles.jsonl"
    write_log(log, 60)
    assert 0 == main(["replay", "--json", str(log)])
    assert "zone_changed" not in capsys.readouterr().err
    assert 0 == main(["replay", "--json", "--verbose", str(log)])
    assert "zone_changed" in capsys.readouterr().err


def test_a_wrong_flag_shows_the_commands_own_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["proxy", "--upstream-url", "x"])
    assert 2 == done.value.code
    err = capsys.readouterr().err
    assert err.startswith("usage: specwatch proxy")
    assert "unrecognized arguments: --upstream-url x" in err


def test_generate_check_names_a_missing_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert 2 == main(["generate", "--check", "--out", str(tmp_path / "nowhere")])
    assert "no such directory" in capsys.readouterr().err
