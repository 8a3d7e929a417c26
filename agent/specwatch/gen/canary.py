"""Canary against stable in PromQL: per slice the difference of alpha-hat between the pods of
track `canary` and those of track `stable` over the same window, with the request-level
interval of analysis/compare/alpha.py, and the alert and Argo Rollouts analysis that act on it.

Both sides are read at the same time (the SRE workbook's rule: a canary is compared with a
control that runs beside it, not with the fleet before it). Per side the variance of alpha-hat
is p (1 - p) / effective trials (the design effect's, gen/rules.py); the difference's variance
is their sum, with Welch-Satterthwaite's degrees of freedom. The stable side is its config
with the most trials in the slice (normally the only one; `baseline_config` names it). The
family-wise guard is Bonferroni over the comparisons per model and canary config: its slices
with both sides past the zone gates, and its rollup (analysis/compare/alpha.compare_models). The
quantile is the normal one at 1 - (1 - confidence) / (2 m) for the next m of a table above the
count (never less guarded than the sidecar's exact m), made Student's by Cornish-Fisher's
terms on the Welch degrees of freedom.
"""

from __future__ import annotations

from statistics import NormalDist

from specwatch import conventions as C
from specwatch.gen import promql as Q
from specwatch.gen.alert import Alert, Variant, looked_up
from specwatch.gen.template import PromQL, Recording
from specwatch.settings import Settings

# the family sizes the quantile table steps through (a model has 6 x 9 slices by default)
FAMILY_STEPS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64, 96, 128, 256, 512, 1024)
CANARY, STABLE = C.TRACK_CANARY, C.TRACK_STABLE

# the comparisons of one model and canary config: its slices' and its rollup's, either alone
FAMILY = PromQL("""
    (count by (${by}) (${slices})
    + on(${by}) count by (${by}) (${models}))
    or count by (${by}) (${slices})
    or count by (${by}) (${models})
""")

# `worse` where canary and stable speculate alike (by the config info's `speculation`), or
# where what either runs is not known (then acceptance judges, as before the info carried it)
SAME_SPECULATION = PromQL("""
    max without(${speculation}) (
    (${worse})
    * on(${config}) group_left(${speculation}) ${info}
    and on(${baseline_config}, ${speculation}) ${stable}
    )
    or (${worse}) unless on(${config}) ${info}
    or (${worse}) unless on(${baseline_config}) ${stable}
""")

# `worse` where canary and stable speculate differently (goodput decides)
OTHER_SPECULATION = PromQL("""
    max without(${speculation}) (
    (${worse})
    * on(${config}) group_left(${speculation}) ${info}
    unless on(${baseline_config}, ${speculation}) ${stable}
    )
    and on(${baseline_config}) ${stable}
""")

# the stable config compared with: the stable side's with the most trials, named
CHOSEN = PromQL("""
    label_replace(
      topk by (${pair}) (1, ${trials}{track="${stable}"}),
      "${baseline_config}", "$1", "${config}", "(.*)"
    )
""")

# a slice is compared where both sides pass the zone gates
COMPARED = PromQL("""
    ${both} * 0 + 1
    and on(${full}) ${trials}{track="${canary}"} >= ${min_trials}
    and on(${full}) ${requests}{track="${canary}"} >= ${min_requests}
    and on(${pair}) ${stable_trials} >= ${min_trials}
    and on(${pair}) ${stable_requests} >= ${min_requests}
""")

# Welch-Satterthwaite's degrees of freedom of the difference
WELCH_DF = PromQL("""
    (${variance_sum}) ^ 2
    / (
      ${variance}{track="${canary}"} ^ 2 / clamp_min(${requests}{track="${canary}"} - 1, 1)
      + on(${pair}) group_left(${baseline_config}) (${stable_part})
    )
    and on(${full}) ${compared}
""")

# the stable side's term of it
WELCH_STABLE = PromQL("${variance} ^ 2 / clamp_min(${requests} - 1, 1)")

# Student's t from the normal quantile z by Cornish-Fisher's first terms on df
CORNISH_FISHER = PromQL("""
    ${z}
    + (${z} ^ 3 + ${z}) / (4 * ${df})
    + (5 * ${z} ^ 5 + 16 * ${z} ^ 3 + 3 * ${z}) / (96 * ${df} ^ 2)
""")

# stable's time per output token over canary's, per model
GAIN = PromQL("""
    1 / (${canary})
    * on(${model}) group_left(${baseline_config}) topk by (${model}) (1, ${stable})
""")


def window(settings: Settings) -> str:
    return Q.duration(settings.canary.window_seconds)


def recorded_name(level: str, metric: str, settings: Settings, operation: str = "robust") -> str:
    """A canary comparison's recorded series over the canary window (`level:metric:op30m`)."""
    return Q.record(level, metric, f"{operation}{window(settings)}")


def difference_bound(level: str, bound: str, settings: Settings) -> str:
    metric = C.RECORDED_CANARY_DIFFERENCE + ("" if bound == "estimate" else f"_{bound}")
    return recorded_name(level, metric, settings)


def ratio_bound(level: str, bound: str, settings: Settings) -> str:
    """The recorded ratio canary / stable of TPOT (`estimate`) or its `lower` / `upper` bound
    (gen/goodput_rules.py)."""
    metric = C.RECORDED_CANARY_TPOT_RATIO + ("" if bound == "estimate" else f"_{bound}")
    return recorded_name(level, metric, settings)


def family_z(count: str, confidence: float) -> str:
    """The Bonferroni normal quantile for the family size series `count`, by steps."""
    terms, below = [], 0
    for m in FAMILY_STEPS:
        z = NormalDist().inv_cdf(1.0 - (1.0 - confidence) / (2.0 * m))
        terms.append(f"({count} > bool {below}) * ({count} <= bool {m}) * {z!r}")
        below = m
    z = NormalDist().inv_cdf(1.0 - (1.0 - confidence) / (2.0 * 1e6))
    terms.append(f"({count} > bool {below}) * {z!r}")
    return "\n+ ".join(terms)


def family_count(compared: str, settings: Settings) -> str:
    """The family of one model and canary config: its slices compared and its rollup, when
    compared (analysis/compare/alpha.compare_models: one guard over all of a model's verdicts);
    `compared` the recorded metric of either comparison (acceptance, TPOT)."""
    slices, models = (recorded_name(level, compared, settings, "bool") for level in Q.LEVELS)
    return FAMILY(by=f"{C.Label.MODEL}, {C.Label.CONFIG}", slices=slices, models=models)


def canary_rules(settings: Settings, windows: Q.Windows) -> list[Recording]:
    """Per level (slice, model), over the canary window: each track's variance, the stable
    config compared with, the slices compared, the difference with its bounds (one family per
    model and canary config, over both levels); per model the measured gain of canary over
    stable."""
    cfg, w, gates = settings.canary, window(settings), settings.zones
    first: list[Recording] = []  # what every level's family needs: what it compares
    rules: list[Recording] = []
    for level, labels in Q.LEVELS.items():
        full = Q.by(labels)
        pair = Q.by(tuple(label for label in labels if label not in C.RUN_LABELS))
        p, n_eff = Q.robust_alpha(level, w), Q.effective_trials(level, w)
        trials = Q.increase(level, C.ACCEPTANCE_TRIALS, w)
        requests = Q.increase(level, C.SLICE_REQUESTS if level == "slice" else C.MODEL_REQUESTS, w)
        variance = recorded_name(level, C.RECORDED_VARIANCE, settings)
        chosen = recorded_name(level, C.RECORDED_CANARY_BASELINE, settings, "increase")
        one = f"({chosen} * 0 + 1)"

        def stable(series: str, full: str = full, one: str = one) -> str:
            """The stable side of `series`, its chosen config only, with baseline_config."""
            return (
                f'({series}{{track="{STABLE}"}} * on({full}) '
                f"group_left({C.Label.BASELINE_CONFIG}) {one})"
            )

        def joined(left: str, op: str, right: str, pair: str = pair) -> str:
            """canary `op` stable, slice by slice, keeping the stable config's name."""
            return (
                f'{left}{{track="{CANARY}"}}\n{op} on({pair}) '
                f"group_left({C.Label.BASELINE_CONFIG}) {stable(right)}"
            )

        compared = recorded_name(level, C.RECORDED_CANARY_COMPARED, settings, "bool")
        family = recorded_name(level, C.RECORDED_CANARY_COMPARED, settings, "count")
        z_of = recorded_name(level, C.RECORDED_CANARY_Z, settings)
        df = recorded_name(level, C.RECORDED_CANARY_DF, settings)
        t = recorded_name(level, C.RECORDED_CANARY_T, settings)
        estimate = difference_bound(level, "estimate", settings)
        sd = f"sqrt({joined(variance, '+', variance)})"
        by_family = f"{C.Label.MODEL}, {C.Label.CONFIG}"
        z = f"({df} * 0 + on({by_family}) group_left {z_of})"  # onto every slice compared
        baseline, config = C.Label.BASELINE_CONFIG, C.Label.CONFIG
        first += [
            Recording(variance, f"{p} * (1 - {p}) / {n_eff}"),
            Recording(
                chosen,
                CHOSEN(
                    pair=pair, trials=trials, stable=STABLE, baseline_config=baseline, config=config
                ),
            ),
            Recording(
                compared,
                COMPARED(
                    both=joined(trials, ">= bool", trials),
                    full=full,
                    pair=pair,
                    trials=trials,
                    requests=requests,
                    canary=CANARY,
                    stable_trials=stable(trials),
                    stable_requests=stable(requests),
                    min_trials=gates.min_trials,
                    min_requests=gates.min_requests,
                ),
            ),
        ]
        welch = WELCH_DF(
            variance_sum=joined(variance, "+", variance),
            variance=variance,
            requests=requests,
            canary=CANARY,
            pair=pair,
            baseline_config=baseline,
            full=full,
            compared=compared,
            stable_part=WELCH_STABLE(variance=stable(variance), requests=stable(requests)),
        )
        rules += [
            Recording(family, family_count(C.RECORDED_CANARY_COMPARED, settings)),
            Recording(z_of, family_z(family, cfg.confidence)),
            Recording(estimate, f"({joined(p, '-', p)})\nand on({full}) {compared}"),
            Recording(df, welch),
            Recording(t, CORNISH_FISHER(z=z, df=df)),
        ]
        for bound, sign in (("lower", "-"), ("upper", "+")):
            rules.append(
                Recording(
                    difference_bound(level, bound, settings), f"{estimate}\n{sign} {t} * {sd}"
                )
            )
    rules.append(_gain(settings, windows))
    return first + rules


def _gain(settings: Settings, windows: Q.Windows) -> Recording:
    """Per model: stable's time per output token over canary's (speculative requests; point
    estimate: the per-request moments of decode times are not exported)."""
    w, span = window(settings), windows(settings.canary.window_seconds)
    model, pair = Q.by(Q.MODEL), str(C.Label.MODEL)

    def tpot(track: str) -> str:
        spec = f'variant="{C.VARIANT_SPEC}",track="{track}"'
        return (
            f"sum by ({model}) (rate({C.LOAD_DECODE_SECONDS}_total{{{spec}}}[{span}]))\n"
            f"/ sum by ({model}) (rate({C.LOAD_DECODE_TOKENS}_total{{{spec}}}[{span}]))"
        )

    stable = (
        f'label_replace(\n({tpot(STABLE)}),\n"{C.Label.BASELINE_CONFIG}", "$1", '
        f'"{C.Label.CONFIG}", "(.*)")'
    )
    gain = GAIN(
        canary=tpot(CANARY), model=pair, baseline_config=C.Label.BASELINE_CONFIG, stable=stable
    )
    return Recording(Q.record("model", C.RECORDED_CANARY_GAIN, f"ratio{w}"), gain)


def _speculation(worse: str, same: bool) -> str:
    """`worse` where the canary's config speculates as its stable config does (same method,
    draft, K or schedule, verifier: the `speculation` of the config info), or, `same` False,
    where it speculates otherwise. A config whose info is missing counts as the same: acceptance
    then judges, as it did before the info carried `speculation`."""
    info = f"max by ({C.Label.CONFIG}, {C.Label.SPECULATION}) ({C.SPEC_CONFIG_INFO})"
    stable = f'label_replace({info}, "{C.Label.BASELINE_CONFIG}", "$1", "{C.Label.CONFIG}", "(.*)")'
    template = SAME_SPECULATION if same else OTHER_SPECULATION
    return template(
        worse=worse,
        info=info,
        stable=stable,
        config=C.Label.CONFIG,
        speculation=C.Label.SPECULATION,
        baseline_config=C.Label.BASELINE_CONFIG,
    )


def canary_alert(settings: Settings) -> Alert:
    cfg = settings.canary
    upper = difference_bound("slice", "upper", settings)
    estimate = difference_bound("slice", "estimate", settings)
    worse = f"{estimate}\nand on({Q.by(Q.SLICE)}) {upper} < -{cfg.margin:g}"
    labels = "{{ $labels.model }} / {{ $labels.ctx_bucket }} / {{ $labels.task }}"
    tpot = ratio_bound("slice", "estimate", settings)
    goodput = looked_up(tpot, ("model", "config", "ctx_bucket", "task"), absent="not compared yet")
    said = (
        "Slice " + labels + ": alpha-hat of config {{ $labels.config }} (canary) minus "
        '{{ $labels.baseline_config }} (stable) is {{ $value | printf "%.3f" }} over '
        f"{window(settings)}, the whole interval of the difference below -{cfg.margin:g}."
    )
    return Alert(
        name=C.AlertName.CANARY_WORSE,
        severity="critical",
        expr=_speculation(worse, same=True),
        for_seconds=cfg.for_seconds,
        summary=f"The canary config is worse than stable for {labels}",
        description=said + " The two speculate alike (method, draft, K, verifier), or what "
        "they run is not known: acceptance is the whole story.",
        meaning=(
            "Pods labelled `track=canary` run another speculative config (a new draft, K, "
            "schedule or vLLM version) beside the stable ones. Per slice, the difference of "
            "their alpha-hat over the same window has a request-level interval (each side's "
            "cluster-robust variance, Welch's degrees of freedom), guarded across the slices "
            "compared (Bonferroni: equal configs are called different in at most "
            f"{1 - cfg.confidence:.0%} of comparisons of a whole model). Its upper bound below "
            f"-{cfg.margin:g} for {Q.duration(cfg.for_seconds)}: the canary accepts less by more "
            "than the margin, with both sides past the zone gates. Where the two configs "
            "speculate alike (a vLLM upgrade, a config mistake) that is the whole story and "
            "pages; where they differ (a cheaper draft, another K) a config that accepts less "
            "can be faster for every user, so it is a warning and goodput "
            f"(`{C.AlertName.CANARY_SLOWER}`) decides."
        ),
        confirm=(
            f"`{estimate}` and its `_lower` / `_upper` bounds by slice",
            f"`{tpot}`: the canary's time per output token over stable's (goodput)",
            f"`{C.SPEC_CONFIG_INFO}`: what the two configs are (method, draft, K, vLLM, "
            "`speculation`)",
        ),
        actions=(
            "Same speculation (critical): abort the rollout (Argo Rollouts: the generated "
            "AnalysisTemplate does it); a vLLM upgrade that accepts less is a regression.",
            "Other speculation (warning): let goodput decide; if only long contexts are "
            "worse, check the new draft's max length / RoPE scaling.",
            "Compare the configs offline: `specwatch compare` on both tracks' cycle logs.",
        ),
        extra_labels={"track": CANARY},
        when="the two configs speculate alike, or what they run is not known",
        variants=(
            Variant(
                severity="warning",
                expr=_speculation(worse, same=False),
                description=said + " The two speculate differently (method, draft, K or "
                "verifier): goodput decides, not acceptance; the canary's time per output "
                f"token over stable's here: {goodput} ({C.AlertName.CANARY_SLOWER} pages when "
                f"surely above {1 + cfg.tpot_margin:g}).",
                when="they speculate differently (goodput decides)",
            ),
        ),
    )
