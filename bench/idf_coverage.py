"""Would lexical coverage weighted by each term's rarity order the served hits better? (issue 10)

    python bench/idf_coverage.py ../shared/data

The absolute score's lexical coverage (SPEC C3, :func:`electa.scoring.coverage`) counts the
question's stems a passage shares, each the same: "error", "when" and "E1042" weigh alike. BM25
weighs each by its inverse document frequency. This bench asks whether the *order* (C4: score +
lift x agreement) gains when the coverage it reads weighs each shared term by its IDF
(``0.25 + 0.6 x sum(idf of shared terms) / sum(idf of the question's terms)``, capped at 0.95 as
now), the floor still reading the plain score. Each shipped set is searched once as served
(judges off, each leg at its served depth); every question's candidates are then re-ordered per
cell: the IDF (``lucene``: ln(1 + (N - n + 0.5) / (n + 0.5)), always positive; ``bm25``: the
full-text leg's own, ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6), a power of it (1, 1.5, 2),
the lift and its k. N and n are counted over the set's units (one organisation, so the caller's
view). The cell is chosen as the served lift was (``bench/lift_choice.py``): leaving one corpus
out (the four XQuAD-R languages together), the cell whose smallest gain over the served order on
the sets left in is largest.

Before any figure, the bench checks per candidate that the plain coverage it recomputes from the
terms, raised by the dense vote's cosine, is the engine's score, that its fused value is the
engine's (at the served k), and that the served cell orders the candidates as the engine did:
the re-ordering starts from the engine's own numbers. Per-question figures are kept in ``--cache``.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import math
import pickle
import time
from pathlib import Path

import numpy as np
from lift_choice import SETS, corpus  # (the sets and corpora the lift was chosen on)

from electa.config import Settings
from electa.eval.beir import load_beir
from electa.eval.runner import EVAL_ORG, ingest_corpus, labelled_set
from electa.fusion import lift_scale, rrf_contribution
from electa.judges.ltr import ORDER
from electa.scoring import AGREEMENT_K, LIFT, coverage_of
from electa.served_order import RANK_RULES, Order
from electa.text.analysis import DEFAULT_LANGUAGE, coverage_terms, credit, index_terms, joined_parts
from electa.types import Caller, LegStatus

KINDS = ("lucene", "bm25")
POWERS = (1.0, 1.5, 2.0)
KS = (5.0, 10.0, 20.0)
LIFTS = (0.3, 0.4, 0.5, 0.6, 0.8)
SERVED = ("plain", 0.0, AGREEMENT_K, LIFT)
Cell = tuple[str, float, float, float]  # (idf kind, power, k, lift)


def idf(n: int, total: int, kind: str) -> float:
    if kind == "lucene":
        return math.log(1.0 + (total - n + 0.5) / (n + 0.5))
    return max(math.log((total - n + 0.5) / (n + 0.5)), 1e-6)


def measure(directory: Path, split: str) -> list[dict[str, object]]:
    """Per labelled question: each served candidate's relevance, agreement at each k, cosine,
    extra minimum (Q&A, graph) and the shares of the question's terms (plain and IDF-weighted)."""
    with labelled_set(directory, split, None, None) as (engine, beir, settings, _):
        ingest_corpus(engine, beir, progress=False)
        segments = engine.fulltext.warm()
        total = sum(seg.unit_ids.size for seg in segments)

        def df(term: str) -> int:
            return sum(len(p[0]) for seg in segments if (p := seg.postings(term)) is not None)

        legs = [name for name, leg in engine.legs.items() if leg.available()]
        if len({settings.weights.get(leg, 1.0) for leg in legs}) > 1:
            raise SystemExit(f"the legs run here weigh differently ({settings.weights}): measure with equal weights")
        depths = {leg: settings.depths.get(leg, 50) for leg in legs}
        out: list[dict[str, object]] = []
        for q in [q for q in sorted(beir.queries) if any(g > 0 for g in beir.qrels.get(q, {}).values())]:
            text, qrels = beir.queries[q], beir.qrels[q]
            results, _ = engine.retrieve(text, Caller(EVAL_ORG), legs=legs, depths=depths)
            hits = engine.rank(text, results, order=Order.SCORED)
            asked = coverage_terms(text, {h.lang or DEFAULT_LANGUAGE for h in hits})
            weights = {kind: {t: idf(df(t), total, kind) for terms in asked.values() for t in terms} for kind in KINDS}
            found = {r.leg: r.hits for r in results if r.status is LegStatus.OK}
            scales = {k: lift_scale(settings.weights, found, k) for k in KS}
            ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)[:10]
            row: dict[str, object] = {"gains": np.array([max(qrels.get(h.ext_id, 0), 0) for h in hits], float),
                                      "idcg": sum(g / math.log2(i + 2) for i, g in enumerate(ideal))}
            cosines, extras, shares = [], [], {("plain", 0.0): []} | {(k, p): [] for k in KINDS for p in POWERS}
            for h in hits:
                lang = h.lang or DEFAULT_LANGUAGE
                terms = asked[lang]
                shared = terms.intersection(credit(frozenset(index_terms(f"{h.title} {h.text}", lang)),
                                                   joined_parts(text, lang)))  # (as the engine: rules 9)
                cosine = max((min(v.raw_score, 1.0) for v in h.votes if v.leg == "dense"), default=0.0)
                plain = coverage_of(len(shared), len(terms))
                base = max(plain, cosine)
                minimum = any(v.leg in ("qa", "graph") for v in h.votes)
                if h.score < base - 1e-9 or (h.score > base + 1e-9 and not minimum):
                    raise SystemExit(f"{directory.name} {q}: the recomputed coverage ({plain}) and cosine ({cosine})"
                                     f" do not give the engine's score {h.score}: fix the bench before reading figures")
                cosines.append(cosine)
                extras.append(h.score if h.score > base + 1e-9 else 0.0)  # a Q&A or graph minimum
                shares[("plain", 0.0)].append(len(shared) / len(terms) if terms else 0.0)
                for kind, power in itertools.product(KINDS, POWERS):
                    whole = sum(weights[kind][t] ** power for t in terms)
                    part = sum(weights[kind][t] ** power for t in shared)
                    shares[(kind, power)].append(part / whole if whole > 0 else 0.0)
            row["cosine"], row["extra"] = np.array(cosines), np.array(extras)
            row["shares"] = {key: np.array(v) for key, v in shares.items()}
            row["agree"] = {k: np.array([min(1.0, sum(rrf_contribution(v.rank, 1.0, k) for v in h.votes) / scales[k])
                                         if scales[k] > 0 else 0.0 for h in hits]) for k in KS}
            # The engine's own numbers: each hit's fused value at the served k, and the served order.
            agree = [h.fused for h in hits]
            if any(abs(sum(rrf_contribution(v.rank, 1.0, AGREEMENT_K) for v in h.votes) - a) > 1e-9
                   for h, a in zip(hits, agree, strict=True)):
                raise SystemExit(f"{directory.name} {q}: the bench's fused values are not the engine's")
            served = served_keys(row)
            if any(later > earlier + 1e-9 for earlier, later in itertools.pairwise(served)):
                raise SystemExit(f"{directory.name} {q}: the bench's served order is not the engine's")
            out.append(row)
    return out


def keys(row: dict[str, object], cell: Cell) -> np.ndarray:
    """The C4 order value of each of the row's candidates under ``cell``."""
    kind, power, k, lift = cell
    coverage = np.minimum(0.95, 0.25 + 0.6 * row["shares"][(kind, power)])  # type: ignore[index]
    return np.maximum(np.maximum(row["extra"], row["cosine"]), coverage) + lift * row["agree"][k]  # type: ignore[index,operator,no-any-return]


def served_keys(row: dict[str, object]) -> list[float]:
    return [float(x) for x in keys(row, SERVED)]


def ndcg(rows: list[dict[str, object]], cell: Cell) -> np.ndarray:
    discount = 1.0 / np.log2(np.arange(2, 12))
    out = []
    for row in rows:
        gains, idcg = row["gains"], float(row["idcg"])  # type: ignore[arg-type]
        if not len(gains) or not idcg:  # type: ignore[arg-type]
            out.append(0.0)
            continue
        top = np.argsort(-keys(row, cell), kind="stable")[:10]
        out.append(float((gains[top] * discount[: len(top)]).sum() / idcg))  # type: ignore[index]
    return np.array(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "electa" / "idf-coverage")
    args = ap.parse_args()
    cells: list[Cell] = [SERVED, *itertools.product(KINDS, POWERS, KS, LIFTS)]
    figures: dict[str, dict[Cell, np.ndarray]] = {}
    for name, split in SETS:
        if not (args.data / name).is_dir():
            print(f"(no {name} under {args.data}: skipped)")
            continue
        t0 = time.perf_counter()
        settings = Settings()
        measured_on = (load_beir(args.data / name, split).corpus_hash, settings.embedder, settings.floor,
                       sorted(settings.depths.items()), sorted(settings.weights.items()), KS, KINDS, POWERS,
                       AGREEMENT_K, LIFT, ORDER, RANK_RULES,
                       hashlib.sha256(Path(__file__).read_bytes()).hexdigest())  # (an edited bench measures again)
        file = args.cache / f"{name.replace('/', '-')}-{split}.pkl"
        cached = pickle.loads(file.read_bytes()) if file.exists() else None
        if isinstance(cached, dict) and cached.get("measured_on") == measured_on:
            rows = cached["rows"]
        else:
            rows = measure(args.data / name, split)
            args.cache.mkdir(parents=True, exist_ok=True)
            file.write_bytes(pickle.dumps({"measured_on": measured_on, "rows": rows}))
        figures[name] = {cell: ndcg(rows, cell) for cell in cells}
        print(f"{name} {split}: {len(rows)} questions, served {figures[name][SERVED].mean():.4f}"
              f" ({time.perf_counter() - t0:.0f} s)", flush=True)
    gain = {cell: {s: float(figures[s][cell].mean() - figures[s][SERVED].mean()) for s in figures} for cell in cells}

    def choose(held: str | None) -> Cell:
        kept = [s for s in figures if corpus(s) != held]
        return max(cells, key=lambda c: (min(gain[c][s] for s in kept), float(np.mean([gain[c][s] for s in kept]))))

    print("\nsmallest gain across all sets, best ten cells (idf kind, power, k, lift):")
    for cell in sorted(cells, key=lambda c: -min(gain[c].values()))[:10]:
        print(f"  {cell}: {min(gain[cell].values()):+.4f} | " + ", ".join(f"{s} {g:+.4f}" for s, g in gain[cell].items()))
    print(f"\nchosen on all sets: {choose(None)}")
    print("\n| held-out set | served | chosen on the others | its nDCG@10 | gain | questions better / worse |")
    print("|---|---|---|---|---|---|")
    for s in figures:
        cell = choose(corpus(s))
        a, b = figures[s][cell], figures[s][SERVED]
        print(f"| {s} | {b.mean():.4f} | {cell} | {a.mean():.4f} | {a.mean() - b.mean():+.4f} |"
              f" {int((a > b + 1e-12).sum())} / {int((a < b - 1e-12).sum())} |")


if __name__ == "__main__":
    main()
