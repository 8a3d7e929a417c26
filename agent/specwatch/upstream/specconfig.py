"""Which speculative configuration a sidecar's vLLM runs: from vLLM's command line (`serve`) or
the same JSON given to the proxy (`--speculative-config`), and vLLM's version from `GET
/version`.

vLLM exports no label with its speculative config, its draft or its version, so a number
cannot be told apart from the next config's: a canary with a worse draft averaged into the
stable fleet, a restart with a new K starting over unnoticed. The config's `id` is a short hash
of what defines it — the speculative config as vLLM reads it (keys sorted), and vLLM's version
— so every pod given the same inputs has the same id. The served model is not in it: the
`model` label already separates targets.

A config that cannot be read is reported, never fatal: `speculative_config_unreadable` and the
config is `unknown`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import structlog

from specwatch.core.records import SpecConfig

log = structlog.get_logger("specwatch.config")

UNKNOWN = "unknown"
SPECULATIVE_FLAGS = ("--speculative-config", "--speculative_config")
MODEL_FLAGS = ("--model",)

# the draft's name as vLLM's SpeculativeConfig reads it when `method` is not given
# (vllm/config/speculative.py: "eagle-" -> eagle, "eagle3" -> eagle3, ...; else draft_model)
_NAMED_METHODS = (
    ("eagle-", "eagle"),
    ("eagle3", "eagle3"),
    ("dflash", "dflash"),
    ("dspark", "dspark"),
)


def flag_value(argv: Sequence[str], flags: Sequence[str]) -> str | None:
    """The value of the last of `flags` in argv (`--f v` or `--f=v`), or None. A flag last on
    the line, without its value, is said in one line (vLLM refuses it too) and read as none."""
    found = None
    for i, arg in enumerate(argv):
        for flag in flags:
            if arg == flag and i + 1 < len(argv):
                found = argv[i + 1]
            elif arg == flag:
                log.warning("flag_without_value", flag=flag, reason="last on the command line")
            elif arg.startswith(flag + "="):
                found = arg.split("=", 1)[1]
    return found


def target_of(argv: Sequence[str]) -> str | None:
    """The target model of a vLLM command: `--model M`, or `vllm serve M`."""
    model = flag_value(argv, MODEL_FLAGS)
    if model:
        return model
    for i, arg in enumerate(argv[:-1]):
        if arg == "serve" and not argv[i + 1].startswith("-"):
            return argv[i + 1]
    return None


def llamacpp_speculative(argv: Sequence[str]) -> dict[str, Any] | None:
    """The speculative config of a llama.cpp server command, in the shape vLLM's is read in:
    `--spec-type` as the method, `--spec-draft-n-max` as K where given (its default is the
    server's, not guessed here), the draft model's file; None without speculation."""
    types = flag_value(argv, ("--spec-type",))
    if not types or types == "none":
        return None
    spec: dict[str, Any] = {"method": types}
    k = flag_value(argv, ("--spec-draft-n-max",))
    if k is not None and k.isdigit():
        spec["num_speculative_tokens"] = int(k)
    draft = flag_value(argv, ("--spec-draft-model", "--model-draft", "-md"))
    if draft:
        spec["model"] = draft
    return spec


def sglang_speculative(argv: Sequence[str]) -> dict[str, Any] | None:
    """The speculative config of an SGLang command (sglang/srt/arg_groups/fields/spec.py,
    0.5.23), in the shape vLLM's is read in: the algorithm as the method, the draft width
    (`--speculative-num-draft-tokens` - 1: what each step verifies, as SGLang counts its
    proposed drafts) as K, else the steps drafted; `eagle_topk` where given, > 1 a tree; None
    without speculation."""
    algorithm = flag_value(argv, ("--speculative-algorithm",))
    if not algorithm:
        return None
    spec: dict[str, Any] = {"method": algorithm.lower()}
    named = {
        "num_draft_tokens": "--speculative-num-draft-tokens",
        "num_steps": "--speculative-num-steps",
        "eagle_topk": "--speculative-eagle-topk",
    }
    numbers = {key: flag_value(argv, (flag,)) for key, flag in named.items()}
    found = {key: int(value) for key, value in numbers.items() if value and value.isdigit()}
    if "num_draft_tokens" in found:
        spec["num_speculative_tokens"] = found["num_draft_tokens"] - 1
    elif "num_steps" in found:
        spec["num_speculative_tokens"] = found["num_steps"]
    if "eagle_topk" in found:
        spec["eagle_topk"] = found["eagle_topk"]
    draft = flag_value(argv, ("--speculative-draft-model-path", "--speculative-draft-model"))
    if draft:
        spec["model"] = draft
    return spec


def sglang_target(argv: Sequence[str]) -> str | None:
    """The model an SGLang server answers as: `--served-model-name`, else `--model-path`."""
    return flag_value(argv, ("--served-model-name",)) or flag_value(
        argv, ("--model-path", "--model")
    )


def llamacpp_target(argv: Sequence[str]) -> str | None:
    """The model a llama.cpp server answers as: its `--alias`, else its model file."""
    return flag_value(argv, ("--alias", "-a")) or flag_value(argv, ("--model", "-m"))


def read_speculative(text: str | None) -> dict[str, Any] | None:
    """The speculative config JSON, or None when there is none or it cannot be read (logged)."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError as error:
        log.warning("speculative_config_unreadable", reason=f"not JSON: {error}")
        return None
    if not isinstance(value, dict):
        log.warning("speculative_config_unreadable", reason="not a JSON object")
        return None
    return value


def _method(spec: dict[str, Any]) -> str | None:
    method = spec.get("method")
    if isinstance(method, str) and method:
        return method
    draft = spec.get("model")
    if not isinstance(draft, str) or not draft:
        return None
    if draft in ("ngram", "[ngram]"):
        return "ngram"
    lowered = draft.lower()
    for part, named in _NAMED_METHODS:
        if part in lowered:
            return named
    return "draft_model"


def _schedule(spec: dict[str, Any]) -> tuple[tuple[int, int, int], ...]:
    raw = spec.get("num_speculative_tokens_per_batch_size")
    if not isinstance(raw, list):
        return ()
    out = []
    for row in raw:
        if isinstance(row, list | tuple) and len(row) == 3 and all(isinstance(v, int) for v in row):
            out.append((int(row[0]), int(row[1]), int(row[2])))
    return tuple(out)


def config_id(spec: dict[str, Any] | None, vllm_version: str | None, engine: str = "vllm") -> str:
    """A short stable hash of the speculative config (keys sorted) and the engine's version;
    and the engine's name where it is not vLLM (so vLLM's ids stay what they were)."""
    named = {} if engine == "vllm" else {"engine": engine}
    canonical = json.dumps(
        {"speculative_config": spec, "vllm_version": vllm_version, **named},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:10]


# Relaxed acceptance rules (older vLLM's `spec_decoding_acceptance_method`): the output is not
# the target's distribution, so their acceptance is not comparable with a lossless verifier's.
LOSSY_ACCEPTANCE = frozenset({"typical_acceptance_sampler"})


def verifier_of(spec: dict[str, Any]) -> str:
    """`synthetic` (vLLM fakes acceptance, for testing), `lossy` (a relaxed acceptance rule)
    or `lossless` (standard and block verification)."""
    if spec.get("rejection_sample_method") == "synthetic":
        return "synthetic"
    if spec.get("spec_decoding_acceptance_method") in LOSSY_ACCEPTANCE:
        return "lossy"
    return "lossless"


def spec_config(
    spec: dict[str, Any] | None,
    vllm_version: str | None,
    track: str,
    target: str | None = None,
    engine: str = "vllm",
) -> SpecConfig:
    """The config a sidecar reports (/status, the config info metric, every counter)."""
    spec = spec or {}
    k = spec.get("num_speculative_tokens")
    draft = spec.get("model")
    method = _method(spec)
    rejection = spec.get("rejection_sample_method")
    topk = spec.get("eagle_topk")
    return SpecConfig(
        id=config_id(spec or None, vllm_version, engine) if spec or vllm_version else UNKNOWN,
        method=method,
        draft=draft if isinstance(draft, str) and method != "ngram" else None,
        num_speculative_tokens=k if isinstance(k, int) and not isinstance(k, bool) else None,
        schedule=_schedule(spec),
        rejection_sample_method=(
            rejection if isinstance(rejection, str) else ("standard" if spec else None)
        ),
        vllm_version=vllm_version,
        track=track,
        model=target,
        verifier=verifier_of(spec),
        engine=engine,
        tree_topk=topk
        if isinstance(topk, int) and not isinstance(topk, bool) and topk > 1
        else None,
        gate=gate_of(spec),
    )


# an engine's switch that turns speculation off for good below an acceptance (TensorRT-LLM's
# DecodingBaseConfig, #12905; the older names of #7283), with the window it is measured over
GATES = (
    ("acceptance_rate_threshold", "acceptance_rate_window_size"),
    ("acceptance_length_threshold", "acceptance_window"),
)


def gate_of(spec: dict[str, Any]) -> str | None:
    """The config's acceptance gate as `name=value` (`, window=n` where set); None without."""
    for threshold, window in GATES:
        value = spec.get(threshold)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            size = spec.get(window)
            return f"{threshold}={value}" + (f", {window}={size}" if size is not None else "")
    return None


def read_build_info(body: bytes) -> str | None:
    """llama.cpp's `GET /props` answer's `build_info` ("b11434-..."); None when not that."""
    return _text_field(body, "build_info")


def read_version(body: bytes) -> str | None:
    """vLLM's `GET /version` answer, {"version": "0.32.0"}; None when it is not that."""
    return _text_field(body, "version")


def _text_field(body: bytes, key: str) -> str | None:
    try:
        value = json.loads(body)
    except ValueError:
        return None
    text = value.get(key) if isinstance(value, dict) else None
    return text if isinstance(text, str) and text else None
