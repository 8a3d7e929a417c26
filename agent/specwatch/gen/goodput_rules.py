"""Canary against stable on goodput in PromQL: per slice and per model the ratio canary /
stable of the decode time per output token (TPOT), compared within load buckets and combined
at the canary's mix, with analysis/goodput_compare.py's interval; and the alert and the Argo
Rollouts metric that act on it.

Per cell (a slice's load bucket) each track's TPOT is the ratio of its decode seconds to its
decode tokens over the canary window, summed across pods, and the variance of its log the
delta method's: n / (n - 1) (xx / x^2 - 2 xy / (x y) + yy / y^2) from the requests' sums of
squares and products (conventions/counters.py), which is V / TPOT^2 with V the ratio's
cluster-robust variance. A cell is paired where both tracks timed `tpot_min_cell_requests`
requests; the stable side is its config with the most requests in the cell. Per slice (and
per model, over all its cells) the log-ratios of the paired cells are weighted by their shares
of the canary's decode tokens; the variance is the weighted sum of the cells' and the degrees
of freedom Welch-Satterthwaite's. A slice (model) is compared where its paired cells hold
`zones.min_requests` timed requests on each side; the family is a model's slices compared and
its rollup, the quantile gen/canary.py's.
"""

from __future__ import annotations

from typing import Any

from specwatch import conventions as C
from specwatch.gen import promql as Q
from specwatch.gen.alert import Alert
from specwatch.gen.canary import CANARY, STABLE, family_z, ratio_bound, recorded_name, window
from specwatch.settings import Settings

CELL: tuple[str, ...] = (*Q.SLICE, C.Label.LOAD)
PAIR: tuple[str, ...] = tuple(label for label in CELL if label not in C.RUN_LABELS)
SUMS = (
    ("n", C.GOODPUT_REQUESTS),
    ("x", C.GOODPUT_DECODE_SECONDS),
    ("y", C.GOODPUT_DECODE_TOKENS),
    ("xx", C.GOODPUT_SECONDS_SQUARED),
    ("xy", C.GOODPUT_SECONDS_X_TOKENS),
    ("yy", C.GOODPUT_TOKENS_SQUARED),
)


def _cell_rules(settings: Settings, windows: Q.Windows) -> list[dict[str, Any]]:
    """Per cell and track: the counters' increases, TPOT, the variance of its log; the stable
    config each cell compares with; the paired cells and their log-ratio, variance, the parts
    of Welch's degrees of freedom, the canary's decode tokens and each side's requests."""
    span, cell, pair = windows(settings.canary.window_seconds), Q.by(CELL), Q.by(PAIR)
    least = settings.canary.tpot_min_cell_requests
    part = {name: recorded_name("cell", metric, settings, "increase") for name, metric in SUMS}
    n, x, y, xx, xy, yy = (part[name] for name, _ in SUMS)
    tpot = recorded_name("cell", C.RECORDED_GOODPUT_TPOT, settings, "ratio")
    log_variance = recorded_name("cell", C.RECORDED_GOODPUT_LOG_VARIANCE, settings)
    chosen = recorded_name("cell", C.RECORDED_CANARY_TPOT_BASELINE, settings, "increase")
    paired = recorded_name("cell", C.RECORDED_CANARY_TPOT_PAIRED, settings, "bool")
    one = f"({chosen} * 0 + 1)"

    def stable(series: str) -> str:
        return (
            f'({series}{{track="{STABLE}"}} * on({cell}) '
            f"group_left({C.Label.BASELINE_CONFIG}) {one})"
        )

    def joined(left: str, op: str, right: str) -> str:
        return (
            f'{left}{{track="{CANARY}"}}\n{op} on({pair}) '
            f"group_left({C.Label.BASELINE_CONFIG}) {stable(right)}"
        )

    def canary(series: str) -> str:
        """A canary cell's series on its paired rows, baseline_config kept (group_left: a
        one-to-one match on() would keep the matched labels only)."""
        return f'{paired} * on({cell}) group_left() {series}{{track="{CANARY}"}}'

    rules: list[dict[str, Any]] = [
        {"record": part[name], "expr": f"sum by ({cell}) (increase({metric}_total[{span}]))"}
        for name, metric in SUMS
    ]
    rules += [
        {"record": tpot, "expr": f"{x} / ({y} > 0)"},
        {
            "record": log_variance,
            "expr": (
                f"{n} / clamp_min({n} - 1, 1)\n* clamp_min({xx} / ({x} > 0) ^ 2 "
                f"- 2 * {xy} / ({x} * {y}) + {yy} / ({y} > 0) ^ 2, 0)\nand {n} >= 2"
            ),
        },
        {
            "record": chosen,
            "expr": (
                f'label_replace(\n  topk by ({pair}) (1, {n}{{track="{STABLE}"}}),\n'
                f'  "{C.Label.BASELINE_CONFIG}", "$1", "{C.Label.CONFIG}", "(.*)"\n)'
            ),
        },
        {
            "record": paired,
            "expr": (
                f"{joined(n, '>= bool', n)} * 0 + 1\n"
                f'and on({cell}) {n}{{track="{CANARY}"}} >= {least}\n'
                f"and on({pair}) {stable(n)} >= {least}\n"
                f'and on({cell}) {log_variance}{{track="{CANARY}"}}\n'
                f"and on({pair}) {stable(log_variance)}"
            ),
        },
        {
            "record": recorded_name("cell", C.RECORDED_CANARY_TPOT_LOG_RATIO, settings),
            "expr": f"ln({joined(tpot, '/', tpot)})\nand on({cell}) {paired}",
        },
        {
            "record": recorded_name("cell", C.RECORDED_CANARY_TPOT_VARIANCE, settings),
            "expr": f"({joined(log_variance, '+', log_variance)})\nand on({cell}) {paired}",
        },
        {
            "record": recorded_name("cell", C.RECORDED_CANARY_TPOT_DF_PART, settings),
            "expr": (
                f'{log_variance}{{track="{CANARY}"}} ^ 2\n'
                f'/ clamp_min({n}{{track="{CANARY}"}} - 1, 1)\n'
                f"+ on({pair}) group_left({C.Label.BASELINE_CONFIG}) "
                f"({stable(log_variance)} ^ 2 / clamp_min({stable(n)} - 1, 1))\n"
                f"and on({cell}) {paired}"
            ),
        },
        {
            "record": recorded_name("cell", C.RECORDED_CANARY_TPOT_TOKENS, settings),
            "expr": canary(y),
        },
        {
            "record": recorded_name("cell", C.RECORDED_CANARY_TPOT_REQUESTS, settings),
            "expr": (
                f'label_replace({canary(n)}, "{C.Label.SIDE}", "{CANARY}", "", "")\n'
                f"or label_replace({paired} * on({pair}) group_left() {stable(n)}, "
                f'"{C.Label.SIDE}", "{STABLE}", "", "")'
            ),
        },
    ]
    return rules


def _level_rules(level: str, settings: Settings) -> list[dict[str, Any]]:
    """Per slice or model: the canary-weighted log-ratio, its variance and degrees of freedom,
    whether it is compared, and the ratio's bounds at the family-wise quantile."""
    labels = Q.by((*Q.LEVELS[level], C.Label.BASELINE_CONFIG))
    tokens = recorded_name("cell", C.RECORDED_CANARY_TPOT_TOKENS, settings)
    weight = f"({tokens}\n/ on({labels}) group_left() sum by ({labels}) ({tokens}))"
    log_ratio = recorded_name("cell", C.RECORDED_CANARY_TPOT_LOG_RATIO, settings)
    variance = recorded_name("cell", C.RECORDED_CANARY_TPOT_VARIANCE, settings)
    df_part = recorded_name("cell", C.RECORDED_CANARY_TPOT_DF_PART, settings)
    requests = recorded_name("cell", C.RECORDED_CANARY_TPOT_REQUESTS, settings)
    names = {
        "log_ratio": recorded_name(level, C.RECORDED_CANARY_TPOT_LOG_RATIO, settings),
        "variance": recorded_name(level, C.RECORDED_CANARY_TPOT_VARIANCE, settings),
        "df_part": recorded_name(level, C.RECORDED_CANARY_TPOT_DF_PART, settings),
        "requests": recorded_name(level, C.RECORDED_CANARY_TPOT_REQUESTS, settings, "sum"),
        "compared": recorded_name(level, C.RECORDED_CANARY_TPOT_COMPARED, settings, "bool"),
        "df": recorded_name(level, C.RECORDED_CANARY_TPOT_DF, settings),
        "t": recorded_name(level, C.RECORDED_CANARY_TPOT_T, settings),
    }
    least = settings.zones.min_requests
    by_family = f"{C.Label.MODEL}, {C.Label.CONFIG}"
    z = f"({names['df']} * 0 + on({by_family}) group_left {_z_name(settings)})"
    compared = names["compared"]
    return [
        {
            "record": names["log_ratio"],
            "expr": f"sum by ({labels}) ({weight} * {log_ratio})",
        },
        {
            "record": names["variance"],
            "expr": f"sum by ({labels}) ({weight} ^ 2 * {variance})",
        },
        {
            "record": names["df_part"],
            "expr": f"sum by ({labels}) ({weight} ^ 4 * {df_part})",
        },
        {
            "record": names["requests"],
            "expr": f"sum by ({labels}, {C.Label.SIDE}) ({requests})",
        },
        {
            "record": compared,
            "expr": (
                f"{names['log_ratio']} * 0 + 1\n"
                f'and on({labels}) {names["requests"]}{{side="{CANARY}"}} >= {least}\n'
                f'and on({labels}) {names["requests"]}{{side="{STABLE}"}} >= {least}'
            ),
        },
        {
            "record": names["df"],
            "expr": (
                f"{names['variance']} ^ 2 / ({names['df_part']} > 0)\nand on({labels}) {compared}"
            ),
        },
        {
            "record": names["t"],
            "expr": (
                f"{z}\n+ ({z} ^ 3 + {z}) / (4 * {names['df']})\n"
                f"+ (5 * {z} ^ 5 + 16 * {z} ^ 3 + 3 * {z}) / (96 * {names['df']} ^ 2)"
            ),
        },
        {
            "record": ratio_bound(level, "estimate", settings),
            "expr": f"exp({names['log_ratio']})\nand on({labels}) {compared}",
        },
        *(
            {
                "record": ratio_bound(level, bound, settings),
                "expr": (
                    f"exp({names['log_ratio']} {sign} {names['t']} * sqrt({names['variance']}))"
                    f"\nand on({labels}) {compared}"
                ),
            }
            for bound, sign in (("lower", "-"), ("upper", "+"))
        ),
    ]


def _z_name(settings: Settings) -> str:
    return recorded_name("model", C.RECORDED_CANARY_TPOT_Z, settings)


def goodput_rules(settings: Settings, windows: Q.Windows) -> list[dict[str, Any]]:
    """Every recording rule of the canary's goodput comparison, in the order they read."""
    family = recorded_name("model", C.RECORDED_CANARY_TPOT_COMPARED, settings, "count")
    by_family = f"{C.Label.MODEL}, {C.Label.CONFIG}"
    compared = [
        recorded_name(level, C.RECORDED_CANARY_TPOT_COMPARED, settings, "bool")
        for level in Q.LEVELS
    ]
    counts = [f"count by ({by_family}) ({name})" for name in compared]
    first = [rule for level in Q.LEVELS for rule in _level_rules(level, settings)[:5]]
    rest = [rule for level in Q.LEVELS for rule in _level_rules(level, settings)[5:]]
    return [
        *_cell_rules(settings, windows),
        *first,
        {
            "record": family,
            "expr": f"({counts[0]}\n+ on({by_family}) {counts[1]})\nor {counts[0]}\nor {counts[1]}",
        },
        {"record": _z_name(settings), "expr": family_z(family, settings.canary.confidence)},
        *rest,
    ]


def slower_alert(settings: Settings) -> Alert:
    cfg = settings.canary
    lower = ratio_bound("slice", "lower", settings)
    estimate = ratio_bound("slice", "estimate", settings)
    labels = "{{ $labels.model }} / {{ $labels.ctx_bucket }} / {{ $labels.task }}"
    above = 1.0 + cfg.tpot_margin
    return Alert(
        name=C.AlertName.CANARY_SLOWER,
        severity="critical",
        expr=f"{estimate}\nand on({Q.by(Q.SLICE)}) {lower} > {above:g}",
        for_seconds=cfg.for_seconds,
        summary=f"The canary config decodes slower than stable for {labels}",
        description=(
            "Slice " + labels + ": the time per output token of config {{ $labels.config }} "
            "(canary) is {{ $value | humanize }} times that of {{ $labels.baseline_config }} "
            f"(stable) over {window(settings)}, compared within load buckets; the whole "
            f"interval is above {above:g} (slower by more than {cfg.tpot_margin:.0%})."
        ),
        meaning=(
            "What users feel of a config change: pods labelled `track=canary` decode each "
            "output token more slowly than the stable ones, at the same load. Per slice the "
            "ratio canary / stable of the decode time per output token (generation time after "
            "the first token over output tokens - 1, vLLM's per-request metrics) is compared "
            "within load buckets (requests in flight) and combined at the canary's mix, so a "
            "canary with lighter or heavier traffic per pod is not judged by its load; the "
            "interval is request-level and guarded across the slices compared (Bonferroni). "
            f"Its lower bound above {above:g} for {Q.duration(cfg.for_seconds)}: the canary is "
            f"slower by more than {cfg.tpot_margin:.0%}, whatever its acceptance."
        ),
        confirm=(
            f"`{estimate}` and its `_lower` / `_upper` bounds by slice; "
            f"`{ratio_bound('model', 'estimate', settings)}` for the model",
            f"`{C.SPEC_CONFIG_INFO}`: what the two configs are (method, draft, K, vLLM)",
            "`specwatch compare --metric tpot` on both tracks' cycle logs: the same ratio "
            "offline, per slice and load",
        ),
        actions=(
            "Abort the rollout (Argo Rollouts: the generated AnalysisTemplate does it).",
            "A longer K or a bigger draft costs more per step than it gains at this load: "
            "`specwatch advise` gives the K per batch size.",
        ),
        extra_labels={"track": CANARY},
    )
