"""The acceptance counters: numerators, denominators and request moments, summed across pods
before any division (entered first in the metric table, conventions/table.py)."""

from __future__ import annotations

from typing import Final

from specwatch.conventions.names import RUN_LABELS, SLICE_LABELS, Label
from specwatch.conventions.table import Kind, _metric

_C = Kind.COUNTER
_SLICE = (*SLICE_LABELS, *RUN_LABELS)
_MODEL = (Label.MODEL, *RUN_LABELS)

# Per-slice counters: numerators and denominators; sum across pods before dividing.
SPEC_STEPS: Final = _metric(
    "specwatch_spec_steps", _C, "Speculative steps (vLLM's drafts) seen by the proxy.", _SLICE
)
DRAFT_TOKENS: Final = _metric("specwatch_draft_tokens", _C, "Draft tokens proposed.", _SLICE)
ACCEPTED_TOKENS: Final = _metric(
    "specwatch_accepted_tokens", _C, "Draft tokens accepted by the target.", _SLICE
)
ACCEPTANCE_TRIALS: Final = _metric(
    "specwatch_acceptance_trials",
    _C,
    "Draft positions actually tested: accepted + 1 per step that ended in a rejection "
    "(denominator of alpha-hat).",
    _SLICE,
)
# The request-level variance of alpha-hat (analysis/counting/stats.py), summable across pods: per
# slice, the requests with steps in it, and over them the sums of a_i^2, a_i t_i and t_i^2
# (a_i, t_i: a request's accepted tokens and trials in the slice).
SLICE_REQUESTS: Final = _metric(
    "specwatch_slice_requests",
    _C,
    "Requests with steps in the slice: the sampling units of its intervals.",
    _SLICE,
)
REQUEST_ACCEPTED_SQUARED: Final = _metric(
    "specwatch_request_accepted_squared",
    _C,
    "Sum over requests of (the request's accepted tokens in the slice)^2.",
    _SLICE,
)
REQUEST_ACCEPTED_X_TRIALS: Final = _metric(
    "specwatch_request_accepted_x_trials",
    _C,
    "Sum over requests of the request's accepted tokens x its trials in the slice.",
    _SLICE,
)
REQUEST_TRIALS_SQUARED: Final = _metric(
    "specwatch_request_trials_squared",
    _C,
    "Sum over requests of (the request's trials in the slice)^2.",
    _SLICE,
)
ACCEPTED_BY_POSITION: Final = _metric(
    "specwatch_accepted_tokens_by_position",
    _C,
    "Steps whose draft position `position` (1..K) was accepted.",
    (*_SLICE, Label.POSITION),
)
DRAFTED_BY_POSITION: Final = _metric(
    "specwatch_drafted_steps_by_position",
    _C,
    "Steps that drafted at least `position` tokens: the denominator of per-position "
    "acceptance (with variable K a position beyond a step's draft is not a rejection).",
    (*_SLICE, Label.POSITION),
)

# The model rollup's request-level variance: a request whose steps cross ctx buckets is one
# sampling unit of its model, with the moments of its whole accepted tokens and trials (the
# per-slice moments above split it into one unit per bucket and drop the covariance).
MODEL_REQUESTS: Final = _metric(
    "specwatch_model_requests",
    _C,
    "Requests with steps, per model: the sampling units of the model rollup's intervals.",
    _MODEL,
)
MODEL_REQUEST_ACCEPTED_SQUARED: Final = _metric(
    "specwatch_model_request_accepted_squared",
    _C,
    "Sum over requests of (the request's accepted tokens)^2, per model.",
    _MODEL,
)
MODEL_REQUEST_ACCEPTED_X_TRIALS: Final = _metric(
    "specwatch_model_request_accepted_x_trials",
    _C,
    "Sum over requests of the request's accepted tokens x its trials, per model.",
    _MODEL,
)
MODEL_REQUEST_TRIALS_SQUARED: Final = _metric(
    "specwatch_model_request_trials_squared",
    _C,
    "Sum over requests of (the request's trials)^2, per model.",
    _MODEL,
)

# Goodput (analysis/speed/goodput.py): per cell (slice x load bucket), over speculative requests
# with a time per output token, the sums of decode seconds s_i and decode tokens y_i (output tokens
# - 1) and their second moments: TPOT = sum(s) / sum(y) and its request-level variance, summed
# across pods; what the canary's goodput comparison (gen/goodput_rules.py) reads.
_CELL = (*_SLICE, Label.LOAD)
GOODPUT_REQUESTS: Final = _metric(
    "specwatch_goodput_requests",
    _C,
    "Speculative requests with a time per output token, per slice and load bucket.",
    _CELL,
)
GOODPUT_DECODE_SECONDS: Final = _metric(
    "specwatch_goodput_decode_seconds",
    _C,
    "Decode seconds (the generation time after the first token) of those requests.",
    _CELL,
)
GOODPUT_DECODE_TOKENS: Final = _metric(
    "specwatch_goodput_decode_tokens",
    _C,
    "Decode tokens (output tokens - 1) of those requests: TPOT's denominator.",
    _CELL,
)
GOODPUT_SECONDS_SQUARED: Final = _metric(
    "specwatch_goodput_decode_seconds_squared",
    _C,
    "Sum over requests of (the request's decode seconds)^2.",
    _CELL,
)
GOODPUT_SECONDS_X_TOKENS: Final = _metric(
    "specwatch_goodput_decode_seconds_x_tokens",
    _C,
    "Sum over requests of the request's decode seconds x its decode tokens.",
    _CELL,
)
GOODPUT_TOKENS_SQUARED: Final = _metric(
    "specwatch_goodput_decode_tokens_squared",
    _C,
    "Sum over requests of (the request's decode tokens)^2.",
    _CELL,
)
# The load moments of a comparison at the same load (analysis/compare/goodput.py): b_i is the
# request's load (requests in flight at the upstream as it started).
GOODPUT_TOKENS_X_LOAD: Final = _metric(
    "specwatch_goodput_decode_tokens_x_load",
    _C,
    "Sum over requests of the request's decode tokens x its load (requests in flight).",
    _CELL,
)
GOODPUT_SECONDS_X_LOAD: Final = _metric(
    "specwatch_goodput_decode_seconds_x_load",
    _C,
    "Sum over requests of the request's decode seconds x its load.",
    _CELL,
)
GOODPUT_TOKENS_X_LOAD_SQUARED: Final = _metric(
    "specwatch_goodput_decode_tokens_x_load_squared",
    _C,
    "Sum over requests of the request's decode tokens x (its load)^2.",
    _CELL,
)
GOODPUT_TOKENS_SQUARED_X_LOAD: Final = _metric(
    "specwatch_goodput_decode_tokens_squared_x_load",
    _C,
    "Sum over requests of (the request's decode tokens)^2 x its load.",
    _CELL,
)
GOODPUT_TOKENS_SQUARED_X_LOAD_SQUARED: Final = _metric(
    "specwatch_goodput_decode_tokens_squared_x_load_squared",
    _C,
    "Sum over requests of (the request's decode tokens x its load)^2.",
    _CELL,
)
# TPOT's two factors (analysis/compare/goodput.py): s_i the request's engine steps after its
# first token (those vLLM lists, and the plain ones), so that TPOT = (x / s) / (y / s): the
# step's time over the tokens a step yields.
GOODPUT_STEPS: Final = _metric(
    "specwatch_goodput_decode_steps",
    _C,
    "Engine steps after the first token of those requests (listed speculative steps and "
    "plain ones): the step time's and tokens per step's denominator.",
    _CELL,
)
GOODPUT_STEPS_SQUARED: Final = _metric(
    "specwatch_goodput_decode_steps_squared",
    _C,
    "Sum over requests of (the request's decode steps)^2.",
    _CELL,
)
GOODPUT_SECONDS_X_STEPS: Final = _metric(
    "specwatch_goodput_decode_seconds_x_steps",
    _C,
    "Sum over requests of the request's decode seconds x its decode steps.",
    _CELL,
)
GOODPUT_TOKENS_X_STEPS: Final = _metric(
    "specwatch_goodput_decode_tokens_x_steps",
    _C,
    "Sum over requests of the request's decode tokens x its decode steps.",
    _CELL,
)

# A goodput cell's counters in analysis/counting/sums.DecodeSums.decode_fields' order: what the
# exposition writes and the recording rules read
GOODPUT_CELL_COUNTERS: Final = (
    GOODPUT_REQUESTS,
    GOODPUT_DECODE_SECONDS,
    GOODPUT_DECODE_TOKENS,
    GOODPUT_SECONDS_SQUARED,
    GOODPUT_SECONDS_X_TOKENS,
    GOODPUT_TOKENS_SQUARED,
    GOODPUT_TOKENS_X_LOAD,
    GOODPUT_SECONDS_X_LOAD,
    GOODPUT_TOKENS_X_LOAD_SQUARED,
    GOODPUT_TOKENS_SQUARED_X_LOAD,
    GOODPUT_TOKENS_SQUARED_X_LOAD_SQUARED,
    GOODPUT_STEPS,
    GOODPUT_STEPS_SQUARED,
    GOODPUT_SECONDS_X_STEPS,
    GOODPUT_TOKENS_X_STEPS,
)

# Latency SLOs (settings: latency_slos; docs/latency-slos.md): each request against each
# objective that covers it, by its result. The SLI's events are every result but `unmeasured`;
# its good events `good`. Per pod: objectives x models x variants x 6 results.
LATENCY_SLO_REQUESTS: Final = _metric(
    "specwatch_latency_slo_requests",
    _C,
    "Requests judged against a latency objective (slo), by result: good, ttft_missed, "
    "tpot_missed, both_missed, error, or unmeasured (not an SLI event).",
    (Label.MODEL, Label.VARIANT, *RUN_LABELS, Label.SLO, Label.RESULT),
)
# The same for speculation's requests by the load they ran at (the canary's burn against
# stable's at the same load): objectives x models x load buckets x 2 per pod.
LATENCY_SLO_LOAD_REQUESTS: Final = _metric(
    "specwatch_latency_slo_load_requests",
    _C,
    "Speculative requests judged against a latency objective (slo) by their batch-size "
    "bucket (load, as they started), good or bad; unmeasured ones and those whose load is "
    "unknown are not counted.",
    (Label.MODEL, *RUN_LABELS, Label.SLO, Label.LOAD, Label.RESULT),
)
LATENCY_SLO_OBJECTIVE: Final = _metric(
    "specwatch_latency_slo_objective",
    Kind.GAUGE,
    "A latency objective's target share of good requests (settings: latency_slos), what the "
    "burn-rate rules divide by.",
    (Label.SLO,),
)
