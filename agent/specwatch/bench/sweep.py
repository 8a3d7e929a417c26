"""`specwatch bench --sweep-k 3,5,7 -- <vllm command>`: the baseline and one server per K.

The vLLM command carries the speculative config to sweep (`--speculative-config JSON`, or a
`--speculative_config` / `=` spelling). The baseline is the same command without it; each K is
the command with `num_speculative_tokens` set to K. Servers start one at a time through the
serve machinery (upstream/child.py: the per-request metrics flags are added, output passed
through, the whole process group stopped after).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

FLAGS = ("--speculative-config", "--speculative_config")


class SweepError(Exception):
    """A sweep that cannot be built from the command given; the message says why."""


def _find(argv: Sequence[str]) -> tuple[int, int, str]:
    """(start, end) of the flag and its value in argv, and the value."""
    for i, arg in enumerate(argv):
        for flag in FLAGS:
            if arg == flag:
                if i + 1 >= len(argv):
                    raise SweepError(f"{flag} has no value")
                return i, i + 2, argv[i + 1]
            if arg.startswith(flag + "="):
                return i, i + 1, arg.split("=", 1)[1]
    raise SweepError(
        "the vLLM command has no --speculative-config to sweep, e.g. "
        '--speculative-config \'{"method": "ngram", "num_speculative_tokens": 3, '
        '"prompt_lookup_max": 4}\''
    )


def baseline_command(argv: Sequence[str]) -> list[str]:
    start, end, _ = _find(argv)
    return [*argv[:start], *argv[end:]]


def command_for_k(argv: Sequence[str], k: int) -> list[str]:
    start, end, value = _find(argv)
    try:
        config = json.loads(value)
    except json.JSONDecodeError as error:
        raise SweepError(f"--speculative-config is not JSON: {error}") from None
    if not isinstance(config, dict):
        raise SweepError("--speculative-config must be a JSON object")
    config["num_speculative_tokens"] = k
    return [*argv[:start], "--speculative-config", json.dumps(config), *argv[end:]]


def parse_ks(text: str) -> list[int]:
    try:
        ks = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SweepError(f"--sweep-k takes whole numbers like 3,5,7, not {text!r}") from None
    if not ks or any(k < 1 for k in ks) or len(set(ks)) != len(ks):
        raise SweepError(f"--sweep-k needs distinct values >= 1, got {text!r}")
    return ks
