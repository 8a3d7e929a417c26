"""[compiled] A speculative config change across a restart: what each slice accepted under the
config before, against what it accepts under the one after.

With a state directory the sidecar keeps, per slice, the sums alpha-hat's interval needs for
the config it runs, carried across restarts with the same config. Started with another config,
it records the change (`config_changed`): the old config's sums become `before`, and every
evaluation compares them with what the new config has gathered since (analysis/compare/alpha.py:
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

from specwatch.analysis.compare.alpha import ModelComparison, Pairs, SliceComparison, compare_models
from specwatch.analysis.compare.goodput import MIX_MOVED_LOAD, TpotComparison, compare_tpot
from specwatch.analysis.counting.counts import Counts
from specwatch.analysis.counting.sums import DecodeSums, Sums
from specwatch.analysis.drift.mix import psi, shares
from specwatch.analysis.speed.goodput import Cell
from specwatch.core.records import SliceKey, SpecConfig
from specwatch.settings import Settings

log = structlog.get_logger("specwatch.analysis")


def sums_of(counts: Counts) -> Sums:
    return Sums.of(counts, "alpha")


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


Timed = dict[Cell, DecodeSums]  # per (model, ctx, task, load): decode-time sums, loads


def _encode_timed(cells: Timed) -> list[list[Any]]:
    return [[*key, *s.decode_fields()] for key, s in sorted(cells.items())]


def _decode_timed(rows: Any) -> Timed:
    """Raises ValueError on anything but the rows `_encode_timed` writes; a state saved
    before goodput was kept has none, one saved before the load moments (or the steps) were
    kept has rows without them (its cells then compared without the adjustment within a load
    bucket, or without TPOT's factors)."""
    if rows is None:
        return {}
    if not isinstance(rows, list):
        raise ValueError("goodput must be a list")
    out: Timed = {}
    for row in rows:
        if not isinstance(row, list) or len(row) not in (10, 15, 19):
            raise ValueError(f"not a goodput row: {row!r}")
        model, ctx, task, load, n, *values = row
        if not all(isinstance(v, str) for v in (model, ctx, task, load)):
            raise ValueError(f"not a goodput key: {row[:4]!r}")
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"not a request count: {n!r}")
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            raise ValueError(f"not sums: {values!r}")
        out[model, ctx, task, load] = DecodeSums(n, *(float(v) for v in values))
    return out


def _merged(carried: Timed, live: Timed) -> Timed:
    out = {key: sums.copy() for key, sums in carried.items()}
    for key, sums in live.items():
        out.setdefault(key, DecodeSums()).merge(sums)
    return out


def _load_psi(before: Timed, after: Timed, model: str) -> float | None:
    """How far a model's load mix (its decode tokens' shares by load bucket) moved."""
    mixes = []
    for cells in (before, after):
        by_load: dict[str, float] = defaultdict(float)
        for key, sums in cells.items():
            if key[0] == model:
                by_load[key[3]] += sums.y
        mixes.append(shares(dict(by_load)))
    return psi(mixes[0], mixes[1]) if mixes[0] and mixes[1] else None


def _tpot_row(row: TpotComparison) -> dict[str, Any]:
    return row.as_dict(("model", "ctx_bucket", "task"), ("before", "after"))


@dataclass(frozen=True, slots=True)
class ChangeView:
    """The change at one moment, for /status `change`."""

    from_config: dict[str, object]
    to_config: dict[str, object]
    at: float
    slices: tuple[SliceComparison, ...]  # finer slices, family-wise over those compared
    models: tuple[ModelComparison, ...]  # per model: rollup compared, overall change, PSI
    # goodput: the ratio after / before of TPOT per slice and model (analysis/compare/goodput)
    tpot: dict[str, Any] | None = None


class ConfigHistory:
    """The config a sidecar runs, the sums it gathered under it in earlier runs, and the change
    from the config before, if it started with another one."""

    def __init__(self, config: SpecConfig, settings: Settings) -> None:
        self.config = config
        self._settings = settings
        self.carried: dict[SliceKey, Sums] = {}
        self.before: dict[SliceKey, Sums] = {}
        self.carried_timed: Timed = {}
        self.before_timed: Timed = {}
        self.changed: tuple[dict[str, Any], dict[str, Any], float] | None = None
        self.changes = 0  # recorded by this process: 0, or 1 at a start with another config

    def restore(self, data: Any, now: float) -> None:
        """From a saved state (`state`); raises ValueError when it is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
            raise ValueError("no config in the saved state")
        stored, slices = data["config"], _decode(data.get("slices"))
        timed = _decode_timed(data.get("goodput"))
        if stored.get("id") == self.config.id:
            self.carried, self.carried_timed = slices, timed
            change = data.get("change")
            if change is not None:
                if not isinstance(change, dict) or not isinstance(change.get("at"), int | float):
                    raise ValueError("not a change record")
                self.before = _decode(change.get("before"))
                self.before_timed = _decode_timed(change.get("before_goodput"))
                self.changed = (change["from"], change["to"], float(change["at"]))
            return
        self.before, self.changed = slices, (stored, self.config.as_dict(), now)
        self.before_timed = timed
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
            out[key] = out[key].plus(sums) if key in out else sums.copy()
        return out

    def state(self, live: dict[SliceKey, Sums], timed: Timed | None = None) -> dict[str, Any]:
        state: dict[str, Any] = {
            "config": self.config.as_dict(),
            "slices": _encode(self.after(live)),
            "goodput": _encode_timed(_merged(self.carried_timed, timed or {})),
            "change": None,
        }
        if self.changed is not None:
            previous, current, at = self.changed
            state["change"] = {
                "from": previous,
                "to": current,
                "at": at,
                "before": _encode(self.before),
                "before_goodput": _encode_timed(self.before_timed),
            }
        return state

    def _tpot(self, timed: Timed) -> dict[str, Any]:
        """after / before of TPOT at the same load; per model a caveat where the load
        itself moved between the periods."""
        cfg, zones = self._settings.canary, self._settings.zones
        after = _merged(self.carried_timed, timed)
        slices, models = compare_tpot(
            self.before_timed,
            after,
            cfg.confidence,
            cfg.tpot_margin,
            cfg.tpot_min_cell_requests,
            zones.min_requests,
        )
        by_model = {}
        for model in models:
            row = _tpot_row(model)
            moved = _load_psi(self.before_timed, after, model.key[0])
            row["load_psi"] = moved
            if moved is not None and moved >= MIX_MOVED_LOAD:
                said = f"the load moved between the periods (PSI {moved:.2f}): compared within "
                said += "load buckets, at the after period's mix"
                row["caveat"] = f"{row['caveat']}; {said}" if row["caveat"] else said
            by_model[model.key[0]] = row
        rows = [_tpot_row(row) for row in slices]
        return {"margin": cfg.tpot_margin, "slices": rows, "models": by_model}

    def view(self, live: dict[SliceKey, Sums], timed: Timed | None = None) -> ChangeView | None:
        """The change as it stands, or None when none was recorded."""
        if self.changed is None:
            return None
        after, zones, cfg = self.after(live), self._settings.zones, self._settings.canary
        keys = sorted(set(self.before) | set(after))
        rows: dict[bool, Pairs] = defaultdict(list)
        for key in keys:
            rollup = key.ctx_bucket == "all"
            triple = (key.model, key.ctx_bucket, key.task)
            rows[rollup].append((triple, self.before.get(key, Sums()), after.get(key, Sums())))
        finer, compared = compare_models(
            rows[True],
            rows[False],
            cfg.confidence,
            cfg.margin,
            zones.min_trials,
            zones.min_requests,
        )
        previous, current, at = self.changed
        tpot = self._tpot(timed or {})
        return ChangeView(previous, current, at, tuple(finer), tuple(compared), tpot)
