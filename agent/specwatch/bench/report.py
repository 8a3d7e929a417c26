"""The report: `results.json` (every figure), `report.md` (tables and a verdict), PNG plots.

The verdict is statistical, not a threshold on point estimates: a slice is "helps" when the
whole confidence interval of its end-to-end speedup lies above 1, "hurts" when it lies below,
and "unclear" otherwise (too few requests, or no real difference).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from specwatch.bench import concurrency, plots
from specwatch.bench.results import BASELINE

ALL = "all"
HELPS, HURTS, UNCLEAR = "helps", "hurts", "unclear"
MAX_LISTED = 8


def call(figure: dict[str, Any] | None) -> str:
    if not figure or figure["low"] is None:
        return UNCLEAR
    if figure["low"] > 1.0:
        return HELPS
    if figure["high"] < 1.0:
        return HURTS
    return UNCLEAR


def _overall(target: dict[str, Any]) -> dict[str, Any]:
    return next(r for r in target["slices"] if r["ctx_bucket"] == ALL and r["task"] == ALL)


def _e2e(row: dict[str, Any]) -> dict[str, Any] | None:
    speedup = row.get("speedup")
    return speedup.get("e2e") if speedup else None


def verdict(targets: list[dict[str, Any]]) -> dict[str, Any]:
    """Per speculative target: overall call and the slices where it helps or hurts; best K."""
    per_target = []
    for target in targets:
        if target["name"] == BASELINE or not any(r["speedup"] for r in target["slices"]):
            continue
        detail = [r for r in target["slices"] if r["ctx_bucket"] != ALL and r["task"] != ALL]
        calls: dict[str, list[dict[str, Any]]] = {HELPS: [], HURTS: [], UNCLEAR: []}
        for row in detail:
            figure = _e2e(row)
            calls[call(figure)].append(
                {"ctx_bucket": row["ctx_bucket"], "task": row["task"], "e2e": figure}
            )
        overall = _e2e(_overall(target))
        per_target.append(
            {
                "target": target["name"],
                "k": target["k"],
                "overall": call(overall),
                "e2e": overall,
                "tpot": (_overall(target)["speedup"] or {}).get("tpot"),
                "slices": calls,
            }
        )
    best = None
    ranked = sorted(
        (t for t in per_target if t["e2e"] and t["e2e"]["low"] is not None),
        key=lambda t: -t["e2e"]["estimate"],
    )
    if ranked:
        top = ranked[0]
        close = [t["target"] for t in ranked[1:] if t["e2e"]["high"] >= top["e2e"]["low"]]
        best = {"target": top["target"], "k": top["k"], "e2e": top["e2e"], "not_separable": close}
    return {"targets": per_target, "best": best}


def _x(figure: dict[str, Any] | None) -> str:
    if not figure:
        return "—"
    if figure["low"] is None:
        return f"{figure['estimate']:.2f}x (n={figure['pairs']}, too few for an interval)"
    return f"{figure['estimate']:.2f}x [{figure['low']:.2f}, {figure['high']:.2f}]"


def _p(latency: dict[str, Any] | None, key: str = "p50") -> str:
    return "—" if not latency else f"{latency[key]:.1f}"


def _alpha(acceptance: dict[str, Any] | None) -> str:
    if not acceptance:
        return "—"
    return (
        f"{acceptance['alpha']:.2f} [{acceptance['alpha_low']:.2f}, {acceptance['alpha_high']:.2f}]"
    )


def plain_verdict(v: dict[str, Any], confidence: float) -> list[str]:
    lines = []
    for t in v["targets"]:
        e2e, tpot = t["e2e"], t["tpot"]
        if e2e is None or e2e["low"] is None:
            lines.append(f"- **{t['target']}**: too few paired requests for a speedup interval.")
            continue
        word = {HELPS: "faster than", HURTS: "slower than", UNCLEAR: "not distinguishable from"}
        name = t["target"] if t["target"] == f"K={t['k']}" else f"{t['target']} (K={t['k']})"
        lines.append(
            f"- **{name}** is {word[t['overall']]} the baseline end to end: "
            f"{_x(e2e)} ({confidence:.0%} CI); per output token {_x(tpot)}. "
            f"Helps in {len(t['slices'][HELPS])} slice(s), hurts in {len(t['slices'][HURTS])}, "
            f"unclear in {len(t['slices'][UNCLEAR])}."
        )
        hurting = t["slices"][HURTS]
        if t["overall"] != HURTS:  # a win overall that still hurts somewhere: say where
            for row in sorted(hurting, key=lambda r: r["e2e"]["estimate"])[:MAX_LISTED]:
                lines.append(
                    f"  - hurts at {row['ctx_bucket']} tokens, task {row['task']}: {_x(row['e2e'])}"
                )
            if len(hurting) > MAX_LISTED:
                lines.append(f"  - and {len(hurting) - MAX_LISTED} more slices (tables below)")
    best = v["best"]
    if best and len(v["targets"]) > 1:
        tail = (
            f"; {', '.join(best['not_separable'])} cannot be told apart from it at this sample size"
            if best["not_separable"]
            else "; the others are clearly slower"
        )
        lines.append(f"- **Best K: {best['k']}** ({best['target']}, {_x(best['e2e'])}){tail}.")
    if best and best["e2e"]["high"] < 1.0:
        lines.append(
            "- Speculation does not pay on this workload: keep it off, or change the draft."
        )
    return lines or ["- One target, no baseline: figures only, no comparison."]


def _target_row(t: dict[str, Any]) -> str:
    o = _overall(t)
    tps, rps, e2e, acceptance = (
        t["output_tokens_per_s"],
        t["requests_per_s"],
        o["e2e_ms"],
        o["acceptance"],
    )
    speed = o["speedup"] or {}
    cells = [
        t["name"],
        t["model"],
        str(t["k"]),
        f"{t['ok']} / {t['failed']}",
        "—" if tps is None else f"{tps:.1f}",
        "—" if rps is None else f"{rps:.2f}",
        "—" if not e2e else f"{e2e['p50']:.0f} / {e2e['p95']:.0f} / {e2e['p99']:.0f}",
        _p(o["ttft_ms"]),
        _p(o["tpot_ms"]),
        _p(o["itl_ms"]),
        _alpha(acceptance),
        "—" if not acceptance else f"{acceptance['tau']:.2f}",
        _x(speed.get("e2e")),
        _x(speed.get("tpot")),
    ]
    return "| " + " | ".join(cells) + " |"


def quality_lines(checks: list[dict[str, Any]] | None) -> list[str]:
    """The losslessness verdicts in plain words."""
    lines = []
    for entry in checks or ():
        greedy, dist = entry["greedy"], entry["distribution"]
        name = entry["target"]
        if greedy:
            if greedy["flagged"]:
                lines.append(
                    f"- **{name}: outputs differ from the baseline at temperature 0** in "
                    f"{greedy['compared'] - greedy['identical']} of {greedy['compared']} requests "
                    f"(first divergence at token {greedy['first_divergence']['median']:g}, "
                    "median). Greedy speculative decoding must return the target's own output: "
                    "this is a correctness problem of the server, not noise."
                )
            else:
                lines.append(
                    f"- {name}: outputs identical to the baseline's for all {greedy['compared']} "
                    f"requests at temperature 0 (compared by {greedy['by']})."
                )
        if dist:
            mark = "**" if dist["flagged"] else ""
            lines.append(
                f"- {mark}{name} at temperature {dist['temperature']:g}: {dist['verdict']}{mark} "
                f"({dist['prompts']} prompts x {dist['samples_per_side']} samples per side)."
            )
    return lines


def _quality_section(checks: list[dict[str, Any]] | None) -> list[str]:
    if not checks:
        return []
    lines = ["", "## Quality: is speculation lossless here?", ""]
    lines += [
        "| target | identical at T=0 | compared by | first divergence (min / median / max) "
        "| distribution test at T>0 | p-value | similarity within / between |",
        "|---|---:|---|---|---|---:|---|",
    ]
    for entry in checks:
        greedy, dist = entry["greedy"], entry["distribution"]
        first = greedy["first_divergence"] if greedy else None
        cells = [
            entry["target"],
            "—" if not greedy else f"{greedy['identical']} / {greedy['compared']}",
            "—" if not greedy else greedy["by"],
            "—" if not first else f"{first['min']} / {first['median']:g} / {first['max']}",
            "—" if not dist else ("**differs**" if dist["flagged"] else "no difference"),
            "—" if not dist else f"{dist['p_value']:.4f}",
            "—"
            if not dist
            else f"{dist['within_similarity']:.3f} / {dist['between_similarity']:.3f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    for entry in checks:
        for example in (entry["greedy"] or {}).get("examples", []):
            lines.append(
                f"\n{entry['target']}, request {example['index']}, diverges at token "
                f"{example['position']}:\n\n    baseline: {example['baseline']!r}\n"
                f"    spec:     {example['spec']!r}"
            )
    lines += [
        "",
        "At temperature 0 the speculative output must equal the baseline's token for token. "
        "At temperature > 0 the test asks whether speculative samples differ from baseline "
        "samples more than baseline samples differ among themselves (chrF similarity, a "
        "permutation test within each prompt; `results.json` has every figure).",
    ]
    return lines


def _cost_section(rows: list[dict[str, Any]] | None) -> list[str]:
    if not rows:
        return []
    header = (
        "| target | $/accelerator-hour x accelerators | output tok/s | $ per 1M output tokens "
        "| saving vs baseline |"
    )
    lines = ["", "## Cost", "", header, "|---|---:|---:|---:|---:|"]
    for row in rows:
        saving = row["saving_vs_baseline"]
        lines.append(
            f"| {row['target']} | {row['price_per_accelerator_hour']:g} x {row['accelerators']} "
            f"| {row['output_tokens_per_s']:.1f} | {row['cost_per_million_output_tokens']:.3f} "
            f"| {'—' if saving is None else f'{saving:+.1%}'} |"
        )
    lines += ["", "At the throughput measured here (the load of this run), one replica."]
    return lines


def markdown(document: dict[str, Any]) -> str:
    meta, targets, v = document["meta"], document["targets"], document["verdict"]
    confidence = meta["analysis"]["confidence"]
    lines = [
        "# specwatch bench report",
        "",
        f"`{meta['command']}`" if meta.get("command") else "",
        "",
        f"{meta['requests']} requests per target ({meta['workload']}), "
        f"{meta['load_description']}, temperature {meta['load']['temperature']}, "
        f"max tokens {meta['max_tokens']}; specwatch {meta['version']}, {meta['finished']}.",
    ]
    if meta.get("partial"):
        lines += ["", "**Partial report: the run was interrupted.**"]
    lines += ["", "## Verdict", "", *plain_verdict(v, confidence)]
    lines += quality_lines(document.get("quality"))
    sweep = document.get("sweep")
    if sweep:
        lines += concurrency.markdown(sweep, confidence)
        lines += [
            "",
            f"The verdict above and the tables below are at concurrency "
            f"{sweep['concurrency'][0]}, the first level of the sweep.",
        ]
    lines += ["", "## Targets", ""]
    lines += [
        "| target | model | K | ok / failed | output tok/s | req/s | e2e p50 / p95 / p99 ms "
        "| TTFT p50 ms | TPOT p50 ms | ITL p50 ms | alpha-hat | tau | speedup e2e "
        "| speedup/token |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for t in targets:
        lines.append(_target_row(t))
        if t["errors"]:
            lines.append(f"|  | errors: {t['errors']} |")
    for t in targets:
        if not t["k"]:
            continue
        lines += [
            "",
            f"## {t['name']} by slice",
            "",
            "| ctx | task | n | e2e p50 ms | TPOT p50 ms | alpha-hat | rate | tau "
            "| speedup e2e | speedup/token | call |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for r in t["slices"]:
            a = r["acceptance"]
            speed = r["speedup"] or {}
            lines.append(
                f"| {r['ctx_bucket']} | {r['task']} | {r['ok']} | {_p(r['e2e_ms'])} "
                f"| {_p(r['tpot_ms'])} | {_alpha(a)} | "
                + (f"{a['rate']:.2f} | {a['tau']:.2f}" if a else "— | —")
                + f" | {_x(speed.get('e2e'))} | {_x(speed.get('tpot'))} "
                f"| {call(speed.get('e2e')) if speed else '—'} |"
            )
    baseline = next((t for t in targets if t["name"] == BASELINE), None)
    if baseline:
        lines += [
            "",
            "## baseline by slice",
            "",
            "| ctx | task | n | TTFT p50 ms | e2e p50 / p99 ms | TPOT p50 ms |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for r in baseline["slices"]:
            lines.append(
                f"| {r['ctx_bucket']} | {r['task']} | {r['ok']} | {_p(r['ttft_ms'])} "
                f"| {_p(r['e2e_ms'])} / {_p(r['e2e_ms'], 'p99')} | {_p(r['tpot_ms'])} |"
            )
    lines += _quality_section(document.get("quality"))
    lines += _cost_section(document.get("cost"))
    lines += [
        "",
        "## Plots",
        "",
        "![latency vs context](latency_vs_context.png)",
        "![acceptance vs context](acceptance_vs_context.png)",
        "![per-position acceptance](per_position.png)",
        "![speedup vs K](speedup_vs_k.png)",
        *(["![speedup surface](speedup_surface.png)"] if sweep else []),
        "",
        "## How to read this",
        "",
        f"Intervals are {confidence:.0%}: speedups by a paired bootstrap over requests "
        f"({meta['analysis']['bootstrap']} resamples), alpha-hat with its request-level "
        "interval (Wilson on trials / design effect). Speedup end to end is mean baseline "
        "latency over mean latency; per token compares time per output token after the "
        "first. A slice *helps* when its whole interval is above 1, *hurts* when below, else "
        "*unclear*. alpha-hat is the per-token acceptance (comparable across K), rate is vLLM's "
        "accepted/drafted, tau the mean tokens per step. All figures: `results.json`.",
        "",
    ]
    return "\n".join(lines)


def write_samples(runs: Any, out: Path) -> Path:
    """`samples.jsonl`: one line per measured request (timings, tokens, steps; no text)."""
    path = out / "samples.jsonl"
    with path.open("wb") as file:
        for run in runs:
            for s in run.samples:
                line = {
                    "target": s.target,
                    "index": s.index,
                    "task": s.task,
                    "ok": s.ok,
                    "error": s.error,
                    "prompt_tokens": s.prompt_tokens,
                    "output_tokens": s.output_tokens,
                    "ttft_s": s.ttft,
                    "e2e_s": s.e2e,
                    "tpot_s": s.tpot,
                    "arrivals": len(s.gaps) + (s.ttft is not None),
                    "spec_steps": s.spec.steps if s.spec else None,
                    "accepted": sum(s.spec.accepted) if s.spec else None,
                    "drafted": sum(s.spec.drafted) if s.spec else None,
                }
                file.write(orjson.dumps(line) + b"\n")
    return path


def write(document: dict[str, Any], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    results = out / "results.json"
    results.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
    confidence = document["meta"]["analysis"]["confidence"]
    pngs = plots.render_all(document["targets"], out, confidence)
    if document.get("sweep"):
        pngs.append(plots.speedup_surface(document["sweep"], out, confidence))
    report = out / "report.md"
    report.write_text(markdown(document))
    return [report, results, *pngs]
