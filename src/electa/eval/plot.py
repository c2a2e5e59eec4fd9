"""One PNG a reader can take in at a glance: per-configuration bars and recall against depth."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path


def plot_report(path: Path, title: str, metrics: Mapping[str, Mapping[str, float]],
                recall_curve: Mapping[str, Mapping[int, float]]) -> None:
    """Write ``path``: left, nDCG@10 and Recall@100 per configuration; right, recall@k curves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    configs = list(metrics)
    fig, (bars, curve) = plt.subplots(1, 2, figsize=(12, 4.8))
    width = 0.38
    xs = range(len(configs))
    for offset, metric in ((-width / 2, "ndcg@10"), (width / 2, "recall@100")):
        values = [metrics[c].get(metric, 0.0) for c in configs]
        drawn = bars.bar([x + offset for x in xs], values, width, label=metric)
        bars.bar_label(drawn, fmt="%.3f", fontsize=7, padding=2)
    bars.set_xticks(list(xs), configs, rotation=20, ha="right")
    bars.set_ylim(0, 1.08)
    bars.set_ylabel("score (higher is better)")
    bars.set_title("Each leg alone, fused (RRF) and scored orders")
    bars.legend(loc="lower right")
    for config, points in recall_curve.items():
        ks = sorted(points)
        curve.plot(ks, [points[k] for k in ks], marker="o", label=config)
    curve.set_xscale("log")
    curve.set_xlabel("depth k (documents looked at)")
    curve.set_ylabel("recall@k")
    curve.set_ylim(0, 1.02)
    curve.set_title("Recall against depth: how deep each must look")
    curve.grid(alpha=0.3)
    curve.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_reliability(path: Path, rows: Sequence[Sequence[float]], title: str) -> None:
    """Reliability diagram: mean predicted probability against the observed relevant rate."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 5))
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", label="perfectly calibrated")
    if rows:
        ax.plot([r[0] for r in rows], [r[1] for r in rows], marker="o", label="Electa (held-out folds)")
        for predicted, observed, count in rows:
            ax.annotate(f"n={int(count)}", (predicted, observed), fontsize=7, textcoords="offset points", xytext=(4, -10))
    ax.set_xlabel("predicted probability of relevance")
    ax.set_ylabel("observed share relevant")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title(title, fontsize=9)
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_answer_report(path: Path, title: str,
                       rows: Mapping[str, Mapping[str, tuple[float | None, float | None, float | None]]],
                       latency: Mapping[str, Mapping[str, float]]) -> None:
    """Write ``path``: one panel per answer metric, a bar per answerer with its 95% interval as
    the error bar, and a last panel of latency (p50 bars, p95 whiskers)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(rows)
    metrics = list(next(iter(rows.values()), {}))
    panels = len(metrics) + 1
    cols = min(4, panels)
    nrows = (panels + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(3.4 * cols, 3.2 * nrows), squeeze=False)
    colours = [f"C{i}" for i in range(len(names))]
    xs = list(range(len(names)))
    for ax, metric in zip(axes.flat, metrics, strict=False):
        values = [rows[n][metric][0] for n in names]
        heights, lows, highs = [], [], []
        for n in names:
            value, low, high = rows[n][metric]
            h = value or 0.0
            heights.append(h)
            # A percentile-bootstrap interval need not hold its own point estimate (a skewed
            # resample, or no estimate at all): the bar then shows no whisker on that side.
            lows.append(max(0.0, h - low) if low is not None and value is not None else 0.0)
            highs.append(max(0.0, high - h) if high is not None and value is not None else 0.0)
        drawn = ax.bar(xs, heights, color=colours, yerr=[lows, highs], capsize=4)
        ax.bar_label(drawn, labels=["n/a" if v is None else f"{v:.2f}" for v in values], fontsize=7, padding=2)
        ax.set_title(metric, fontsize=9)
        ax.set_ylim(0, 1.1)
        ax.set_xticks(xs, names, rotation=20, ha="right", fontsize=7)
    ax = axes.flat[len(metrics)]
    p50 = [latency.get(n, {}).get("total_p50", 0.0) for n in names]
    p95 = [latency.get(n, {}).get("total_p95", 0.0) for n in names]
    drawn = ax.bar(xs, p50, color=colours, yerr=[[0.0] * len(names), [max(0.0, b - a) for a, b in zip(p50, p95, strict=True)]],
                   capsize=4)
    ax.bar_label(drawn, fmt="%.0f", fontsize=7, padding=2)
    ax.set_title("latency ms (p50, whisker to p95)", fontsize=9)
    ax.set_xticks(xs, names, rotation=20, ha="right", fontsize=7)
    for extra in list(axes.flat)[panels:]:
        extra.set_visible(False)
    fig.suptitle(title + " — bars: value; error bars: 95% interval", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
