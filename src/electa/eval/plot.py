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
