"""The report's PNG plots (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # the backend is chosen first

ALL = "all"


def _rows(target: dict[str, Any], *, task: str | None = None, ctx: str | None = None) -> list[Any]:
    rows = target["slices"]
    if task is not None:
        rows = [r for r in rows if r["task"] == task and r["ctx_bucket"] not in (ALL, "unknown")]
    if ctx is not None:
        rows = [r for r in rows if r["ctx_bucket"] == ctx]
    return list(rows)


def _spec_targets(targets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [t for t in targets if t["k"] > 0]


def latency_vs_context(targets: list[dict[str, Any]], out: Path) -> Path:
    figure, (e2e_ax, tpot_ax) = plt.subplots(1, 2, figsize=(11, 4))
    for target in targets:
        rows = [r for r in _rows(target, task=ALL) if r["e2e_ms"]]
        labels = [r["ctx_bucket"] for r in rows]
        e2e_ax.plot(labels, [r["e2e_ms"]["p50"] for r in rows], marker="o", label=target["name"])
        tpot = [r for r in rows if r["tpot_ms"]]
        tpot_ax.plot(
            [r["ctx_bucket"] for r in tpot],
            [r["tpot_ms"]["p50"] for r in tpot],
            marker="o",
            label=target["name"],
        )
    e2e_ax.set(title="End-to-end latency, p50", xlabel="context (prompt tokens)", ylabel="ms")
    tpot_ax.set(title="Time per output token, p50", xlabel="context (prompt tokens)", ylabel="ms")
    for ax in (e2e_ax, tpot_ax):
        ax.grid(alpha=0.3)
        _legend(ax)
    return _save(figure, out / "latency_vs_context.png")


def acceptance_vs_context(targets: list[dict[str, Any]], out: Path) -> Path:
    spec = _spec_targets(targets) or targets[:1]
    figure, axes = plt.subplots(1, len(spec), figsize=(5.5 * len(spec), 4), squeeze=False)
    for ax, target in zip(axes[0], spec, strict=True):
        tasks = sorted({r["task"] for r in target["slices"] if r["task"] != ALL})
        for task in tasks:
            rows = [r for r in _rows(target, task=task) if r["acceptance"]]
            if rows:
                ax.plot(
                    [r["ctx_bucket"] for r in rows],
                    [r["acceptance"]["alpha"] for r in rows],
                    marker="o",
                    label=task,
                )
        ax.set(title=f"{target['name']}: alpha-hat", xlabel="context (prompt tokens)")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        _legend(ax, fontsize="small")
    return _save(figure, out / "acceptance_vs_context.png")


def per_position(targets: list[dict[str, Any]], out: Path) -> Path:
    figure, ax = plt.subplots(figsize=(6, 4))
    for target in _spec_targets(targets):
        overall = _rows(target, task=None, ctx=ALL)
        rows = [r for r in overall if r["task"] == ALL and r["acceptance"]]
        if rows:
            p = rows[0]["acceptance"]["per_position"]
            ax.plot(range(1, len(p) + 1), p, marker="o", label=target["name"])
    ax.set(
        title="Per-position acceptance",
        xlabel="draft position i",
        ylabel="share of steps accepting >= i",
    )
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    _legend(ax)
    return _save(figure, out / "per_position.png")


def speedup_vs_k(targets: list[dict[str, Any]], out: Path, confidence: float) -> Path:
    figure, ax = plt.subplots(figsize=(6, 4))
    points = []
    for target in _spec_targets(targets):
        overall = next(r for r in target["slices"] if r["ctx_bucket"] == ALL and r["task"] == ALL)
        if overall["speedup"]:
            points.append((target, overall["speedup"]))
    for offset, (kind, label) in enumerate((("e2e", "end to end"), ("tpot", "per token"))):
        xs, ys, lows, highs = [], [], [], []
        for target, speedup in points:
            figure_ = speedup.get(kind)
            if figure_ and figure_["low"] is not None:
                xs.append(target["k"] + (offset - 0.5) * 0.15)
                ys.append(figure_["estimate"])
                lows.append(figure_["estimate"] - figure_["low"])
                highs.append(figure_["high"] - figure_["estimate"])
        if xs:
            ax.errorbar(xs, ys, yerr=[lows, highs], fmt="o", capsize=4, label=label)
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    ax.set(
        title=f"Speedup over the baseline ({confidence:.0%} CI)",
        xlabel="K (draft tokens)",
        ylabel="x",
    )
    ax.grid(alpha=0.3)
    _legend(ax)
    return _save(figure, out / "speedup_vs_k.png")


def speedup_surface(sweep: dict[str, Any], out: Path, confidence: float) -> Path:
    """Heatmap: K (rows) x concurrency (columns), end-to-end speedup, 1 = no gain (white)."""
    levels = sweep["concurrency"]
    rows = sorted({(c["k"], c["target"]) for c in sweep["surface"]})
    grid = [[float("nan")] * len(levels) for _ in rows]
    figure, ax = plt.subplots(figsize=(1.8 + 1.6 * len(levels), 1.2 + 0.8 * max(1, len(rows))))
    for cell in sweep["surface"]:
        if not cell["e2e"]:
            continue
        i = rows.index((cell["k"], cell["target"]))
        j = levels.index(cell["concurrency"])
        e2e = cell["e2e"]
        grid[i][j] = e2e["estimate"]
        text = f"{e2e['estimate']:.2f}"
        if e2e["low"] is not None:
            text += f"\n[{e2e['low']:.2f}, {e2e['high']:.2f}]"
        ax.text(j, i, text, ha="center", va="center", fontsize=8)
    finite = [v for row in grid for v in row if v == v]
    spread = max([abs(v - 1.0) for v in finite] + [0.05])
    image = ax.imshow(grid, cmap="RdYlGn", vmin=1.0 - spread, vmax=1.0 + spread, aspect="auto")
    figure.colorbar(image, ax=ax, label="speedup (x)")
    ax.set_xticks(range(len(levels)), [str(c) for c in levels])
    ax.set_yticks(
        range(len(rows)), [name if name == f"K={k}" else f"{name} (K={k})" for k, name in rows]
    )
    ax.set(
        title=f"End-to-end speedup by concurrency and K ({confidence:.0%} CI)",
        xlabel="concurrency (about vLLM's batch size)",
    )
    return _save(figure, out / "speedup_surface.png")


def _legend(ax: Any, **options: Any) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**options)
    else:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)


def _save(figure: Any, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def render_all(targets: list[dict[str, Any]], out: Path, confidence: float) -> list[Path]:
    return [
        latency_vs_context(targets, out),
        acceptance_vs_context(targets, out),
        per_position(targets, out),
        speedup_vs_k(targets, out, confidence),
    ]
