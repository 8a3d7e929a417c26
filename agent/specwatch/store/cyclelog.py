"""The cycle log: one JSON line per observed request (schema v1), and its reader for replay.

    {"v": 1, "ts": <unix seconds>, "request_id": str, "model": str, "task": str,
     "prompt_tokens": int, "completion_tokens": int, "num_spec_tokens": int,
     "per_step_drafted": [int], "per_step_accepted": [int],
     "ttft_ms": float|null, "tpot_ms": float|null, "e2e_ms": float|null}

More optional fields may follow (`variant`; `in_flight`: the observed requests in flight at its
upstream when it started, itself included; `config`: the id of the speculative config it ran
under, and `track`, the pod's; `mean_acceptance_length`: vLLM's own figure, as reported;
`tpot_source`: "stream" when the time per output token is the stream's own timing, vLLM
having given none; `sampling`: greedy, sampled or default, how the request asked to decode;
`prompt_text` / `completion_text`: only with `cycle_log.capture_text`;
`engine`, `draft_tokens`, `accepted_tokens`, `spec_steps`: a request from an engine that sends
totals only (llama.cpp), whose per-step arrays are empty: core/records.SpecTotals);
readers ignore what they do not know.
Each file a sidecar opens starts with its config, `{"v": 1, "config": {...}}` (`/status`'s
`config`): what replay and `worst` know of the verifier and the schedule. A/B baseline
requests (`"variant": "baseline"`, no speculation) are logged too, with `num_spec_tokens` 0 and
empty per-step arrays (a reader also accepts them without those fields): their time per output
token is what makes the gain measured on replay. The writer (writer.py) rotates files by
size and age, FILE -> FILE.1 -> FILE.2 ... up to `backups`, gzipped with `cycle_log.compress`.
"""

from __future__ import annotations

import gzip
import math
import operator
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, BinaryIO, Literal, cast

import msgspec
import orjson

from specwatch.conventions import VARIANT_BASELINE, VARIANT_SPEC, Outcome, Sampling
from specwatch.core.records import (
    Latency,
    RequestRecord,
    SpecConfig,
    SpecDecodeBlock,
    SpecTotals,
)
from specwatch.store.configline import SCHEMA_VERSION, read_config_line


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000.0


def to_line(record: RequestRecord, track: str | None = None) -> bytes:
    spec = record.spec
    extra: dict[str, Any] = {}
    if record.config is not None:
        extra["config"] = record.config
    if track is not None:
        extra["track"] = track
    if spec is not None and spec.reported_tau is not None:
        extra["mean_acceptance_length"] = spec.reported_tau
    if record.prompt_text is not None:
        extra["prompt_text"] = record.prompt_text
    if record.completion_text is not None:
        extra["completion_text"] = record.completion_text
    if record.latency.tpot_source is not None:
        extra["tpot_source"] = record.latency.tpot_source
    if record.sampling is not None:
        extra["sampling"] = record.sampling
    if record.outcome != Outcome.OBSERVED:  # a client that left after vLLM's final metrics
        extra["outcome"] = record.outcome
    totals = record.totals
    if totals is not None and spec is None:
        extra["engine"] = totals.engine
        extra["draft_tokens"] = totals.drafted
        extra["accepted_tokens"] = totals.accepted
        extra["spec_steps"] = totals.steps
    return (
        orjson.dumps(
            {
                "v": SCHEMA_VERSION,
                "ts": record.ts,
                "request_id": record.request_id,
                "model": record.model,
                "task": record.task,
                "prompt_tokens": record.prompt_tokens,
                "completion_tokens": record.completion_tokens,
                "num_spec_tokens": spec.num_spec_tokens if spec else 0,
                "per_step_drafted": list(spec.drafted) if spec else [],
                "per_step_accepted": list(spec.accepted) if spec else [],
                "ttft_ms": _ms(record.latency.ttft),
                "tpot_ms": _ms(record.latency.tpot),
                "e2e_ms": _ms(record.latency.e2e),
                "variant": record.variant,
                "in_flight": record.in_flight,
                **extra,
            }
        )
        + b"\n"
    )


class BadLine(ValueError):
    pass


_ONLY_INT = frozenset({int})
SAMPLING_MODES: frozenset[str] = frozenset(Sampling)
TPOT_SOURCES = frozenset({"vllm", "stream"})
# A record's time, unix seconds from 1970 up to 10000-01-01: what `time.time()` writes. Past it
# a timestamp is not seconds (milliseconds are 1000x, past year 50,000), and near a double's
# range (1e308) a replay's evaluation clock, ts + 10 s, would never move.
MAX_TS = 253_402_300_800.0
_Ts = Annotated[float, msgspec.Meta(ge=0, lt=MAX_TS)]
_Ms = Annotated[float, msgspec.Meta(ge=0)]  # a duration in milliseconds
# a count for the fast decoder: up to int64's largest (msgspec's bounds are int64); a larger
# one (orjson reads ints up to 2^64 - 1, floats past that) takes the checked path
_Count = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]


def _int(obj: dict[str, Any], key: str) -> int:
    value = obj.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise BadLine(f"{key} is not a non-negative integer")
    return value


def _ints(obj: dict[str, Any], key: str) -> tuple[int, ...]:
    value = obj.get(key)
    if not isinstance(value, list):
        raise BadLine(f"{key} is not a list")
    # C-level checks (a replay reads millions of steps): exactly ints (a bool's type is bool),
    # none negative
    if value and (not _ONLY_INT.issuperset(map(type, value)) or min(value) < 0):
        raise BadLine(f"{key} holds a non-count")
    return tuple(value)


def _seconds(obj: dict[str, Any], key: str) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise BadLine(f"{key} is not a number")
    if value < 0:  # a duration: the live parser drops negative ones too
        raise BadLine(f"{key} is negative")
    return float(value) / 1000.0


class _Line(msgspec.Struct, forbid_unknown_fields=True):
    """A well-formed v1 line as the writer makes it, decoded and checked in C (msgspec): one
    pass, no dict, no per-field Python checks. Only what `_checked` accepts alike passes:
    strict types (no bool for an int, no float for a count), counts >= 0, finite numbers, the
    per-step arrays present, no field the writer does not write (msgspec would skip an
    unknown field's value unchecked, where orjson refuses a bad number or bad UTF-8 in it);
    anything else (an older or newer writer's line, a baseline without arrays, a bad line)
    falls back to `_checked`, which gives the same record or the reason. Found by the
    fuzzer's equivalence check (fuzz/fuzz_targets.py)."""

    v: Literal[1]
    ts: _Ts
    request_id: str
    model: str
    task: str
    prompt_tokens: _Count
    completion_tokens: _Count
    num_spec_tokens: _Count
    per_step_drafted: tuple[_Count, ...]
    per_step_accepted: tuple[_Count, ...]
    ttft_ms: _Ms | None = None
    tpot_ms: _Ms | None = None
    e2e_ms: _Ms | None = None
    variant: Any = VARIANT_SPEC
    in_flight: _Count | None = None
    config: str | None = None
    track: str | None = None
    mean_acceptance_length: float | None = None
    prompt_text: str | None = None
    completion_text: str | None = None
    outcome: Literal["client_aborted"] | None = None
    tpot_source: Literal["vllm", "stream"] | None = None
    sampling: Literal["greedy", "sampled", "default"] | None = None
    engine: str | None = None
    draft_tokens: _Count | None = None
    accepted_tokens: _Count | None = None
    spec_steps: _Count | None = None


_decode_line = msgspec.json.Decoder(_Line).decode


def from_line(line: bytes) -> RequestRecord:
    """One cycle-log line as a record; BadLine (with the reason) when it is not one."""
    try:
        fields = _decode_line(line)
    except ValueError:  # msgspec's errors and bad UTF-8 alike: the checks say what is wrong
        return _checked(line)
    variant = fields.variant if isinstance(fields.variant, str) else VARIANT_SPEC
    spec = None
    if fields.draft_tokens is not None or fields.accepted_tokens is not None:
        return _checked(line)  # totals: rare enough to read field by field
    if variant != VARIANT_BASELINE:
        drafted, accepted = fields.per_step_drafted, fields.per_step_accepted
        if len(drafted) != len(accepted) or any(map(operator.gt, accepted, drafted)):
            return _checked(line)  # raises, with the reason
        reported = fields.mean_acceptance_length
        if reported is not None and not math.isfinite(reported):
            return _checked(line)
        spec = SpecDecodeBlock(fields.num_spec_tokens, drafted, accepted, reported_tau=reported)
    ttft, tpot, e2e = fields.ttft_ms, fields.tpot_ms, fields.e2e_ms
    return RequestRecord(
        ts=fields.ts,
        request_id=fields.request_id,
        model=fields.model,
        task=fields.task,
        outcome=fields.outcome or Outcome.OBSERVED,
        prompt_tokens=fields.prompt_tokens,
        completion_tokens=fields.completion_tokens,
        spec=spec,
        totals=None,  # a line with totals is read by _checked
        latency=Latency(
            ttft=None if ttft is None else ttft / 1000.0,
            tpot=None if tpot is None else tpot / 1000.0,
            e2e=None if e2e is None else e2e / 1000.0,
            tpot_source=fields.tpot_source,
        ),
        variant=variant,
        in_flight=fields.in_flight,
        config=fields.config,
        prompt_text=fields.prompt_text,
        completion_text=fields.completion_text,
        sampling=fields.sampling,
    )


_WRITTEN_OUTCOMES = frozenset({Outcome.OBSERVED, Outcome.CLIENT_ABORTED})


def _outcome(obj: dict[str, Any]) -> str:
    """observed, unless the line says client_aborted (a client that left after vLLM's final
    metrics: the analysis counted its steps, so the log keeps them)."""
    value = obj.get("outcome", Outcome.OBSERVED)
    if value not in _WRITTEN_OUTCOMES:
        raise BadLine(f"outcome {value!r} is not one a cycle log holds")
    return str(value)


def _clause(text: str, most: int = 60) -> str:
    """`text` cut to at most `most` characters at a word's end, marked when cut."""
    if len(text) <= most:
        return text
    return text[:most].rsplit(" ", 1)[0].rstrip(":,;") + " ..."


def _checked(line: bytes) -> RequestRecord:
    """The line read field by field, each check with its own reason: every line the fast
    decoder does not take, so what it accepts and what it reports is decided here."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as error:
        # orjson's position (`: line 1 column 7 (char 6)`) says nothing of a one-line record
        raise BadLine(f"not JSON ({_clause(str(error).split(': line ')[0])})") from None
    if not isinstance(obj, dict):
        raise BadLine("not an object")
    if obj.get("v") != SCHEMA_VERSION:
        raise BadLine(f"unknown schema version {obj.get('v')!r}")
    ts = obj.get("ts")
    if not isinstance(ts, int | float) or isinstance(ts, bool) or not math.isfinite(ts):
        raise BadLine("ts is not a number")
    if not 0 <= ts < MAX_TS:
        hint = " (milliseconds?)" if MAX_TS <= ts < MAX_TS * 1000 else ""
        raise BadLine(f"ts {ts!r} is not unix seconds in 1970-9999{hint}")
    for key in ("request_id", "model", "task"):
        if not isinstance(obj.get(key), str):
            raise BadLine(f"{key} is not a string")
    variant = obj.get("variant", VARIANT_SPEC)
    if not isinstance(variant, str):
        variant = VARIANT_SPEC
    spec = totals = None
    if "draft_tokens" in obj or "accepted_tokens" in obj:
        totals = _totals(obj)
    elif variant != VARIANT_BASELINE:  # a baseline ran no speculation: nothing to read
        drafted = _ints(obj, "per_step_drafted")
        accepted = _ints(obj, "per_step_accepted")
        if len(drafted) != len(accepted) or any(map(operator.gt, accepted, drafted)):
            raise BadLine("per-step arrays disagree")
        reported = obj.get("mean_acceptance_length")
        if reported is not None and (
            not isinstance(reported, int | float)
            or isinstance(reported, bool)
            or not math.isfinite(reported)
        ):
            raise BadLine("mean_acceptance_length is not a number")
        spec = SpecDecodeBlock(
            _int(obj, "num_spec_tokens"),
            drafted,
            accepted,
            reported_tau=None if reported is None else float(reported),
        )
    return RequestRecord(
        ts=float(ts),
        request_id=obj["request_id"],
        model=obj["model"],
        task=obj["task"],
        outcome=_outcome(obj),
        prompt_tokens=_int(obj, "prompt_tokens"),
        completion_tokens=_int(obj, "completion_tokens"),
        spec=spec,
        totals=totals,
        latency=Latency(
            ttft=_seconds(obj, "ttft_ms"),
            tpot=_seconds(obj, "tpot_ms"),
            e2e=_seconds(obj, "e2e_ms"),
            tpot_source=_choice(obj, "tpot_source", TPOT_SOURCES),
        ),
        variant=variant,
        in_flight=_optional_count(obj, "in_flight"),
        config=_optional_text(obj, "config"),
        prompt_text=_optional_text(obj, "prompt_text"),
        completion_text=_optional_text(obj, "completion_text"),
        sampling=_choice(obj, "sampling", SAMPLING_MODES),
    )


def _totals(obj: dict[str, Any]) -> SpecTotals:
    """An engine's totals (no per-step data): drafted, accepted, and steps where known."""
    if obj.get("per_step_drafted") or obj.get("per_step_accepted"):
        raise BadLine("totals beside per-step arrays")
    drafted, accepted = _int(obj, "draft_tokens"), _int(obj, "accepted_tokens")
    if accepted > drafted:
        raise BadLine("accepted_tokens > draft_tokens")
    engine = obj.get("engine")
    if not isinstance(engine, str):
        raise BadLine("engine is not a string")
    return SpecTotals(drafted, accepted, _optional_count(obj, "spec_steps"), engine)


def _choice(obj: dict[str, Any], key: str, choices: frozenset[str]) -> str | None:
    value = obj.get(key)
    if value is None or (isinstance(value, str) and value in choices):
        return value
    raise BadLine(f"{key} must be one of {', '.join(sorted(choices))}, not {value!r}")


def _optional_text(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise BadLine(f"{key} is not a string")
    return value


def _optional_count(obj: dict[str, Any], key: str) -> int | None:
    return None if obj.get(key) is None else _int(obj, key)


@dataclass(frozen=True, slots=True)
class LineError:
    path: str
    line: int
    reason: str


GZIP_MAGIC = b"\x1f\x8b"


def _opened(path: Path) -> BinaryIO:
    """The file's lines as bytes; a gzip file (rotated and compressed by logrotate, whatever
    its name) decompressed on the fly, known by its first two bytes."""
    with path.open("rb") as probe:
        compressed = probe.read(2) == GZIP_MAGIC
    return cast(BinaryIO, gzip.open(path, "rb")) if compressed else path.open("rb")


def read_cycle_logs(
    paths: Iterable[Path], errors: list[LineError], configs: list[SpecConfig] | None = None
) -> Iterator[RequestRecord]:
    """Every readable record of the files, in file order; bad lines go to `errors`, and so
    does a gzip file cut short (the records before the cut are kept); config lines to
    `configs`, in the order read."""
    for path in paths:
        with _opened(path) as handle:
            number = 0
            try:
                for number, line in enumerate(handle, start=1):
                    if not line.strip():
                        continue
                    try:
                        yield from_line(line)
                    except BadLine as bad:
                        config = read_config_line(line)
                        if config is None:
                            errors.append(LineError(str(path), number, str(bad)))
                        elif configs is not None:
                            configs.append(config)
            except (EOFError, gzip.BadGzipFile, zlib.error) as cut:
                errors.append(LineError(str(path), number + 1, f"gzip data cut short: {cut}"))
