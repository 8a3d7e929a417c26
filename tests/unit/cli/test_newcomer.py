"""What a newcomer tried on a fresh clone (issue #62's leftovers): each answered in one line
with a non-zero exit, or with the right output, never a traceback or a silent run."""

from __future__ import annotations

from pathlib import Path

import pytest
from specwatch import conventions as C
from specwatch.cli.main import main
from specwatch.core.records import Latency, RequestRecord, SpecDecodeBlock
from specwatch.store.cyclelog import to_line


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["generate", "--time-scale", "0"], "--time-scale: 0 is not a finite number above 0"),
        (["generate", "--time-scale", "nan"], "--time-scale: nan is not a finite number above 0"),
        (["generate", "--time-scale", "inf"], "--time-scale: inf is not a finite number above 0"),
        (["sim", "--port", "99999"], "--port: 99999 is not a port (0-65535)"),
        (["sim", "--num-spec-tokens", "-2"], "--num-spec-tokens: -2 is below 0"),
        (["demo", "--concurrency", "0"], "--concurrency: 0 is below 1"),
        (["demo", "--duration", "-5"], "--duration: -5 is not a finite number above 0"),
    ],
)
def test_a_value_that_makes_no_sense_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert said in err
    assert "Traceback" not in err


def test_generate_check_says_missing_files_are_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert 1 == main(["generate", "--check", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert "is missing" in err
    assert "out of date" not in err


def test_worst_says_when_no_request_qualifies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Middling acceptance everywhere: no extreme, no red slice; stdout stays empty (JSON
    lines for a pipe), stderr says why."""
    log = tmp_path / "cycles.jsonl"
    log.write_bytes(
        b"".join(
            to_line(
                RequestRecord(
                    ts=1_790_000_000.0 + i, request_id=f"r{i}", model="m", task="code",
                    outcome=C.Outcome.OBSERVED, prompt_tokens=100, completion_tokens=30,
                    latency=Latency(), spec=SpecDecodeBlock(4, (4,) * 10, (2,) * 10),
                )
            )
            for i in range(5)
        )
    )  # fmt: skip
    assert 0 == main(["worst", str(log)])
    out, err = capsys.readouterr()
    assert out == ""
    assert "worst: no extreme request and none behind a red slice in 5 records" in err
