"""The settings of the service around the analysis: tasks, limits, files, A/B, alerts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator, model_validator
from pydantic_settings import NoDecode

from specwatch.conventions import ALL, Header
from specwatch.settings.base import Part, http_url, split_csv

DEFAULT_TASKS = (
    "chat",
    "code",
    "summarization",
    "translation",
    "extraction",
    "reasoning",
    "tool_call",
    "structured",
)


class TaskSettings(Part):
    """How a request gets its `task` label; values outside the allowlist never become labels."""

    allowlist: Annotated[tuple[str, ...], NoDecode] = DEFAULT_TASKS
    header: str = Header.TASK
    by_model: dict[str, str] = Field(default_factory=dict)
    by_path: dict[str, str] = Field(default_factory=dict)
    classify_prompt: bool = True

    _split = field_validator("allowlist", mode="before")(split_csv)

    @field_validator("allowlist")
    @classmethod
    def _names_are_label_safe(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if name == ALL:
                raise ValueError("'all' is reserved for the per-model rollup")
            if not name.replace("_", "").isalnum() or name != name.lower():
                raise ValueError(f"task name {name!r} must be lower-case letters, digits and _")
        return tuple(dict.fromkeys(value))

    @model_validator(mode="after")
    def _mappings_name_allowed_tasks(self) -> TaskSettings:
        for where, mapping in (("by_model", self.by_model), ("by_path", self.by_path)):
            for key, task in mapping.items():
                if task not in self.allowlist:
                    raise ValueError(f"{where}[{key!r}] = {task!r} is not in the task allowlist")
        return self


class LimitSettings(Part):
    """Bounds that keep memory and label cardinality flat."""

    max_models: int = Field(default=16, ge=1)
    max_response_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    # the bodies and events held to be read, all requests together (proxy/budget.py)
    max_observed_bytes: int = Field(default=256 * 1024 * 1024, ge=1024)
    max_request_bytes: int = Field(default=32 * 1024 * 1024, ge=1024)
    analysis_queue: int = Field(default=10_000, ge=1)
    max_concurrent_requests: int = Field(default=1024, ge=1)  # beyond: 503, Retry-After
    body_read_timeout_seconds: float = Field(default=60.0, gt=0)  # a slow client: 408
    # A connection that has not sent complete request headers within this time, or sits idle
    # between requests this long, is closed (slowloris; aiohttp's keep-alive timer).
    header_read_timeout_seconds: float = Field(default=60.0, gt=0)
    upstream_keepalive_seconds: float = Field(default=15.0, gt=0)  # idle pooled connections
    # `proxy`: how long the analysis waits for vLLM's GET /version before labelling with an
    # unknown version (requests are relayed meanwhile; what they tell waits to be counted).
    # `serve` waits for its own vLLM however long it loads.
    version_wait_seconds: float = Field(default=120.0, gt=0)
    # positions counted per slice (a K past it counts in every total, not per position)
    max_position: int = Field(default=16, ge=1, le=256)


class CycleLogSettings(Part):
    """`--cycle-log FILE`: one JSON line per observed request, rotated by size (and age)."""

    path: Path | None = None
    max_bytes: int = Field(default=64 * 1024 * 1024, ge=4096)
    backups: int = Field(default=3, ge=0)
    # also rotate once the file's first record is this old (a fleet ships hourly files)
    max_age_seconds: float | None = Field(default=None, gt=0)
    compress: bool = False  # gzip rotated files (FILE.1.gz ...), off the event loop
    # USER DATA: with capture_text the log holds each request's prompt (its first 4 KiB) and a
    # non-streamed completion, each cut to capture_text_chars after `redact` ("module:function",
    # str -> str) ran on it. Off by default: the log then holds counts and ids only.
    capture_text: bool = False
    capture_text_chars: int = Field(default=2000, ge=1)
    redact: str | None = Field(default=None, pattern=r"^[\w.]+:\w+$")


class ServeSettings(Part):
    """`specwatch serve`: how vLLM is stopped, and how long /metrics outlives it."""

    drain_seconds: float = Field(default=30.0, ge=0)
    exit_grace_seconds: float = Field(default=5.0, ge=0)


class ABSettings(Part):
    """A/B rollout: a sticky share of traffic to a baseline vLLM without speculation.

    The key is hashed (SHA-256) to a point in [0, 100): below `baseline_percent` goes to the
    baseline. Rollback (all traffic to the baseline at once) is switched by the admin endpoint,
    by the presence of `rollback_file`, or automatically when a model's overall zone stays red
    for `auto_rollback_seconds` (off unless set).
    """

    baseline_upstream: str | None = None  # None: no A/B, everything goes to `upstream`
    baseline_percent: float = Field(default=0.0, ge=0, le=100)
    key_header: str = Header.AB_KEY  # sticky by this header; without it, by the request id
    rollback_file: Path | None = None  # exists: rolled back; removed: rolled forward
    rollback_poll_seconds: float = Field(default=1.0, gt=0)
    auto_rollback_seconds: float | None = Field(default=None, gt=0)  # None: off
    admin_token_file: Path | None = None  # needed by POST /admin/* unless admin binds loopback

    @field_validator("baseline_upstream")
    @classmethod
    def _is_http(cls, value: str | None) -> str | None:
        return None if value is None else http_url(value)


class ShadowSettings(Part):
    """The shadow check: a share of greedy requests compared against the A/B baseline."""

    fraction: float = Field(default=0.0, ge=0, le=1)  # 0: off
    max_in_flight: int = Field(default=8, ge=1)  # beyond: skipped, counted
    timeout_seconds: float = Field(default=120.0, gt=0)
    divergence_warning_ratio: float = Field(default=0.01, gt=0, le=1)  # the alert's threshold


class CanarySettings(Part):
    """Canary against stable (analysis/compare/alpha.py; the rules of gen/canary.py): per slice the
    difference of alpha-hat over `window_seconds`, family-wise at `confidence` over the slices
    compared; SpecDecodeCanaryWorse when its upper bound stays below -margin for `for_seconds`.
    Goodput (analysis/compare/goodput.py): per slice the ratio canary / stable of the decode
    time per output token at the same load; SpecDecodeCanarySlower when its lower bound
    stays above 1 + tpot_margin; a load bucket is compared where each side timed
    `tpot_min_cell_requests` requests in it."""

    margin: float = Field(default=0.02, gt=0, lt=0.5)
    tpot_margin: float = Field(default=0.03, gt=0, lt=1)
    tpot_min_cell_requests: int = Field(default=5, ge=2)
    # SpecDecodeCanaryLatencyBurn: each side's requests in a load bucket over window_seconds
    latency_min_cell_requests: int = Field(default=30, ge=2)
    for_seconds: float = Field(default=900.0, gt=0)
    window_seconds: float = Field(default=1800.0, gt=0)
    confidence: float = Field(default=0.95, gt=0.5, lt=1)
    # where Argo Rollouts' AnalysisTemplate queries (kube-prometheus-stack's Service)
    prometheus_address: str = "http://prometheus-operated.monitoring.svc:9090"


class CostSettings(Part):
    """What a replica costs, for the dashboards' cost per million output tokens."""

    price_per_accelerator_hour: float | None = Field(default=None, ge=0)  # None: no cost panel
    accelerators_per_replica: int = Field(default=1, ge=1)
    baseline_price_per_accelerator_hour: float | None = Field(default=None, ge=0)  # A/B side


class AlertSettings(Part):
    """What `specwatch generate` puts in the Prometheus rules and the Alertmanager config.

    Zone thresholds come from `zones`, so alerts, dashboards and the sidecar agree. Secrets are
    never settings: only the paths of the files that hold them.
    """

    # Where alerts/runbooks.md is published (a wiki page, your fork's web view): alerts then
    # link to `{base}#{alert}`. Unset, no link is made up: each alert carries its runbook's
    # steps in its own `runbook` annotation, which the Slack and PagerDuty messages show.
    runbook_base_url: str | None = None
    job: str = "specwatch"  # the Prometheus job that scrapes specwatch's admin port
    slo_target: float = Field(default=0.99, gt=0, lt=1)  # share of good 5-minute windows
    min_window_trials: int = Field(default=100, ge=1)  # evidence for a 5-minute window to count
    latency_slo_period_days: float = Field(default=28.0, gt=0, le=366)  # the rules' period
    min_long_trials: int = Field(default=1000, ge=1)  # evidence for a verdict over 1h
    coverage_min: float = Field(default=0.95, gt=0, le=1)
    drift_min_delta: float = Field(default=0.03, gt=0, lt=1)
    drift_z: float = Field(default=4.0, gt=0)
    # SpecDecodeSidecarAddedLatency: the p99 of the time specwatch adds to a request (its span
    # less the upstream's) above this over 10 minutes, for 15; measured on 2 cores: ~0.2 ms
    added_latency_p99_seconds: float = Field(default=0.005, gt=0)
    # paths where prometheus-operator mounts an Alertmanager's `secrets: [specwatch-alerting]`
    slack_api_url_file: str = "/etc/alertmanager/secrets/specwatch-alerting/slack-webhook-url"
    slack_channel_critical: str = "#specwatch-page"
    slack_channel_warning: str = "#specwatch"
    slack_channel_info: str | None = "#specwatch-info"  # None: info alerts go nowhere
    pagerduty_routing_key_file: str = (
        "/etc/alertmanager/secrets/specwatch-alerting/pagerduty-routing-key"
    )
    pagerduty_url: str = "https://events.pagerduty.com/v2/enqueue"
