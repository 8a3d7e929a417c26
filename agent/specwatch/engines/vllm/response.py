"""[compiled] Read vLLM's OpenAI responses: the final JSON body, or the SSE stream's final usage
chunk.

Nothing here raises anything but ParseFailure, whose `reason` becomes the `reason` label of
the parse-errors counter. Shapes: the real captures in tests/fixtures.
"""

from __future__ import annotations

import math
import re
from typing import Any

import msgspec
import orjson

from specwatch.conventions import ParseReason
from specwatch.core.records import Latency, SpecDecodeBlock, SpecTotals
from specwatch.engines import Contradiction, Unreadable, fields, llamacpp
from specwatch.engines.answers import native_tokens, other_engine
from specwatch.engines.fields import count as _count
from specwatch.engines.fields import key as _key


class ParseFailure(Exception):
    """A response specwatch cannot read; `reason` is a short, bounded label value."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


class ParsedResponse(msgspec.Struct, frozen=True):
    """What one response (or one stream's final chunk) tells about the request."""

    response_id: str | None
    model: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    spec: SpecDecodeBlock | None
    latency: Latency
    bad_fields: tuple[str, ...] = ()  # readable response, unreadable optional fields (reasons)
    totals: SpecTotals | None = None  # an engine that sends totals only (engines/)


def _counts(value: Any, field: str) -> tuple[int, ...]:
    try:
        return fields.counts(value, field)
    except Unreadable as unreadable:
        raise ParseFailure(ParseReason.BAD_SPEC_BLOCK, str(unreadable)) from None


_NUMBER = (int, float)  # a tuple made once (`int | float` is made again at every call)


def _number(value: Any) -> float | None:
    """A JSON number (not a bool) as a float, else None."""
    return float(value) if isinstance(value, _NUMBER) and not isinstance(value, bool) else None


def _seconds(ms: float | None) -> float | None:
    """Milliseconds as seconds where finite and not negative, else None."""
    if ms is None:
        return None
    seconds = ms / 1000.0
    # finite and not negative: isinf, not isfinite (the compiled build's idiom)
    return seconds if 0.0 <= seconds and not math.isinf(seconds) else None


def _check_total(key: str, value: Any, expected: int) -> None:
    if value is not None and _count(value) != expected:
        raise ParseFailure(
            ParseReason.INCONSISTENT_SPEC_BLOCK, f"{key}={value!r}, steps say {expected}"
        )


def _histogram(value: Any, field: str, k: int | None) -> tuple[int, ...]:
    try:
        return fields.histogram(value, field, k)
    except Unreadable as unreadable:
        raise ParseFailure(ParseReason.BAD_SPEC_BLOCK, str(unreadable)) from None


def _by_draft_length(value: Any, k: int | None) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """`acceptance_histogram_by_draft_length`: {"d": histogram of steps by accepted j}.
    Rows with d = 0 are steps that drafted nothing. Steps come back grouped by d (unordered)."""
    if not isinstance(value, dict):
        raise ParseFailure(ParseReason.BAD_SPEC_BLOCK, "acceptance_histogram_by_draft_length")
    drafted: list[int] = []
    accepted: list[int] = []
    rows = []
    for key, row in value.items():
        d = _key(key)
        if d is None:
            raise ParseFailure(ParseReason.BAD_SPEC_BLOCK, f"draft length key {key!r}")
        rows.append((d, _histogram(row, "acceptance_histogram_by_draft_length", None)))
    for d, histogram in sorted(rows):
        if k is not None and d > k:
            raise ParseFailure(ParseReason.INCONSISTENT_SPEC_BLOCK, "a step drafted more than K")
        if any(histogram[d + 1 :]):
            raise ParseFailure(
                ParseReason.INCONSISTENT_SPEC_BLOCK, "a step accepted more than it drafted"
            )
        for j, n in enumerate(histogram[: d + 1]):
            drafted.extend((d,) * n)
            accepted.extend((j,) * n)
    return tuple(drafted), tuple(accepted)


def parse_spec_block(block: Any) -> SpecDecodeBlock:
    """vLLM's per-request block: `metrics.speculative_decoding` (0.32) or a choice's
    `speculative_decoding_stats` (the per-choice shape), read from the most exact form it has:
    ordered per-step arrays (detailed), a histogram per draft length (newer builds; steps
    that drafted nothing included), or one histogram of accepted counts (summary), which
    says nothing of each step's draft length and so is read only at one K."""
    if not isinstance(block, dict):
        raise ParseFailure(ParseReason.BAD_SPEC_BLOCK, "not an object")
    k = _count(block.get("num_spec_tokens"))
    # vLLM 0.32 sends the per-step arrays as null when a request had no speculative step
    # (e.g. all of it at a batch size its schedule gives K = 0): the histogram says the same
    if block.get("per_step_drafted") is not None or block.get("per_step_accepted") is not None:
        drafted = _counts(block.get("per_step_drafted"), "per_step_drafted")
        accepted = _counts(block.get("per_step_accepted"), "per_step_accepted")
        k = per_step_k(drafted, accepted, k)
        ordered = True
    elif block.get("acceptance_histogram_by_draft_length") is not None:
        drafted, accepted = _by_draft_length(block["acceptance_histogram_by_draft_length"], k)
        if k is None:
            k = max(drafted, default=0)
        ordered = False
    else:
        histogram = _histogram(block.get("acceptance_histogram"), "acceptance_histogram", k)
        if k is None:
            k = len(histogram) - 1
        if len(histogram) != k + 1:
            raise ParseFailure(ParseReason.INCONSISTENT_SPEC_BLOCK, "histogram length is not K + 1")
        accepted = tuple(a for a, n in enumerate(histogram) for _ in range(n))
        draft_tokens = _count(block.get("num_draft_tokens"))
        if draft_tokens is not None and draft_tokens != k * len(accepted):
            # Variable K (a batch-size schedule, adaptive drafting): each step's draft length,
            # and so its trials, is unknown. Counted, not guessed.
            raise ParseFailure(
                ParseReason.UNKNOWN_DRAFT_LENGTHS,
                f"summary block with {draft_tokens} draft tokens over {len(accepted)} steps "
                f"at K = {k}: run vLLM with --per-request-spec-decode-metrics detailed",
            )
        drafted = (k,) * len(accepted)
        ordered = False
    # absent or not a number: nothing to compare (analysis/causes/rules.py)
    reported = _number(block.get("mean_acceptance_length"))
    return checked_block(
        k,
        drafted,
        accepted,
        ordered,
        (
            block.get("num_spec_steps"),
            block.get("num_draft_tokens"),
            block.get("num_accepted_draft_tokens"),
        ),
        reported,
    )


def per_step_k(drafted: tuple[int, ...], accepted: tuple[int, ...], k: int | None) -> int:
    """K of a block with per-step arrays (`num_spec_tokens`, else the largest draft), after
    the checks the arrays must pass (counts both: not negative)."""
    if len(drafted) != len(accepted):
        raise ParseFailure(ParseReason.INCONSISTENT_SPEC_BLOCK, "per-step arrays differ in length")
    most = 0
    for i in range(len(drafted)):  # one compiled loop, not three builtin calls
        d = drafted[i]
        if accepted[i] > d:
            raise ParseFailure(
                ParseReason.INCONSISTENT_SPEC_BLOCK, "a step accepted more than it drafted"
            )
        if d > most:
            most = d
    if k is None:
        k = most
    if most > k:
        raise ParseFailure(ParseReason.INCONSISTENT_SPEC_BLOCK, "a step drafted more than K")
    return k


def checked_block(
    k: int,
    drafted: tuple[int, ...],
    accepted: tuple[int, ...],
    ordered: bool,
    totals: tuple[Any, Any, Any],
    reported: float | None,
) -> SpecDecodeBlock:
    """The steps checked against the block's own totals (`num_spec_steps`, `num_draft_tokens`,
    `num_accepted_draft_tokens`, each None where absent), as a SpecDecodeBlock; `reported`:
    its `mean_acceptance_length`, where a number."""
    steps, draft_tokens, accepted_tokens = totals
    drafting = total_d = total_a = 0
    for d in drafted:  # compiled loops, not builtin calls
        total_d += d
        if d:
            drafting += 1
    for a in accepted:
        total_a += a
    # steps that drafted nothing are in vLLM 0.32's count; newer builds' K = 0 rows may not be
    if _count(steps) != drafting:
        _check_total("num_spec_steps", steps, len(drafted))
    _check_total("num_draft_tokens", draft_tokens, total_d)
    _check_total("num_accepted_draft_tokens", accepted_tokens, total_a)
    if reported is not None and not math.isfinite(reported):
        reported = None
    return SpecDecodeBlock(
        num_spec_tokens=k,
        drafted=drafted,
        accepted=accepted,
        ordered=ordered,
        reported_tau=None if reported is None else float(reported),
    )


def latency_of(
    ttft_ms: float | None, itl_ms: float | None, generation_ms: float | None, tokens: int | None
) -> Latency:
    """vLLM's per-request timing (`metrics`, in ms): what is not a finite, non-negative number
    is unknown; tpot from the generation time where the mean ITL is missing."""
    ttft, tpot, generation = _seconds(ttft_ms), _seconds(itl_ms), _seconds(generation_ms)
    if tpot is None and generation is not None and tokens and tokens > 1:
        tpot = generation / (tokens - 1)
    e2e = None if ttft is None or generation is None else ttft + generation
    return Latency(ttft=ttft, tpot=tpot, e2e=e2e)


def _choice_block(obj: dict[str, Any]) -> Any:
    """The per-choice `speculative_decoding_stats` of a one-choice response, else None (with
    n > 1 each choice is its own sequence, and none is the request's)."""
    choices = obj.get("choices")
    if isinstance(choices, list) and len(choices) == 1 and isinstance(choices[0], dict):
        return choices[0].get("speculative_decoding_stats")
    return None


def parse_response_object(obj: Any) -> ParsedResponse:
    """A decoded completion / chat completion body, or a stream's final usage chunk."""
    if not isinstance(obj, dict):
        raise ParseFailure(ParseReason.NOT_AN_OBJECT)
    bad: list[str] = []
    usage = obj.get("usage")
    prompt_tokens = completion_tokens = None
    if isinstance(usage, dict):
        prompt_tokens = _count(usage.get("prompt_tokens"))
        completion_tokens = _count(usage.get("completion_tokens"))
        if prompt_tokens is None or completion_tokens is None:
            bad.append(ParseReason.BAD_USAGE)
    elif usage is not None:
        bad.append(ParseReason.BAD_USAGE)
    else:
        prompt_tokens, completion_tokens = native_tokens(obj)
    metrics = obj.get("metrics")
    spec = None
    latency = Latency()
    choice_block = _choice_block(obj)
    if choice_block is not None:
        spec = parse_spec_block(choice_block)
    if isinstance(metrics, dict):
        if metrics.get("speculative_decoding") is not None:
            spec = parse_spec_block(metrics["speculative_decoding"])
        latency = latency_of(
            _number(metrics.get("time_to_first_token_ms")),
            _number(metrics.get("mean_itl_ms")),
            _number(metrics.get("generation_time_ms")),
            completion_tokens,
        )
    elif metrics is not None:
        raise ParseFailure(ParseReason.BAD_METRICS, "metrics is not an object")
    totals = None
    if spec is None:
        try:
            found = other_engine(obj)
        except Contradiction as contradiction:
            raise ParseFailure(ParseReason.INCONSISTENT_SPEC_BLOCK, str(contradiction)) from None
        except Unreadable as unreadable:
            raise ParseFailure(ParseReason.BAD_SPEC_BLOCK, str(unreadable)) from None
        spec, totals = (None, found) if isinstance(found, SpecTotals) else (found, None)
        if totals is not None and totals.engine == llamacpp.ENGINE:
            latency = Latency(tpot=llamacpp.tpot_seconds(obj))
    model = obj.get("model")
    response_id = obj.get("id")
    return ParsedResponse(
        response_id=response_id if isinstance(response_id, str) else None,
        model=model if isinstance(model, str) and model else None,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        spec=spec,
        latency=latency,
        bad_fields=tuple(bad),
        totals=totals,
    )


def first_choice(obj: Any) -> dict[str, Any] | None:
    """`choices[0]` of a response or chunk, when it is an object."""
    choices = obj.get("choices") if isinstance(obj, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    return choices[0]


def choice_text(choice: dict[str, Any]) -> str | None:
    """A choice's output text: `text` (completions), else `message` / `delta` content (chat)."""
    if isinstance(choice.get("text"), str):
        return str(choice["text"])
    for key in ("message", "delta"):
        part = choice.get(key)
        if isinstance(part, dict) and isinstance(part.get("content"), str):
            return str(part["content"])
    return None


def decode_json(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise ParseFailure(ParseReason.INVALID_JSON, str(error)[:120]) from None


def parse_response_body(body: bytes) -> ParsedResponse:
    """A non-streaming response body."""
    return parse_response_object(decode_json(body))


# --- server-sent events -------------------------------------------------------------------


def event_data(event: bytes) -> bytes | None:
    """The joined `data:` field of one event, or None when it has none."""
    if (
        event.startswith(b"data: ")
        and event.endswith(b"\n\n")
        and event.find(b"\n") == len(event) - 2
        and event.find(b"\r") < 0
    ):
        return event[6:-2]  # one `data: ` line, as vLLM writes every event: no split, no join
    return _joined_data(event)


def _joined_data(event: bytes) -> bytes | None:
    parts = []
    for line in event.splitlines():
        if line.startswith(b"data:"):
            value = line[5:]
            parts.append(value[1:] if value.startswith(b" ") else value)
    return b"\n".join(parts) if parts else None


# Byte searches here are `find`, not `in`: CPython 3.11's `bytes in bytes` first reads the
# needle as an integer and formats the TypeError it then drops, twice a `find`'s cost.
_EMPTY_CHOICES = re.compile(rb'"choices"\s*:\s*\[\s*\]')


def carries_usage(event: bytes) -> bool:
    """A chunk with usage in it: `"usage"`, but not SGLang's `"usage":null` (its serializer
    writes the field on every chunk, null where there is none)."""
    return event.find(b'"usage"') >= 0 and event.find(b'"usage":null') < 0


def is_usage_event(event: bytes) -> bool:
    """The final usage chunk of an OpenAI stream: `"choices": []` with usage (cheap byte test)."""
    return carries_usage(event) and (
        event.find(b'"choices":[]') >= 0 or _EMPTY_CHOICES.search(event) is not None
    )


def is_details_event(event: bytes) -> bool:
    """SGLang's chunk of its own for `sglext` (`"choices": []`, before the usage chunk)."""
    return event.find(b'"sglext"') >= 0 and _EMPTY_CHOICES.search(event) is not None


def finishes(event: bytes) -> bool:
    """A chunk that carries a finish_reason (for n = 1: the last content chunk)."""
    return event.find(b'"finish_reason":') >= 0 and event.find(b'"finish_reason":null') < 0
