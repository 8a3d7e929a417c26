"""One settings root for every command: defaults < YAML file < SPECWATCH_* environment < CLI flags.

Nested parts are plain BaseModels (`analysis` for the analysis' own, `service` for the rest);
the environment reaches them with a double underscore, e.g. ``SPECWATCH_ZONES__GREEN=0.75``.
The root is built once in cli.py and passed down.
"""

from specwatch.settings.analysis import (
    DriftSettings,
    LoadSettings,
    SpeedupSettings,
    WindowSettings,
    ZoneSettings,
)
from specwatch.settings.root import ConfigError, Settings, load_settings
from specwatch.settings.service import (
    DEFAULT_TASKS,
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

__all__ = [
    "DEFAULT_TASKS",
    "ABSettings",
    "AlertSettings",
    "CanarySettings",
    "ConfigError",
    "CostSettings",
    "CycleLogSettings",
    "DriftSettings",
    "LimitSettings",
    "LoadSettings",
    "ServeSettings",
    "Settings",
    "ShadowSettings",
    "SpeedupSettings",
    "TaskSettings",
    "WindowSettings",
    "ZoneSettings",
    "load_settings",
]
