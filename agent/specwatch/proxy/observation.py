"""[compiled] What the proxy saw of one request; its reading into a RequestRecord, off the request
path."""

from __future__ import annotations

import contextlib

import msgspec

from specwatch.conventions import (
    OTHER,
    VARIANT_BASELINE,
    VARIANT_SPEC,
    Outcome,
    ParseReason,
    ParseSource,
    TpotSource,
)
from specwatch.core.health import Health
from specwatch.core.records import Latency, RequestRecord, SpecTotals
from specwatch.engines.detect import SGLANG
from specwatch.engines.vllm.response import (
    ParsedResponse,
    ParseFailure,
    event_data,
    parse_response_body,
)
from specwatch.engines.vllm.usage import parse_usage_data
from specwatch.proxy.budget import Held
from specwatch.proxy.tasks import RequestFeatures, classify
from specwatch.settings import TaskSettings


class Observation(msgspec.Struct, frozen=True):
    """Raw material from the proxy; `payload` is the whole body, or the stream's usage event."""

    ts: float
    request_id: str
    features: RequestFeatures
    outcome: str | None  # decided by the proxy (errors, aborts), or None: read the payload
    stream: bool
    payload: bytes | None
    e2e: float | None  # seconds, as the client saw it
    first_byte: float | None  # seconds to the first body byte (streams: first token)
    parse_failure: str | None = None  # found by the proxy itself (e.g. a truncated stream)
    variant: str = VARIANT_SPEC  # A/B: the upstream that served it
    in_flight: int | None = None  # observed requests in flight at that upstream, itself too
    # a stream's finishing chunk whose choice carries the per-request block (per-choice shape)
    choice_stats: bytes | None = None
    details_asked: bool = False  # specwatch asked SGLang for its details (engines/sglang.py)
    held: Held | None = None  # what the payloads hold of the byte budget, until they are read
    status: int | None = None  # the upstream's HTTP status, where it answered


def _parse(obs: Observation) -> ParsedResponse | None:
    if not obs.stream:
        return None if obs.payload is None else parse_response_body(obs.payload)
    parsed = None if obs.payload is None else _parse_event(obs.payload)
    if obs.choice_stats is not None and (parsed is None or parsed.spec is None):
        # the per-choice shape: the block came on the finishing chunk, usage (if any) after it;
        # llama.cpp's finishing chunk carries its timings and usage both
        chunk = _parse_event(obs.choice_stats)
        if parsed is None:
            parsed = chunk
        else:
            parsed = msgspec.structs.replace(parsed, spec=chunk.spec, totals=chunk.totals)
    return parsed


def _parse_event(event: bytes) -> ParsedResponse:
    data = event_data(event)
    if data is None:
        raise ParseFailure(ParseReason.BAD_USAGE_EVENT)
    return parse_usage_data(data)


def _as_served(
    obs: Observation, parsed: ParsedResponse, health: Health, tree: bool
) -> ParsedResponse:
    """What the answer's data says of the request that was sent.
    - Several prompts: SGLang details the first alone, beside every prompt's usage
      (serving_completions.py), so none is read (counted, `several_prompts`).
    - SGLang asked for its details and sending none, having made one token at most: it
      verified no step (it details only verified requests), so nothing was drafted; not data
      missing.
    - Tree drafts (`tree`: SGLang's --speculative-eagle-topk > 1): a step verifies a tree
      whose nodes SGLang counts as proposed, and its histogram holds accepted depths, not a
      line of K positions: read as totals (the rate over the nodes, and tau), never as
      per-position trials."""
    if obs.features.prompts > 1:
        if parsed.spec is not None or parsed.totals is not None:
            health.parse_error(ParseSource.RESPONSE, ParseReason.SEVERAL_PROMPTS)
        return msgspec.structs.replace(parsed, spec=None, totals=None)
    if (
        obs.details_asked
        and parsed.spec is None
        and parsed.totals is None
        and parsed.completion_tokens is not None
        and parsed.completion_tokens <= 1
    ):
        return msgspec.structs.replace(parsed, totals=SpecTotals(0, 0, 0, engine=SGLANG))
    if tree and parsed.spec is not None:
        spec = parsed.spec
        totals = SpecTotals(sum(spec.drafted), sum(spec.accepted), spec.steps, engine=SGLANG)
        return msgspec.structs.replace(parsed, spec=None, totals=totals)
    return parsed


def to_record(
    obs: Observation,
    tasks: TaskSettings,
    health: Health,
    config: str | None = None,
    tree: bool = False,
    served: str | None = None,
) -> RequestRecord:
    """Classify and parse one observation; every failure is counted, none raises. `config`:
    the id of the speculative config it ran under; `tree`: whether it drafts trees; `served`:
    the model of a request that names none (SGLang's native /generate), where known."""
    task = classify(obs.features, tasks)
    outcome = obs.outcome
    parsed: ParsedResponse | None = None
    source = ParseSource.SSE if obs.stream else ParseSource.RESPONSE
    if obs.parse_failure is not None:
        health.parse_error(source, obs.parse_failure)
    if outcome == Outcome.CLIENT_ABORTED and (obs.payload or obs.choice_stats) is not None:
        # The client left after the upstream's final metrics had passed: vLLM ran those steps,
        # and specwatch saw them (the outcome stays client_aborted).
        with contextlib.suppress(ParseFailure):
            parsed = _parse(obs)
    elif outcome is None:
        try:
            parsed = _parse(obs)
        except ParseFailure as failure:
            health.parse_error(source, failure.reason)
            outcome = Outcome.PARSE_ERROR
        else:
            if parsed is not None:
                parsed = _as_served(obs, parsed, health, tree)
            if obs.variant == VARIANT_BASELINE:  # no speculation there: nothing to miss
                outcome = Outcome.OBSERVED
            elif parsed is None or (parsed.spec is None and parsed.totals is None):
                outcome = Outcome.NO_SPEC_METRICS
            else:
                outcome = Outcome.OBSERVED
            for reason in parsed.bad_fields if parsed else ():
                health.parse_error(source, reason)
    model = (parsed.model if parsed else None) or obs.features.model or served or OTHER
    latency = parsed.latency if parsed else Latency()
    tpot, tpot_source = latency.tpot, latency.tpot_source
    tokens = parsed.completion_tokens if parsed else None
    first, e2e = obs.first_byte, obs.e2e
    if tpot is None and obs.stream and first is not None and e2e is not None and (tokens or 0) > 1:
        # vLLM gave no timing (run without --enable-per-request-metrics): the stream's own,
        # from the first byte to the end, over the tokens after the first
        tpot, tpot_source = max(0.0, e2e - first) / ((tokens or 2) - 1), TpotSource.STREAM
    return RequestRecord(
        ts=obs.ts,
        request_id=(parsed.response_id if parsed else None) or obs.request_id,
        model=model,
        task=task,
        outcome=outcome,
        prompt_tokens=(parsed.prompt_tokens if parsed else None) or obs.features.prompt_tokens,
        completion_tokens=parsed.completion_tokens if parsed else None,
        spec=parsed.spec if parsed else None,
        totals=parsed.totals if parsed else None,
        latency=Latency(
            ttft=latency.ttft
            if latency.ttft is not None
            else obs.first_byte
            if obs.stream
            else None,
            tpot=tpot,
            e2e=obs.e2e,
            tpot_source=tpot_source,
        ),
        variant=obs.variant,
        in_flight=obs.in_flight,
        config=config,
        status=obs.status,
        sampling=obs.features.sampling,
    )
