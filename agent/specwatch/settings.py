"""One settings root for every command: defaults < YAML file < SPECWATCH_* environment < CLI flags.

Nested parts are plain BaseModels; the environment reaches them with a double underscore,
e.g. ``SPECWATCH_ZONES__GREEN=0.75``. The root is built once in cli.py and passed down.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from specwatch.conventions import ALL, Header

DEFAULT_TASKS = ("chat", "code", "summarization", "translation", "extraction", "reasoning",
                 "tool_call", "structured")  # fmt: skip


def _split_csv(value: Any) -> Any:
    """Accept '512,2048' (flags, environment) as well as a YAML/JSON list."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TaskSettings(_Part):
    """How a request gets its `task` label; values outside the allowlist never become labels."""

    allowlist: Annotated[tuple[str, ...], NoDecode] = DEFAULT_TASKS
    header: str = Header.TASK
    by_model: dict[str, str] = Field(default_factory=dict)
    by_path: dict[str, str] = Field(default_factory=dict)
    classify_prompt: bool = True

    _split = field_validator("allowlist", mode="before")(_split_csv)

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


def http_url(value: str) -> str:
    """An upstream's base URL without its trailing slash: one the proxy can connect to."""
    parts = urlsplit(value)  # ValueError for a broken IPv6 host, and .port for a bad port
    if not value.startswith(("http://", "https://")) or not parts.hostname or parts.port == 0:
        raise ValueError("must be http:// or https:// with a host (and a port, if any)")
    return value.rstrip("/")


# the analysis clock's shortest step: far below it int(ts // bucket) overflows, ts + step == ts
_MIN_STEP_SECONDS = 0.001


class WindowSettings(_Part):
    """The sliding window every verdict is computed over."""

    length_seconds: float = Field(default=300.0, ge=_MIN_STEP_SECONDS)
    bucket_seconds: float = Field(default=10.0, ge=_MIN_STEP_SECONDS)

    @model_validator(mode="after")
    def _whole_number_of_buckets(self) -> WindowSettings:
        if self.bucket_seconds > self.length_seconds:
            raise ValueError("bucket_seconds must not exceed length_seconds")
        if self.length_seconds / self.bucket_seconds > 3600:
            raise ValueError("more than 3600 buckets per window: raise bucket_seconds")
        return self


class ZoneSettings(_Part):
    """Green / yellow / red thresholds, evidence gates and anti-flapping (REFERENCE.md)."""

    metric: Literal["alpha", "rate"] = "alpha"
    green: float = Field(default=0.70, gt=0, lt=1)
    green_exit: float = Field(default=0.67, gt=0, lt=1)
    red: float = Field(default=0.50, gt=0, lt=1)
    red_exit: float = Field(default=0.53, gt=0, lt=1)
    exit_evaluations: int = Field(default=3, ge=1)
    min_dwell_seconds: float = Field(default=600.0, ge=0)
    min_trials: int = Field(default=1000, ge=1)
    min_requests: int = Field(default=30, ge=1)
    confidence: float = Field(default=0.95, gt=0.5, lt=1)
    # speculation surely slower than none (the gain's whole interval below 1) at every
    # evaluation for this long makes a slice red
    slower_seconds: float = Field(default=300.0, ge=0)
    evaluation_interval_seconds: float = Field(default=10.0, ge=_MIN_STEP_SECONDS)

    @model_validator(mode="after")
    def _thresholds_are_ordered(self) -> ZoneSettings:
        if not self.red <= self.red_exit <= self.green_exit <= self.green:
            raise ValueError(
                "thresholds must satisfy red <= red_exit <= green_exit <= green, got "
                f"{self.red} <= {self.red_exit} <= {self.green_exit} <= {self.green}"
            )
        return self


class DriftSettings(_Part):
    """The per-slice drift detector (analysis/drift.py); defaults from REFERENCE.md."""

    bucket_seconds: float = Field(default=60.0, ge=_MIN_STEP_SECONDS)
    baseline_buckets: int = Field(default=360, ge=2)  # 6 h of 1-minute buckets
    gap_buckets: int = Field(default=30, ge=0)  # the baseline ends this far before the bucket
    min_baseline_buckets: int = Field(default=60, ge=2)  # with evidence, for any verdict
    min_bucket_trials: int = Field(default=20, ge=1)
    false_alarms_per_week: float = Field(default=1.0, gt=0)  # per slice; sets the threshold
    k: float = Field(default=0.5, gt=0)
    min_delta: float = Field(default=0.03, ge=0, lt=1)
    end_buckets: int = Field(default=3, ge=1)
    recent_buckets: int = Field(default=30, ge=1)  # traffic-mix comparison: recent period

    @model_validator(mode="after")
    def _baseline_can_fill(self) -> DriftSettings:
        if self.min_baseline_buckets > self.baseline_buckets:
            raise ValueError("min_baseline_buckets must not exceed baseline_buckets")
        return self


class SpeedupSettings(_Part):
    """How the gain of speculation is known: measured against a baseline, else modelled."""

    default_cost_ratio: float = Field(default=0.05, ge=0, lt=1)  # c: draft step / target step
    cost_ratio: dict[str, float] = Field(default_factory=dict)  # per served model
    baseline_tpot_ms: dict[str, float] = Field(default_factory=dict)  # per model, without spec
    # a measured gain needs this many requests with a time per output token on each side
    min_baseline_requests: int = Field(default=20, ge=2)


class LoadSettings(_Part):
    """The load dimension: requests in flight at the upstream when a request started."""

    # inclusive upper bounds of the batch-size buckets: 1, 2-4, 5-8, ... 33-64, 65+
    batch_edges: tuple[int, ...] = (1, 4, 8, 16, 32, 64)
    # the gain per bucket behind the gauges and SpecDecodeSlowerAtLoad (A/B baseline traffic
    # is a small share: an hour gathers the requests a measured gain needs)
    window_seconds: float = Field(default=3600.0, ge=_MIN_STEP_SECONDS)

    @field_validator("batch_edges")
    @classmethod
    def _edges_increase(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if not value or value[0] < 1 or list(value) != sorted(set(value)):
            raise ValueError(f"batch edges must be >= 1 and strictly increasing: {value}")
        return value


class LimitSettings(_Part):
    """Bounds that keep memory and label cardinality flat."""

    max_models: int = Field(default=16, ge=1)
    max_response_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    # the bodies and events held to be read, all requests together (sources/budget.py)
    max_observed_bytes: int = Field(default=256 * 1024 * 1024, ge=1024)
    max_request_bytes: int = Field(default=32 * 1024 * 1024, ge=1024)
    analysis_queue: int = Field(default=10_000, ge=1)
    max_concurrent_requests: int = Field(default=1024, ge=1)  # beyond: 503, Retry-After
    body_read_timeout_seconds: float = Field(default=60.0, gt=0)  # a slow client: 408
    # A connection that has not sent complete request headers within this time, or sits idle
    # between requests this long, is closed (slowloris; aiohttp's keep-alive timer).
    header_read_timeout_seconds: float = Field(default=60.0, gt=0)
    upstream_keepalive_seconds: float = Field(default=15.0, gt=0)  # idle pooled connections
    # positions counted per slice (a K past it counts in every total, not per position)
    max_position: int = Field(default=16, ge=1, le=256)


class CycleLogSettings(_Part):
    """`--cycle-log FILE`: one JSON line per observed request, rotated by size."""

    path: Path | None = None
    max_bytes: int = Field(default=64 * 1024 * 1024, ge=4096)
    backups: int = Field(default=3, ge=0)


class ServeSettings(_Part):
    """`specwatch serve`: how vLLM is stopped, and how long /metrics outlives it."""

    drain_seconds: float = Field(default=30.0, ge=0)
    exit_grace_seconds: float = Field(default=5.0, ge=0)


class ABSettings(_Part):
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


class ShadowSettings(_Part):
    """The shadow check: a share of greedy requests compared against the A/B baseline."""

    fraction: float = Field(default=0.0, ge=0, le=1)  # 0: off
    max_in_flight: int = Field(default=8, ge=1)  # beyond: skipped, counted
    timeout_seconds: float = Field(default=120.0, gt=0)
    divergence_warning_ratio: float = Field(default=0.01, gt=0, le=1)  # the alert's threshold


class CostSettings(_Part):
    """What a replica costs, for the dashboards' cost per million output tokens."""

    price_per_accelerator_hour: float | None = Field(default=None, ge=0)  # None: no cost panel
    accelerators_per_replica: int = Field(default=1, ge=1)
    baseline_price_per_accelerator_hour: float | None = Field(default=None, ge=0)  # A/B side


class AlertSettings(_Part):
    """What `specwatch generate` puts in the Prometheus rules and the Alertmanager config.

    Zone thresholds come from `zones`, so alerts, dashboards and the sidecar agree. Secrets are
    never settings: only the paths of the files that hold them.
    """

    runbook_base_url: str = "https://github.com/specwatch/specwatch/blob/main/alerts/runbooks.md"
    job: str = "specwatch"  # the Prometheus job that scrapes specwatch's admin port
    slo_target: float = Field(default=0.99, gt=0, lt=1)  # share of good 5-minute windows
    min_window_trials: int = Field(default=100, ge=1)  # evidence for a 5-minute window to count
    min_long_trials: int = Field(default=1000, ge=1)  # evidence for a verdict over 1h
    young_guard_minutes: float = Field(default=45.0, ge=0)  # a slice younger than this never pages
    coverage_min: float = Field(default=0.95, gt=0, le=1)
    drift_min_delta: float = Field(default=0.03, gt=0, lt=1)
    drift_z: float = Field(default=4.0, gt=0)
    # paths where prometheus-operator mounts an Alertmanager's `secrets: [specwatch-alerting]`
    slack_api_url_file: str = "/etc/alertmanager/secrets/specwatch-alerting/slack-webhook-url"
    slack_channel_critical: str = "#specwatch-page"
    slack_channel_warning: str = "#specwatch"
    slack_channel_info: str | None = "#specwatch-info"  # None: info alerts go nowhere
    pagerduty_routing_key_file: str = (
        "/etc/alertmanager/secrets/specwatch-alerting/pagerduty-routing-key"
    )
    pagerduty_url: str = "https://events.pagerduty.com/v2/enqueue"


class Settings(BaseSettings):
    """The root: every command reads its part of this."""

    model_config = SettingsConfigDict(
        env_prefix="SPECWATCH_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
    )

    host: str = "127.0.0.1"
    admin_host: str | None = None  # where /metrics and /status listen; default: `host`
    port: int = Field(default=8000, ge=0, le=65535)
    admin_port: int = Field(default=9400, ge=0, le=65535)
    upstream: str = "http://127.0.0.1:8001"
    upstream_timeout_seconds: float = Field(default=600.0, gt=0)
    scrape_interval_seconds: float = Field(default=5.0, gt=0)
    vllm_log: Path | None = None
    state_dir: Path | None = None  # drift baselines and detector state survive restarts here
    ctx_buckets: Annotated[tuple[int, ...], NoDecode] = (512, 2048, 4096, 8192, 32768)
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_format: Literal["console", "json"] = "console"
    tasks: TaskSettings = TaskSettings()
    window: WindowSettings = WindowSettings()
    zones: ZoneSettings = ZoneSettings()
    drift: DriftSettings = DriftSettings()
    speedup: SpeedupSettings = SpeedupSettings()
    load: LoadSettings = LoadSettings()
    limits: LimitSettings = LimitSettings()
    cycle_log: CycleLogSettings = CycleLogSettings()
    serve: ServeSettings = ServeSettings()
    alerts: AlertSettings = AlertSettings()
    ab: ABSettings = ABSettings()
    shadow: ShadowSettings = ShadowSettings()
    cost: CostSettings = CostSettings()

    _split = field_validator("ctx_buckets", mode="before")(_split_csv)

    @field_validator("ctx_buckets")
    @classmethod
    def _buckets_increase(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if not value:
            raise ValueError("at least one bucket bound is needed")
        if any(b <= 0 for b in value) or list(value) != sorted(set(value)):
            raise ValueError(f"bucket bounds must be positive and strictly increasing: {value}")
        return value

    @field_validator("upstream")
    @classmethod
    def _upstream_is_http(cls, value: str) -> str:
        return http_url(value)

    @model_validator(mode="after")
    def _parts_agree(self) -> Settings:
        if self.port and self.port == self.admin_port:
            raise ValueError(f"port and admin_port are both {self.port}")
        if self.shadow.fraction > 0 and self.ab.baseline_upstream is None:
            raise ValueError("shadow.fraction needs ab.baseline_upstream (where to compare)")
        if self.limits.max_observed_bytes < self.limits.max_response_bytes:
            raise ValueError("limits.max_observed_bytes must be >= limits.max_response_bytes")
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, YamlConfigSettingsSource(settings_cls))


class ConfigError(Exception):
    """Bad configuration: one line per bad field, ready to print."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def _describe(error: ValidationError) -> list[str]:
    lines = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "settings"
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "unknown setting"
        lines.append(f"{where}: {message} (got {item.get('input')!r})")
    return lines


def _check_yaml(path: Path) -> None:
    """The file must be YAML holding a mapping of setting names (fuzzing found that a number
    as a name crashed the YAML source instead of failing validation)."""
    try:
        data = yaml.safe_load(path.read_bytes())
    except (OSError, ValueError, yaml.YAMLError) as error:
        raise ConfigError([f"config: {' '.join(str(error).split())}"]) from None
    if data is not None and not isinstance(data, dict):
        kind = type(data).__name__
        raise ConfigError([f"config: {str(path)!r} must hold a mapping of settings, not a {kind}"])
    for key in data or {}:
        if not isinstance(key, str):
            raise ConfigError([f"config: setting names are text, got {key!r}"])


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Build the root settings; raise ConfigError with one line per bad field."""
    cls: type[Settings] = Settings
    if config_file is not None:
        if not config_file.is_file():
            raise ConfigError([f"config: no such file {str(config_file)!r}"])
        _check_yaml(config_file)
        cls = type(
            "Settings",
            (Settings,),
            {"model_config": {**Settings.model_config, "yaml_file": config_file}},
        )
    try:
        return cls(**overrides)
    except ValidationError as error:
        raise ConfigError(_describe(error)) from None
    except (OSError, ValueError, yaml.YAMLError) as error:  # unreadable or malformed YAML
        raise ConfigError([f"config: {' '.join(str(error).split())}"]) from None
