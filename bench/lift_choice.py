"""Which C4 lift should the served order use? Chosen leave one set out, through the engine.

    python bench/lift_choice.py ../shared/data

The served order is ``absolute score + lift x fused / max_fused`` (SPEC C4,
:mod:`electa.scoring`). Each shipped set's labelled questions are searched as served (judges
off, every leg the set's store runs, each at its served depth: ``Settings.depths``) and ranked
at each lift of :data:`LIFTS` from the same leg lists (``Engine.rank(..., lift=...)``), beside
plain RRF and each leg alone; nDCG@10 over documents, each once at its best position.

Then the lift is chosen *leaving one corpus out*: the four XQuAD-R languages are one corpus
(the same questions translated), so when one of them is held out all four are. The rule, the
one a default must follow (the issue: never worse than what it replaces, on any set): the lift
whose smallest gain over ``--against`` (default 0.1, the lift served until this bench chose
:data:`electa.scoring.LIFT`) across the sets left in is largest (``worst``); beside it, the lift
of the largest mean gain (``mean``; it counts each XQuAD-R language as a set). That rule was picked after an earlier run of
``bench/fusion_transfer.py`` had shown the mean rule losing StackFAQ when it was held out, so
the rule itself was not chosen blind. The held-out set's gain at the chosen lift is what a new
organisation could expect. The last line is the lift the rule chooses on every set.

Per held-out set it also prints how many questions the chosen lift ranks better and worse than
``--against`` with a two-sided sign test (a small mean gain of a few large moves is not a
default's proof), and, for the answer's sake, how many questions have fewer than four passing
hits among the first :data:`electa.engine.ANSWER_WINDOW` (what the ask pipeline reads) while
four or more pass among all: passages a larger lift would push out of the answer's reach;
beside it, the same count among the first ten (what the pipeline read before 2026-12-04).
Per-question figures are kept in ``--cache`` with what they were measured on (the corpus, the
embedder, the floor, the depths, the lifts); a cache measured on anything else is measured again.
"""

from __future__ import annotations

import argparse
import math
import pickle
import time
from pathlib import Path

import numpy as np

from electa.config import Settings
from electa.engine import ANSWER_WINDOW, Order
from electa.eval.beir import load_beir
from electa.eval.metrics import ndcg_at
from electa.eval.runner import EVAL_ORG, ingest_corpus, labelled_set, leg_documents
from electa.types import Caller

SETS = [("scifact", "train"), ("stackfaq", "dev"), ("cranfield", "test"), ("xquad-r/en", "test"),
        ("xquad-r/de", "test"), ("xquad-r/es", "test"), ("xquad-r/zh", "test")]
LIFTS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7, 1.0)
XQUAD = "xquad-r/"
BEFORE = 0.1  # the C4 lift served until 2026-12-04, which the choice must not lose to


def documents(hits: list, key: str = "ext_id") -> list[str]:
    """Each document once, at its best position."""
    return list(dict.fromkeys(getattr(h, key) for h in hits))


def measure(directory: Path, split: str, lifts: tuple[float, ...]) -> dict[str, np.ndarray]:
    """Per-question nDCG@10 of every lift, plain RRF and each leg, over ``directory``'s labelled
    questions of ``split`` (its cached evaluation store; the first run ingests it); and per lift
    (``short <lift>``) whether fewer than four hits pass among the first :data:`ANSWER_WINDOW`
    while four or more pass among all (``short10 <lift>``: among the first ten)."""
    with labelled_set(directory, split, None, None) as (engine, beir, settings, _):
        ingest_corpus(engine, beir, progress=False)
        engine.fulltext.warm()
        legs = [name for name, leg in engine.legs.items() if leg.available()]
        depths = {leg: settings.depths.get(leg, 50) for leg in legs}
        qids = [q for q in sorted(beir.queries) if any(g > 0 for g in beir.qrels.get(q, {}).values())]
        out: dict[str, list[float]] = {}
        for q in qids:
            text, qrels = beir.queries[q], beir.qrels[q]
            results, _ = engine.retrieve(text, Caller(EVAL_ORG), legs=legs, depths=depths)
            for lift in lifts:
                ranked = engine.rank(text, results, order=Order.SCORED, lift=lift)
                out.setdefault(f"lift {lift:g}", []).append(ndcg_at(documents(ranked), qrels))
                passing = sum(h.passes for h in ranked)
                for key, window in ((f"short {lift:g}", ANSWER_WINDOW), (f"short10 {lift:g}", 10)):
                    out.setdefault(key, []).append(float(sum(h.passes for h in ranked[:window]) < 4 <= passing))
            out.setdefault("fused", []).append(ndcg_at(documents(engine.rank(text, results, order=Order.FUSED)), qrels))
            found = leg_documents(engine, results, "ext_id")
            for leg in legs:
                out.setdefault(leg, []).append(ndcg_at([d for d, _ in found.get(leg, [])], qrels))
    return {k: np.asarray(v) for k, v in out.items()}


def legs_of(c: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each leg's own figures (a leg that found nothing for any question, e.g. an empty Q&A leg, left out)."""
    return {k: v for k, v in c.items() if not k.startswith(("lift", "short")) and k != "fused" and v.any()}


def corpus(name: str) -> str:
    """The corpus a set is drawn from: the XQuAD-R languages are one (the same questions)."""
    return XQUAD if name.startswith(XQUAD) else name


def choose(curves: dict[str, dict[str, np.ndarray]], held: str | None, lifts: tuple[float, ...], rule: str,
           against: float = BEFORE) -> float:
    """The lift chosen on every set but those of ``held``'s corpus (None: on every set): the best
    worst gain over ``against`` (``worst``), or the best mean gain (``mean``); ties go to the
    lift nearest ``against``."""
    def gains(lift: float) -> list[float]:
        return [float(c[f"lift {lift:g}"].mean() - c[f"lift {against:g}"].mean()) for n, c in curves.items()
                if held is None or corpus(n) != corpus(held)]
    pick = min if rule == "worst" else (lambda g: float(np.mean(g)))
    return max(lifts, key=lambda lift: (round(pick(gains(lift)), 6), -abs(lift - against)))


def sign_test(better: int, worse: int) -> float:
    """Two-sided exact sign test: the chance of a split at least this uneven by coin flips."""
    n, k = better + worse, min(better, worse)
    if n == 0:
        return 1.0
    return min(1.0, 2.0 * sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path)
    ap.add_argument("--against", type=float, default=BEFORE, help=f"the lift gains are counted over (one of {LIFTS})")
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "electa" / "lift-choice")
    args = ap.parse_args()
    if args.against not in LIFTS:
        raise SystemExit(f"--against {args.against}: choose one of {LIFTS}")
    curves: dict[str, dict[str, np.ndarray]] = {}
    for name, split in SETS:
        if not (args.data / name).is_dir():
            print(f"(no {name} under {args.data}: skipped)")
            continue
        t0 = time.perf_counter()
        file = args.cache / f"{name.replace('/', '-')}-{split}.pkl"
        settings = Settings()
        measured_on = (load_beir(args.data / name, split).corpus_hash, settings.embedder, settings.floor,
                       sorted(settings.depths.items()), LIFTS, ANSWER_WINDOW)
        cached = pickle.loads(file.read_bytes()) if file.exists() else None
        if isinstance(cached, dict) and cached.get("measured_on") == measured_on:
            curves[name] = cached["curves"]
        else:
            curves[name] = measure(args.data / name, split, LIFTS)
            args.cache.mkdir(parents=True, exist_ok=True)
            file.write_bytes(pickle.dumps({"measured_on": measured_on, "curves": curves[name]}))
        c = curves[name]
        print(f"{name} ({split}, {len(c['fused'])} questions, {time.perf_counter() - t0:.0f} s): "
              + " ".join(f"{lift:g}:{c[f'lift {lift:g}'].mean():.4f}" for lift in LIFTS)
              + " | fused {:.4f} | ".format(c["fused"].mean())
              + " ".join(f"{k} {v.mean():.4f}" for k, v in legs_of(c).items()),
              flush=True)
    print()
    print(f"| held-out set | lift {args.against:g} | lift chosen on the others, worst gain | its gain | better / worse"
          f" questions (sign test p) | fewer than 4 passing in the first {ANSWER_WINDOW} (first 10)"
          " | lift chosen, mean gain | its gain"
          " | plain RRF | best single leg |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, c in curves.items():
        today = c[f"lift {args.against:g}"]
        worst, mean = (choose(curves, name, LIFTS, rule, args.against) for rule in ("worst", "mean"))
        at_worst, at_mean = c[f"lift {worst:g}"], c[f"lift {mean:g}"]
        legs = {k: v.mean() for k, v in legs_of(c).items()}
        best_leg = max(legs, key=lambda k: legs[k])
        better, worse = int((at_worst > today + 1e-12).sum()), int((at_worst < today - 1e-12).sum())
        print(f"| {name} | {today.mean():.4f} | {worst:g}: {at_worst.mean():.4f} | {at_worst.mean() - today.mean():+.4f}"
              f" | {better} / {worse} (p {sign_test(better, worse):.2g})"
              f" | {int(c[f'short {args.against:g}'].sum())} → {int(c[f'short {worst:g}'].sum())}"
              f" ({int(c[f'short10 {args.against:g}'].sum())} → {int(c[f'short10 {worst:g}'].sum())})"
              f" | {mean:g}: {at_mean.mean():.4f} | {at_mean.mean() - today.mean():+.4f}"
              f" | {c['fused'].mean():.4f} | {best_leg} {legs[best_leg]:.4f} |")
    chosen = choose(curves, None, LIFTS, "worst", args.against)
    print(f"\nChosen on every set by the worst gain over {args.against:g}: lift {chosen:g} (gains "
          + ", ".join(f"{n} {c[f'lift {chosen:g}'].mean() - c[f'lift {args.against:g}'].mean():+.4f}"
                      for n, c in curves.items()) + ")")


if __name__ == "__main__":
    main()
