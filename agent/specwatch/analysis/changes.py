"""A speculative config change across a restart: what each slice accepted under the config
before, against what it accepts under the one after.

With a state directory the sidecar keeps, per slice, the sums alpha-hat's interval needs for
the config it runs, carried across restarts with the same config. Started with another config,
it records the change (`config_changed`): the old config's sums become `before`, and every
evaluation compares them with what the new config has gathered since (analysis/compare.py:
per slice a difference with its interval and a verdict, guarded across the slices compared).
A before/after comparison is confounded by whatever else changed in between, the traffic above
all; so the overall change is given at the after period's mix (what the config did), the mix's
own part beside it, and a caveat when the mix moved (PSI of the slices' shares of trials, 0.1
and more). A canary beside stable (gen/canary.py) is the comparison without that confound.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import structlog

from specwatch.analysis.compare import Pairs, SliceComparison, compare_models
from specwatch.analysis.counts import Counts
from specwatch.analysis.evidence import Sums
from specwatch.model import SliceKey, SpecConfig
from specwatch.settings import Settings

log = structlog.get_logger("specwatch.analysis")

_ZERO = Sums(0, 0, 0, 0, 0, 0)


def sums_of(counts: Counts) -> Sums:
    return Sums.of(counts, "alpha")


def _add(a: Sums, b: Sums) -> Sums:
    return Sums(*(x + y for x, y in zip(a, b, strict=True)))


def _encode(slices: dict[SliceKey, Sums]) -> list[list[Any]]:
    return [[*key, *sums] for key, sums in sorted(slices.items())]


def _decode(rows: Any) -> dict[SliceKey, Sums]:
    """Raises ValueError on anything but the rows `_encode` writes."""
    if not isinstance(rows, list):
        raise ValueError("slices must be a list")
    out = {}
    for row in rows:
        if not isinstance(row, list) or len(row) != 9:
            raise ValueError(f"not a slice row: {row!r}")
        model, ctx, task, *values = row
        if not all(isinstance(v, str) for v in (model, ctx, task)):
            raise ValueError(f"not a slice key: {row[:3]!r}")
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
            raise ValueError(f"not counts: {values!r}")
        out[SliceKey(model, ctx, task)] = Sums(*values)
    return out


@dataclass(frozen=True, slots=True)
class ChangeView:
    """The change at one moment, for /status `change`."""

    from_config: dict[str, object]
    to_config: dict[str, object]
    at: float
    slices: tuple[SliceComparison, ...]  # finer slices, family-wise over those compared
    models: dict[str, dict[str, Any]]  # per model: rollup comparison, overall change, PSI

    def as_dict(self) -> dict[str, Any]:
        return {
            "from": self.from_config,
            "to": self.to_config,
            "at": self.at,
            "slices": [_row(row) for row in self.slices],
            "models": self.models,
        }


def _row(row: SliceComparison) -> dict[str, Any]:
    model, ctx, task = row.key
    d = row.difference
    return {
        "model": model,
        "ctx_bucket": ctx,
        "task": task,
        "before": _side(row.before),
        "after": _side(row.after),
        "difference": None
        if d is None
        else {"estimate": d.estimate, "lower": d.lower, "upper": d.upper},
        "verdict": row.verdict,
    }


def _side(sums: Sums) -> dict[str, Any]:
    return {
        "requests": sums.requests,
        "accepted": sums.x,
        "trials": sums.y,
        "alpha": sums.x / sums.y if sums.y else None,
    }


class ConfigHistory:
    """The config a sidecar runs, the sums it gathered under it in earlier runs, and the change
    from the config before, if it started with another one."""

    def __init__(self, config: SpecConfig, settings: Settings) -> None:
        self.config = config
        self._settings = settings
        self.carried: dict[SliceKey, Sums] = {}
        self.before: dict[SliceKey, Sums] = {}
        self.changed: tuple[dict[str, Any], dict[str, Any], float] | None = None
        self.changes = 0  # recorded by this process: 0, or 1 at a start with another config

    def restore(self, data: Any, now: float) -> None:
        """From a saved state (`state`); raises ValueError when it is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
            raise ValueError("no config in the saved state")
        stored, slices = data["config"], _decode(data.get("slices"))
        if stored.get("id") == self.config.id:
            self.carried = slices
            change = data.get("change")
            if change is not None:
                if not isinstance(change, dict) or not isinstance(change.get("at"), int | float):
                    raise ValueError("not a change record")
                self.before = _decode(change.get("before"))
                self.changed = (change["from"], change["to"], float(change["at"]))
            return
        self.before, self.changed = slices, (stored, self.config.as_dict(), now)
        self.changes += 1
        log.warning(
            "config_changed",
            previous=stored.get("id"),
            config=self.config.id,
            previous_config=stored,
            now_config=self.config.as_dict(),
            slices_before=len(slices),
        )

    def after(self, live: dict[SliceKey, Sums]) -> dict[SliceKey, Sums]:
        """This config's sums: earlier runs' and this one's since it started."""
        out = dict(self.carried)
        for key, sums in live.items():
            out[key] = _add(out.get(key, _ZERO), sums)
        return out

    def state(self, live: dict[SliceKey, Sums]) -> dict[str, Any]:
        state: dict[str, Any] = {
            "config": self.config.as_dict(),
            "slices": _encode(self.after(live)),
            "change": None,
        }
        if self.changed is not None:
            previous, current, at = self.changed
            before = _encode(self.before)
            state["change"] = {"from": previous, "to": current, "at": at, "before": before}
        return state

    def view(self, live: dict[SliceKey, Sums]) -> ChangeView | None:
        """The change as it stands, or None when none was recorded."""
        if self.changed is None:
            return None
        after, zones, cfg = self.after(live), self._settings.zones, self._settings.canary
        keys = sorted(set(self.before) | set(after))
        rows: dict[bool, Pairs] = defaultdict(list)
        for key in keys:
            rollup = key.ctx_bucket == "all"
            triple = (key.model, key.ctx_bucket, key.task)
            rows[rollup].append((triple, self.before.get(key, _ZERO), after.get(key, _ZERO)))
        finer, compared = compare_models(
            rows[True],
            rows[False],
            cfg.confidence,
            cfg.margin,
            zones.min_trials,
            zones.min_requests,
        )
        models = {
            model.rollup.key[0]: {
                **_row(model.rollup),
                "overall": None
                if model.overall is None
                else {
                    "rate": model.overall.rate,
                    "mix": model.overall.mix,
                    "total": model.overall.total,
                },
                "mix_psi": model.mix_psi,
                "caveat": model.caveat,
            }
            for model in compared
        }
        previous, current, at = self.changed
        return ChangeView(previous, current, at, tuple(finer), models)
