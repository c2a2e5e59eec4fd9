"""Which C4 lift should the served order use? Chosen leave one set out, through the engine.

    python bench/lift_choice.py ../shared/data

The served order is ``absolute score + lift x fused / max_fused`` (SPEC C4,
:mod:`electa.scoring`). Each shipped set's labelled questions are searched as served (judges
off, every leg the set's store runs, depth 100 per leg) and ranked at each lift of
:data:`LIFTS` from the same leg lists (``Engine.rank(..., lift=...)``), beside plain RRF and
each leg alone; nDCG@10 over documents, each once at its best position.

Then, for each set held out, the lift is chosen on the *other* sets by the rule a default must
follow (the issue: never worse than what it replaces, on any set): the lift whose smallest
gain over ``--against`` (default 0.1, the lift served before this bench chose
:data:`electa.scoring.LIFT`) across the other sets is largest (``worst``);
beside it, the lift of the largest mean gain (``mean``). The held-out set's gain at the chosen
lift is what a new organisation could expect. Each set weighs the same whatever its size.

Per held-out set it also prints how many questions the chosen lift ranks better and worse than
today's (a paired count, so a small mean gain can be told from a few large moves).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from electa.engine import Order
from electa.eval.metrics import ndcg_at
from electa.eval.runner import EVAL_ORG, ingest_corpus, labelled_set, leg_documents
from electa.types import Caller

SETS = [("scifact", "train"), ("stackfaq", "dev"), ("cranfield", "test"), ("xquad-r/en", "test"),
        ("xquad-r/de", "test"), ("xquad-r/es", "test"), ("xquad-r/zh", "test")]
LIFTS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7, 1.0)
DEPTH = 100
BEFORE = 0.1  # the C4 lift served until 2026-12-04


def documents(hits: list, key: str = "ext_id") -> list[str]:
    """Each document once, at its best position."""
    return list(dict.fromkeys(getattr(h, key) for h in hits))


def measure(directory: Path, split: str, lifts: tuple[float, ...]) -> dict[str, np.ndarray]:
    """Per-question nDCG@10 of every lift, plain RRF and each leg, over ``directory``'s labelled
    questions of ``split`` (its cached evaluation store; the first run ingests it)."""
    with labelled_set(directory, split, None, None) as (engine, beir, _, _):
        ingest_corpus(engine, beir, progress=False)
        engine.fulltext.warm()
        legs = [name for name, leg in engine.legs.items() if leg.available()]
        qids = [q for q in sorted(beir.queries) if any(g > 0 for g in beir.qrels.get(q, {}).values())]
        out: dict[str, list[float]] = {}
        for q in qids:
            text, qrels = beir.queries[q], beir.qrels[q]
            results, _ = engine.retrieve(text, Caller(EVAL_ORG), legs=legs, depths=dict.fromkeys(legs, DEPTH))
            for lift in lifts:
                ranked = engine.rank(text, results, order=Order.SCORED, lift=lift)
                out.setdefault(f"lift {lift:g}", []).append(ndcg_at(documents(ranked), qrels))
            out.setdefault("fused", []).append(ndcg_at(documents(engine.rank(text, results, order=Order.FUSED)), qrels))
            found = leg_documents(engine, results, "ext_id")
            for leg in legs:
                out.setdefault(leg, []).append(ndcg_at([d for d, _ in found.get(leg, [])], qrels))
    return {k: np.asarray(v) for k, v in out.items()}


def choose(curves: dict[str, dict[str, np.ndarray]], held: str, lifts: tuple[float, ...], rule: str,
           against: float = BEFORE) -> float:
    """The lift chosen on every set but ``held``: the best worst gain over ``against``
    (``worst``), or the best mean gain (``mean``); ties go to the lift nearest ``against``."""
    def gains(lift: float) -> list[float]:
        return [float(c[f"lift {lift:g}"].mean() - c[f"lift {against:g}"].mean()) for n, c in curves.items() if n != held]
    pick = min if rule == "worst" else (lambda g: float(np.mean(g)))
    return max(lifts, key=lambda lift: (round(pick(gains(lift)), 6), -abs(lift - against)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path)
    ap.add_argument("--against", type=float, default=BEFORE, help=f"the lift gains are counted over (one of {LIFTS})")
    args = ap.parse_args()
    if args.against not in LIFTS:
        raise SystemExit(f"--against {args.against}: choose one of {LIFTS}")
    curves: dict[str, dict[str, np.ndarray]] = {}
    for name, split in SETS:
        if not (args.data / name).is_dir():
            print(f"(no {name} under {args.data}: skipped)")
            continue
        t0 = time.perf_counter()
        curves[name] = measure(args.data / name, split, LIFTS)
        c = curves[name]
        print(f"{name} ({split}, {len(c['fused'])} questions, {time.perf_counter() - t0:.0f} s): "
              + " ".join(f"{lift:g}:{c[f'lift {lift:g}'].mean():.4f}" for lift in LIFTS)
              + " | fused {:.4f} | ".format(c["fused"].mean())
              + " ".join(f"{k} {v.mean():.4f}" for k, v in c.items() if not k.startswith("lift") and k != "fused"),
              flush=True)
    print()
    print(f"| held-out set | lift {args.against:g} | lift chosen on the others, worst gain | its gain | better / worse"
          " questions | lift chosen, mean gain | its gain | plain RRF | best single leg |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, c in curves.items():
        today = c[f"lift {args.against:g}"]
        worst, mean = (choose(curves, name, LIFTS, rule, args.against) for rule in ("worst", "mean"))
        at_worst, at_mean = c[f"lift {worst:g}"], c[f"lift {mean:g}"]
        legs = {k: v.mean() for k, v in c.items() if not k.startswith("lift") and k != "fused"}
        best_leg = max(legs, key=lambda k: legs[k])
        print(f"| {name} | {today.mean():.4f} | {worst:g}: {at_worst.mean():.4f} | {at_worst.mean() - today.mean():+.4f}"
              f" | {(at_worst > today + 1e-12).sum()} / {(at_worst < today - 1e-12).sum()}"
              f" | {mean:g}: {at_mean.mean():.4f} | {at_mean.mean() - today.mean():+.4f}"
              f" | {c['fused'].mean():.4f} | {best_leg} {legs[best_leg]:.4f} |")


if __name__ == "__main__":
    main()
