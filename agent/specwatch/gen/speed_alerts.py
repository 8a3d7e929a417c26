"""The speed alerts: speculation surely slower than none, for a model (an A/B baseline or a
configured baseline TPOT) and at some batch sizes (the load table's measured gain)."""

from __future__ import annotations

from specwatch import conventions as C
from specwatch.gen import promql as Q
from specwatch.gen.alert import Alert
from specwatch.gen.template import PromQL

# a gain surely below 1: its estimate where its upper bound is below 1, on every pod
SURELY_SLOWER = PromQL("""
    max by (${by}) (${estimate})
    and on(${by}) max by (${by}) (${upper}) < 1
""")


def slower_than_baseline_alert() -> Alert:
    model = Q.by(Q.MODEL)
    selector = 'method="measured",ctx_bucket="all",task="all"'
    upper = f'{C.ESTIMATED_GAIN_RATIO}{{{selector},bound="upper"}}'
    estimate = f'{C.ESTIMATED_GAIN_RATIO}{{{selector},bound="estimate"}}'
    return Alert(
        name=C.AlertName.SLOWER_THAN_BASELINE,
        severity="critical",
        expr=SURELY_SLOWER(by=model, estimate=estimate, upper=upper),
        for_seconds=600,
        summary="Speculative decoding is slower than no speculation for {{ $labels.model }}",
        description=(
            'Model {{ $labels.model }}: measured gain {{ $value | printf "%.2f" }}: time '
            "per output token without speculation over with it, surely below 1 (the upper "
            "bound of its interval) on every pod."
        ),
        meaning=(
            "With A/B baseline traffic (or a configured `speedup.baseline_tpot_ms` per model), "
            "specwatch measures the gain as the baseline's time per output token over "
            "speculation's, each pooled over the window's tokens, with an interval over "
            "requests. Its whole interval below 1 on every pod: speculation costs more than "
            "it saves, and users wait longer than they would without it."
        ),
        confirm=(
            f"`{C.ESTIMATED_GAIN_RATIO}` by pod and method",
            f"`{Q.alpha('model', '1h')}` and `{Q.tau('model', '1h')}`: is acceptance low, or "
            "is the draft too expensive (c)?",
        ),
        actions=(
            "Turn speculation off for this model (or route traffic to a baseline) now.",
            "Then lower K or change the draft; bring speculation back through a canary.",
        ),
    )


def slower_at_load_alert() -> Alert:
    by_load, by_model = Q.by((*Q.MODEL, C.Label.LOAD)), Q.by(Q.MODEL)
    measured = f'{C.LOAD_GAIN_RATIO}{{method="measured",bound="%s"}}'
    model = f'{C.ESTIMATED_GAIN_RATIO}{{ctx_bucket="all",task="all",bound="estimate"}}'
    return Alert(
        name=C.AlertName.SLOWER_AT_LOAD,
        severity="warning",
        expr=(
            SURELY_SLOWER(by=by_load, estimate=measured % "estimate", upper=measured % "upper")
            + f"\nand on({by_model}) max by ({by_model}) ({model}) >= 1"
        ),
        for_seconds=900,
        summary=(
            "Speculation is slower than none for {{ $labels.model }} at batch sizes "
            "{{ $labels.load }}"
        ),
        description=(
            "Model {{ $labels.model }}: at {{ $labels.load }} requests in flight the measured "
            'gain is {{ $value | printf "%.2f" }}, surely below 1 (the upper bound of its '
            "interval) on every pod, while the model as a whole gains from speculation."
        ),
        meaning=(
            "Drafting costs compute that is free at batch 1 and not at batch 64: the same "
            "draft that pays at low load can be slower than no speculation at high load. "
            "specwatch groups requests by the requests in flight at their upstream when they "
            "started (`load.batch_edges`) and measures the gain in each group against the A/B "
            "baseline requests at the same load, over `load.window_seconds`. The model's "
            "overall gain hides it: its traffic is mostly at the loads where speculation pays."
        ),
        confirm=(
            f"`{C.LOAD_GAIN_RATIO}` by load and bound, and `{C.LOAD_ADVISED_K}`: the K table "
            "specwatch advises (0 where speculation does not pay)",
            "`specwatch advise --cycle-log FILE` (or /status `load`): the table with the "
            "requests and interval behind each range",
            f"`{C.VLLM_RUNNING}` against `{C.UPSTREAM_IN_FLIGHT}`: does the load the proxy "
            "sees match the batch vLLM runs?",
        ),
        actions=(
            "Give vLLM the advised table: `--speculative-config` with "
            '`"num_speculative_tokens_per_batch_size"` from `specwatch advise --json` (K = 0 '
            "turns drafting off at those batch sizes); roll it out through a canary.",
            "Or cap the batch (`--max-num-seqs`) where latency matters more than throughput.",
        ),
    )
