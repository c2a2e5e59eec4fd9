"""Which C4 lift, read at which RRF k, should the served order use? Chosen leave one set out.

    python bench/lift_choice.py ../shared/data

The served order is ``absolute score + lift x fused / max_fused`` (SPEC C4, :mod:`electa.scoring`),
``fused`` the weighted RRF value at ``k``. Each shipped set's labelled questions are searched as
served (judges off, every leg the set's store runs, each at its served depth:
``Settings.depths``) and ranked once by the engine (``Engine.rank``); every cell of the grid
(each k of :data:`KS` with each lift of :data:`LIFTS`) then re-orders those hits by the same
formula from their absolute scores and their legs' ranks (:func:`reorder`). The bench checks the
re-ordering against the engine: at every k, at the served lift (:data:`electa.scoring.LIFT`) and
at the lift served before, it must give the engine's own order for every question, or the bench
stops. (Until RANK_RULES 6 it refused legs of unequal weights, under which the unit standing
for a document, so its absolute score, could change with k; no setting moves it now.) Beside
the grid: plain RRF (the engine's fused order, k = 60) and each leg alone; nDCG@10 over documents, each once at its best position.

Then the cell is chosen *leaving one corpus out*: the four XQuAD-R languages are one corpus
(the same questions translated), so when one of them is held out all four are. The rule, the
one a default must follow (the issue: never worse than what it replaces, on any set): the cell
whose smallest gain over ``--against`` (default k 60 and lift 0.25, the order served until this
bench chose the one in :mod:`electa.scoring`) across the sets left in is largest; ties go to the
cell nearest ``--against``. The held-out set's gain at the chosen cell is what a new
organisation could expect. The last line is the cell the rule chooses on every set. Until
2026-12-04 the bench chose the lift alone, at k = 60 (0.25, then served); the rule is the same.

Per held-out set it also prints how many questions the chosen cell ranks better and worse than
``--against`` with a two-sided sign test (a small mean gain of a few large moves is not a
default's proof), and, for the answer's sake, how many questions have fewer than four passing
hits among the first :data:`electa.answer.passages.ANSWER_WINDOW` (what the ask pipeline reads) while four
or more pass among all: passages a larger lift would push out of the answer's reach.
Per-question figures are kept in ``--cache`` with what they were measured on (the corpus, the
embedder, the floor, the depths, the grid, the served order's version); a cache measured on
anything else is measured again.
"""

from __future__ import annotations

import argparse
import math
import pickle
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from electa.answer.passages import ANSWER_WINDOW
from electa.config import Settings
from electa.engine import Engine
from electa.eval.beir import BeirSet, load_beir
from electa.eval.metrics import ndcg_at
from electa.eval.runner import EVAL_ORG, ingest_corpus, labelled_set, leg_documents
from electa.fusion import max_fused, rrf_contribution
from electa.judges.ltr import ORDER
from electa.scoring import AGREEMENT_K, LIFT, MATCHED_RANK, gap_terms, order_value
from electa.served_order import RANK_RULES, Order
from electa.types import Caller, Hit, LegResult

SETS = [("scifact", "train"), ("stackfaq", "dev"), ("cranfield", "test"), ("xquad-r/en", "test"),
        ("xquad-r/de", "test"), ("xquad-r/es", "test"), ("xquad-r/zh", "test")]
KS = (1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0)
LIFTS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7, 1.0)
XQUAD = "xquad-r/"
BEFORE = (60.0, 0.25)  # the C4 order served until 2026-12-04's second choice, which the choice must not lose to
Cell = tuple[float, float]  # (k, lift)


def cell_name(cell: Cell) -> str:
    return f"k {cell[0]:g} lift {cell[1]:g}"


def documents(hits: Sequence[Hit], key: str = "ext_id") -> list[str]:
    """Each document once, at its best position."""
    return list(dict.fromkeys(getattr(h, key) for h in hits))


def reorder(hits: Sequence[Hit], weights: Mapping[str, float], k: float, lift: float) -> list[Hit]:
    """``hits`` (one search's, in any order the engine gave) in the C4 order at ``k`` and ``lift``:
    score + lift x (the hit's weighted RRF value at k) / (that of a hit every leg that found
    something put first), less its meaning gap. Stable: equal keys keep ``hits``' order, as the engine's sort does."""
    scale = max_fused(weights, sorted({v.leg for h in hits for v in h.votes}), k)
    # (the meaning gap, RANK_RULES 10, reads neither k nor the lift: every cell holds it)
    gaps = dict(zip((h.document_id for h in hits), gap_terms(
        [next((v.raw_score for v in h.votes if v.leg == "dense"), None) for h in hits],
        [any(v.leg in ("qa", "graph") and v.rank <= MATCHED_RANK for v in h.votes) for h in hits]), strict=True))

    def key(h: Hit) -> float:
        fused = sum(rrf_contribution(v.rank, float(weights.get(v.leg, 1.0)), k) for v in h.votes)
        return order_value(h.score, fused, scale, lift, gaps[h.document_id])
    return sorted(hits, key=lambda h: -key(h))


@contextmanager
def served_set(directory: Path, split: str) -> Iterator[tuple[Engine, BeirSet, Settings, list[str], dict[str, int], list[str]]]:
    """``directory``'s cached evaluation store (the first run ingests it) as served: its engine,
    the set, the settings, the legs that run and each one's served depth, and the labelled
    questions of ``split``."""
    with labelled_set(directory, split, None, None) as (engine, beir, settings, _):
        ingest_corpus(engine, beir, progress=False)
        engine.fulltext.warm()
        legs = [name for name, leg in engine.legs.items() if leg.available()]
        depths = {leg: settings.depths.get(leg, 50) for leg in legs}
        yield engine, beir, settings, legs, depths, [q for q in sorted(beir.queries)
                                                     if any(g > 0 for g in beir.qrels.get(q, {}).values())]


def measure(directory: Path, split: str) -> dict[str, np.ndarray]:
    """Per-question nDCG@10 of every cell, plain RRF and each leg, over ``directory``'s labelled
    questions of ``split`` (its cached evaluation store; the first run ingests it); and per cell
    (``short <cell>``) whether fewer than four hits pass among the first :data:`ANSWER_WINDOW`
    while four or more pass among all."""
    with served_set(directory, split) as (engine, beir, settings, legs, depths, qids):
        out: dict[str, list[float]] = {}
        for q in qids:
            text, qrels = beir.queries[q], beir.qrels[q]
            results, _ = engine.retrieve(text, Caller(EVAL_ORG), legs=legs, depths=depths)
            served = engine.rank(text, results, order=Order.SCORED)
            kept = {h.document_id for h in served}
            passing = {h.document_id: h.passes for h in served}
            by_document = {h.document_id: h for h in served}
            for k in KS:
                # (the engine's fused order at k first: ties keep it, as they do in the engine)
                at_k = [by_document[h.document_id] for h in engine.rank(text, results, order=Order.FUSED, k=k)
                        if h.document_id in kept]
                # Each k's re-ordering is checked against the engine's own order at that k (at the
                # served lift, and at the order served before): the cells are the engine's.
                for lift in {LIFT, BEFORE[1]}:
                    want = engine.rank(text, results, order=Order.SCORED, k=k, lift=lift)
                    if documents(reorder(at_k, settings.weights, k, lift)) != documents(want):
                        raise SystemExit(f"{directory.name} {q}: the bench's re-ordering at k {k:g}, lift {lift:g}"
                                         " is not the engine's order; fix reorder() before reading any figure")
                for lift in LIFTS:
                    ranked = reorder(at_k, settings.weights, k, lift)
                    name = cell_name((k, lift))
                    out.setdefault(name, []).append(ndcg_at(documents(ranked), qrels))
                    flags = [passing[h.document_id] for h in ranked]
                    out.setdefault(f"short {name}", []).append(float(sum(flags[:ANSWER_WINDOW]) < 4 <= sum(flags)))
            add_bars(engine, text, results, qrels, legs, out)
    return {k: np.asarray(v) for k, v in out.items()}


def add_bars(engine: Engine, text: str, results: Sequence[LegResult], qrels: Mapping[str, int], legs: Sequence[str],
             out: dict[str, list[float]]) -> None:
    """The target's bars for one question into ``out``: plain RRF's nDCG@10 (``fused``) and each leg's alone."""
    out.setdefault("fused", []).append(ndcg_at(documents(engine.rank(text, results, order=Order.FUSED)), qrels))
    found = leg_documents(engine, results, "ext_id")
    for leg in legs:
        out.setdefault(leg, []).append(ndcg_at([d for d, _ in found.get(leg, [])], qrels))


def legs_of(c: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each leg's own figures (a leg that found nothing for any question, e.g. an empty Q&A leg, left out)."""
    return {k: v for k, v in c.items() if " " not in k and k != "fused" and v.any()}  # (cells and counts are named with spaces)


def corpus(name: str) -> str:
    """The corpus a set is drawn from: the XQuAD-R languages are one (the same questions)."""
    return XQUAD if name.startswith(XQUAD) else name


def cells() -> list[Cell]:
    return [(k, lift) for k in KS for lift in LIFTS]


def choose(curves: dict[str, dict[str, np.ndarray]], held: str | None, against: Cell = BEFORE) -> Cell:
    """The cell chosen on every set but those of ``held``'s corpus (None: on every set): the best
    worst gain over ``against``; ties go to the cell nearest it (lift first, then k)."""
    def worst(cell: Cell) -> float:
        return min(float(c[cell_name(cell)].mean() - c[cell_name(against)].mean()) for n, c in curves.items()
                   if held is None or corpus(n) != corpus(held))
    return max(cells(), key=lambda cell: (round(worst(cell), 6), -abs(cell[1] - against[1]),
                                          -abs(math.log(cell[0] / against[0]))))


def sign_test(better: int, worse: int) -> float:
    """Two-sided exact sign test: the chance of a split at least this uneven by coin flips."""
    n, k = better + worse, min(better, worse)
    if n == 0:
        return 1.0
    return min(1.0, 2.0 * sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n)


def moved(before: np.ndarray, at: np.ndarray) -> str:
    """``nDCG | gain | better / worse (sign test p)`` of the per-question figures ``at`` over ``before``."""
    better, worse = int((at > before + 1e-12).sum()), int((at < before - 1e-12).sum())
    return (f"{at.mean():.4f} | {at.mean() - before.mean():+.4f} | {better} / {worse}"
            f" (p {sign_test(better, worse):.2g})")


def best_of(legs: dict[str, np.ndarray]) -> str:
    """The best single leg and its mean."""
    best = max(legs, key=lambda k: float(legs[k].mean()))
    return f"{best} {legs[best].mean():.4f}"


def parse_cell(text: str) -> Cell:
    k, _, lift = text.partition(":")
    cell = (float(k), float(lift))
    if cell not in cells():
        raise SystemExit(f"--against {text}: give K:LIFT with K one of {KS} and LIFT one of {LIFTS}")
    return cell


def each_set(data: Path, cache: Path, suffix: str, grid: tuple[object, ...],
             measure: Callable[[Path, str], dict[str, np.ndarray]]) -> Iterator[tuple[str, str, dict[str, np.ndarray], float]]:
    """Each shipped set under ``data`` with its per-question figures and the seconds they took:
    read from ``cache`` when they were measured on the same corpus, settings, ``grid`` and served
    order, else measured by ``measure`` and kept there."""
    for name, split in SETS:
        if not (data / name).is_dir():
            print(f"(no {name} under {data}: skipped)")
            continue
        t0 = time.perf_counter()
        file = cache / f"{name.replace('/', '-')}-{split}{suffix}.pkl"
        settings = Settings()
        measured_on = (load_beir(data / name, split).corpus_hash, settings.embedder, settings.floor,
                       sorted(settings.depths.items()), sorted(settings.weights.items()), *grid,
                       ANSWER_WINDOW, AGREEMENT_K, ORDER, RANK_RULES)
        cached = pickle.loads(file.read_bytes()) if file.exists() else None
        if isinstance(cached, dict) and cached.get("measured_on") == measured_on:
            curves = cached["curves"]
        else:
            curves = measure(data / name, split)
            cache.mkdir(parents=True, exist_ok=True)
            file.write_bytes(pickle.dumps({"measured_on": measured_on, "curves": curves}))
        yield name, split, curves, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path)
    ap.add_argument("--against", type=parse_cell, default=BEFORE, metavar="K:LIFT",
                    help="the cell gains are counted over (default 60:0.25)")
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "electa" / "lift-choice")
    args = ap.parse_args()
    against: Cell = args.against
    curves: dict[str, dict[str, np.ndarray]] = {}
    for name, split, c, seconds in each_set(args.data, args.cache, "-k", (KS, LIFTS, LIFT), measure):
        curves[name] = c
        best = max(cells(), key=lambda cell: c[cell_name(cell)].mean())
        print(f"{name} ({split}, {len(c['fused'])} questions, {seconds:.0f} s):"
              f" {cell_name(against)} {c[cell_name(against)].mean():.4f},"
              f" served ({cell_name((AGREEMENT_K, LIFT))}) {c[cell_name((AGREEMENT_K, LIFT))].mean():.4f},"
              f" its best {cell_name(best)} {c[cell_name(best)].mean():.4f}"
              + " | fused {:.4f} | ".format(c["fused"].mean())
              + " ".join(f"{k} {v.mean():.4f}" for k, v in legs_of(c).items()), flush=True)
    print(f"\nSmallest gain over {cell_name(against)} across the sets, per cell (rows k, columns lift):")
    print("| k | " + " | ".join(f"{lift:g}" for lift in LIFTS) + " |")
    print("|---|" + "---|" * len(LIFTS))
    for k in KS:
        print(f"| {k:g} | " + " | ".join(
            f"{min(c[cell_name((k, lift))].mean() - c[cell_name(against)].mean() for c in curves.values()):+.4f}"
            for lift in LIFTS) + " |")
    print(f"\n| held-out set | {cell_name(against)} | chosen on the others | its nDCG@10 | its gain | better / worse"
          f" questions (sign test p) | fewer than 4 passing in the first {ANSWER_WINDOW} | plain RRF | best single leg |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, c in curves.items():
        today = c[cell_name(against)]
        cell = choose(curves, name, against)
        at = c[cell_name(cell)]
        print(f"| {name} | {today.mean():.4f} | {cell_name(cell)} | {moved(today, at)}"
              f" | {int(c[f'short {cell_name(against)}'].sum())} → {int(c[f'short {cell_name(cell)}'].sum())}"
              f" | {c['fused'].mean():.4f} | {best_of(legs_of(c))} |")
    chosen = choose(curves, None, against)
    print(f"\nChosen on every set by the smallest gain over {cell_name(against)}: {cell_name(chosen)} (gains "
          + ", ".join(f"{n} {c[cell_name(chosen)].mean() - c[cell_name(against)].mean():+.4f}"
                      for n, c in curves.items()) + ")")


if __name__ == "__main__":
    main()
