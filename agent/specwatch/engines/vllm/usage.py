"""[compiled] vLLM's usage event: read by msgspec's typed decoder, the one shape every observed
stream ends with, in one C pass instead of a dict tree walked field by field; and the fingerprint it
takes from the last content chunk, given back (restore_fingerprint).

The typed read takes only the shape vLLM writes (`metrics.speculative_decoding` with the
per-step arrays, counts that are counts, `choices` empty); anything else, and anything it
cannot decode, goes to the general reader (response.parse_response_object), which says what
is wrong with it. Where both read an event they give the same ParsedResponse: the checks are
the general reader's own (response.per_step_k, response.checked_block, response.latency_of),
and tests/unit/engines/test_vllm_usage.py holds the two together on generated blocks.
"""

from __future__ import annotations

import msgspec
import orjson

from specwatch.engines.vllm.response import (
    ParsedResponse,
    checked_block,
    decode_json,
    event_data,
    latency_of,
    parse_response_object,
    per_step_k,
)
from specwatch.engines.vllm.shape import UsageEvent

_DECODER = msgspec.json.Decoder(UsageEvent)


def parse_usage_data(data: bytes) -> ParsedResponse:
    """The `data:` of a stream's final event (raises ParseFailure, as the general reader)."""
    parsed = typed_read(data)
    return parse_response_object(decode_json(data)) if parsed is None else parsed


def typed_read(data: bytes) -> ParsedResponse | None:
    """The event read as vLLM's shape, or None when it is not (the general reader's then)."""
    # the per-step arrays sit near the end of vLLM's event: a search from there decides
    # whether the typed read can take it
    if data.rfind(b'"per_step_drafted"') < 0:
        return None
    try:
        event = _DECODER.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    return None if event.choices else _parsed(event)


def _parsed(event: UsageEvent) -> ParsedResponse:
    block, metrics, usage = event.metrics.speculative_decoding, event.metrics, event.usage
    drafted, accepted = block.per_step_drafted, block.per_step_accepted
    k = per_step_k(drafted, accepted, block.num_spec_tokens)
    totals = (block.num_spec_steps, block.num_draft_tokens, block.num_accepted_draft_tokens)
    completion = usage.completion_tokens
    return ParsedResponse(
        response_id=event.id,
        model=event.model or None,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=completion,
        spec=checked_block(k, drafted, accepted, True, totals, block.mean_acceptance_length),
        latency=latency_of(
            metrics.time_to_first_token_ms,
            metrics.mean_itl_ms,
            metrics.generation_time_ms,
            completion,
        ),
    )


def restore_fingerprint(held: bytes, usage: bytes) -> bytes:
    """Give the last content chunk the system_fingerprint vLLM puts there without usage.

    vLLM moves `system_fingerprint` from the last content chunk to the usage chunk when usage
    is asked for; when specwatch asked for it on the client's behalf, the client gets the
    chunk it would have got: vLLM's own bytes, the field added last. Any doubt: the chunk is
    returned unchanged.
    """
    if held.find(b'"system_fingerprint"') >= 0:
        return held
    try:
        usage_data, held_data = event_data(usage), event_data(held)
        if usage_data is None or held_data is None:
            return held
        chunk = orjson.loads(held_data)
        fingerprint = _fingerprint_token(usage_data)
        if fingerprint is None:  # not as vLLM writes it: read as JSON
            value = orjson.loads(usage_data).get("system_fingerprint")
            fingerprint = orjson.dumps(value) if isinstance(value, str) else None
    except (orjson.JSONDecodeError, AttributeError):
        return held
    if fingerprint is None or not isinstance(chunk, dict):
        return held
    terminator = held[len(held.rstrip(b"\r\n")) :]
    if chunk and held_data.endswith(b"}"):  # the field spliced in, the rest as vLLM wrote it
        spliced = held_data[:-1] + b',"system_fingerprint":' + fingerprint + b"}"
        return b"data: " + spliced + terminator
    chunk["system_fingerprint"] = orjson.loads(fingerprint)
    return b"data: " + orjson.dumps(chunk) + terminator


_FINGERPRINT = b'"system_fingerprint":"'


def _fingerprint_token(data: bytes) -> bytes | None:
    """The fingerprint's JSON string as vLLM writes it (compact, no escape), else None."""
    start = data.find(_FINGERPRINT)
    if start < 0:
        return None
    start += len(_FINGERPRINT) - 1  # at its opening quote
    end = data.find(b'"', start + 1)
    if end < 0 or data.find(b"\\", start, end) >= 0:
        return None
    return data[start : end + 1]
