"""The settings root and how it is loaded: defaults < YAML < SPECWATCH_* < flags."""

from __future__ import annotations

import difflib
import json
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from specwatch.settings.analysis import (
    DriftSettings,
    LoadSettings,
    SpeedupSettings,
    WindowSettings,
    ZoneSettings,
)
from specwatch.settings.base import http_url, split_csv
from specwatch.settings.service import (
    ABSettings,
    AlertSettings,
    CanarySettings,
    CostSettings,
    CycleLogSettings,
    LimitSettings,
    ServeSettings,
    ShadowSettings,
    TaskSettings,
)
from specwatch.settings.slo import LatencyObjective, unique_names


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
    # the JSON vLLM gets as --speculative-config (proxy; serve reads vLLM's command line)
    speculative_config: str | None = None
    track: str = "stable"  # stable, canary, ...: the pod's place in a rollout (a label value)
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
    canary: CanarySettings = CanarySettings()
    latency_slos: tuple[LatencyObjective, ...] = ()

    _split = field_validator("ctx_buckets", mode="before")(split_csv)
    _slo_names = field_validator("latency_slos")(unique_names)

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

    @field_validator("track")
    @classmethod
    def _track_is_label_safe(cls, value: str) -> str:
        if not value or not value.replace("_", "").replace("-", "").isalnum() or len(value) > 32:
            raise ValueError("must be up to 32 letters, digits, _ and -, e.g. stable or canary")
        return value

    @field_validator("speculative_config")
    @classmethod
    def _speculative_config_is_a_json_object(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        try:
            parsed = json.loads(value)
        except ValueError as error:
            raise ValueError(f"must be JSON, as vLLM's --speculative-config: {error}") from None
        if not isinstance(parsed, dict):
            raise ValueError("must be a JSON object, as vLLM's --speculative-config")
        return value

    @model_validator(mode="after")
    def _parts_agree(self) -> Settings:
        if self.port and self.port == self.admin_port:
            raise ValueError(f"port and admin_port are both {self.port}")
        if self.shadow.fraction > 0 and self.ab.baseline_upstream is None:
            raise ValueError("shadow.fraction needs ab.baseline_upstream (where to compare)")
        if self.limits.max_observed_bytes < self.limits.max_response_bytes:
            raise ValueError("limits.max_observed_bytes must be >= limits.max_response_bytes")
        return self

    @property
    def evidence_windows_seconds(self) -> tuple[float, ...]:
        """The evidence windows a verdict reads besides its own window: those longer than it
        (a shorter one holds nothing the verdict window does not; `--window 86400` on a replay
        leaves none, and the day's window decides alone)."""
        longer = (w for w in self.zones.evidence_windows_seconds if w > self.window.length_seconds)
        return tuple(sorted(longer))

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


def _parts(model: type[BaseModel]) -> dict[str, type[BaseModel] | None]:
    """A model's field names, each with its own model when it is a part (zones, ab, ...)."""
    found: dict[str, type[BaseModel] | None] = {}
    for name, field in model.model_fields.items():
        kind = field.annotation
        found[name] = kind if isinstance(kind, type) and issubclass(kind, BaseModel) else None
    return found


def _setting_paths(model: type[BaseModel] = Settings) -> list[tuple[str, ...]]:
    """Every setting's place in the tree: ('port',), ('zones',), ('zones', 'green'), ..."""
    paths: list[tuple[str, ...]] = []
    for name, part in _parts(model).items():
        paths.append((name,))
        if part is not None:
            paths.extend((name, *inner) for inner in _setting_paths(part))
    return paths


def _did_you_mean(path: tuple[str, ...]) -> tuple[str, ...] | None:
    """The known setting an unknown one was most likely meant to be: a close name beside it
    (`zones.gren`: zones.green), else the same name elsewhere in the tree (`green`: zones.green)."""
    known = _setting_paths()
    siblings = [p[-1] for p in known if p[:-1] == path[:-1]]
    close = difflib.get_close_matches(path[-1], siblings, n=1, cutoff=0.6)
    if close:
        return (*path[:-1], close[0])
    by_leaf = {p[-1]: p for p in known if len(p) > 1}
    close = difflib.get_close_matches(path[-1], list(by_leaf), n=1, cutoff=0.8)
    return by_leaf[close[0]] if close else None


def _given(overrides: dict[str, Any], loc: tuple[str, ...]) -> bool:
    node: Any = overrides
    for part in loc:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _describe(
    error: ValidationError, overrides: dict[str, Any], config_file: Path | None
) -> list[str]:
    """One line per bad field, naming where its value came from: a flag or the code's own
    presets (the setting's name), the environment (the variable), else the file."""
    lines = []
    for item in error.errors():
        loc = tuple(str(part) for part in item["loc"])
        where = ".".join(loc) or "settings"
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            meant = _did_you_mean(loc)
            message = "unknown setting" + (f"; did you mean {'.'.join(meant)}?" if meant else "")
        variable, inside = _variable_of(loc)
        if variable is not None and not _given(overrides, loc):
            part = f"item {inside}" if inside.isdigit() else inside
            where = f"environment: {variable}" + (f" ({part})" if part else "")
        elif loc and not _given(overrides, loc) and config_file is not None:
            where = f"{config_file}: {where}"
        lines.append(f"{where}: {message} (got {item.get('input')!r})")
    return lines


PREFIX = "SPECWATCH_"
# pydantic-settings' message for a complex setting whose variable is not JSON
_NOT_JSON = re.compile(r'error parsing value for field "(\w+)" from source "EnvSettingsSource"')


def _variable_of(loc: tuple[str, ...]) -> tuple[str | None, str]:
    """The SPECWATCH_* variable a bad value's place came from, and the place inside its value
    (`ctx_buckets.1` from SPECWATCH_CTX_BUCKETS=512,abc: the variable, item 1), if any."""
    for size in range(len(loc), 0, -1):
        variable = PREFIX + "__".join(loc[:size]).upper()
        if variable in os.environ:
            return variable, ".".join(loc[size:])
    return None, ""


def _source_error(error: Exception, config_file: Path | None) -> str:
    """A value pydantic-settings could not even parse: the environment's (a complex setting
    not given as JSON) named by its variable, else the file's."""
    found = _NOT_JSON.search(str(error))
    if found:
        variable = PREFIX + found.group(1).upper()
        return f"environment: {variable}: not JSON (a setting with parts is given as JSON)"
    return f"{config_file}: {' '.join(str(error).split())}"


def _unknown_environment(environ: dict[str, str]) -> list[str]:
    """A SPECWATCH_* variable that names no setting: pydantic-settings ignores it, which hides
    a typo (`SPECWATCH_ZONE__GREEN`) until an alert fires at the default threshold."""
    known = {PREFIX + "__".join(path).upper(): path for path in _setting_paths()}
    lines = []
    for name in sorted(environ):
        if not name.upper().startswith(PREFIX) or name.upper() in known:
            continue
        path = tuple(name[len(PREFIX) :].lower().split("__"))
        meant = _did_you_mean(path) if all(path) else None
        hint = f"; did you mean {PREFIX}{'__'.join(meant).upper()}?" if meant else ""
        lines.append(f"environment: {name}: unknown setting{hint}")
    return lines


def _check_yaml(path: Path) -> None:
    """The file must be YAML holding a mapping of setting names (a number as a name crashes
    pydantic-settings' YAML source instead of failing validation). Read as text from the
    named file, so that the parser's own message says where (`in "specwatch.yaml", line 3`)."""
    try:
        with path.open(encoding="utf-8") as stream:
            data = yaml.safe_load(stream)
    except (OSError, ValueError, yaml.YAMLError) as error:
        raise ConfigError([f"{path}: {' '.join(str(error).split())}"]) from None
    if data is not None and not isinstance(data, dict):
        kind = type(data).__name__
        raise ConfigError([f"{path}: must hold a mapping of settings, not a {kind}"])
    for key in data or {}:
        if not isinstance(key, str):
            raise ConfigError([f"{path}: setting names are text, got {key!r}"])


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Build the root settings; raise ConfigError with one line per bad field."""
    unknown = _unknown_environment(dict(os.environ))
    if unknown:
        raise ConfigError(unknown)
    cls: type[Settings] = Settings
    if config_file is not None:
        if not config_file.is_file():
            raise ConfigError([f"no such file {str(config_file)!r}"])
        _check_yaml(config_file)
        cls = type(
            "Settings",
            (Settings,),
            {"model_config": {**Settings.model_config, "yaml_file": config_file}},
        )
    try:
        return cls(**overrides)
    except ValidationError as error:
        raise ConfigError(_describe(error, overrides, config_file)) from None
    except (OSError, ValueError, yaml.YAMLError) as error:  # unreadable YAML, unparsed values
        raise ConfigError([_source_error(error, config_file)]) from None
