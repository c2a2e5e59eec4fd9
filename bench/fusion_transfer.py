"""Does a query-adaptive fusion learned on some sets transfer to a set it never saw? (issue 10)

    python bench/fusion_transfer.py ../shared/data

The issue asks for a default served order, untuned, never worse than the best single leg nor
than plain fusion on any set, from a fusion that weighs each leg by what it knows about *this*
query. This bench measures the candidates leave-one-set-out: for each shipped set, a model is
fitted on the other sets' labelled questions and scored on this set's (nDCG@10, documents):

- ``served``: Electa's order as served (absolute score + :data:`electa.scoring.LIFT` x
  normalised RRF, C4; the header names the lift), as the engine
  ranked the candidates it keeps (a candidate found by words alone that shares no stem with
  the question is dropped);
- ``served, lift 0.3``: the same with agreement weighing three times as much;
- ``fused``: RRF k=60, both legs weight 1; ``fulltext`` / ``dense``: each leg alone;
- ``adaptive weights (LR)``: RRF with a per-query dense share from a logistic model over
  score-distribution features of each leg (z-score and gap of the top score, depth found,
  agreement of the top tens, the top cosine, question length);
- ``RRF, dense weight from the others``: weighted RRF with the dense share (of 0, 0.1 … 1) best
  on average over the other sets;
- ``convex, min-max`` / ``convex, z``: a convex combination of the two legs' scores, each
  normalised within the question's list (min-max, or z-score), a leg that did not find a
  candidate giving it the normalised score 0 (min-max) or its list's minimum (z), with the dense
  share chosen on the other sets (Bruch et al. 2023, "An Analysis of Fusion Functions for Hybrid
  Retrieval", find a tuned convex combination above RRF in and out of domain);
- ``convex z, share from confirmation``: the convex z combination with a dense share set per
  set *without labels*, from how its questions' legs confirm each other: ``base + slope x
  (how often dense's first hit is in full text's first ten - how often full text's first hit is
  in dense's first ten)``, over every question of the set (an organisation would count its own
  questions as they come); ``base`` (0.5, 0.6, 0.7) and ``slope`` (0 … 20) chosen on the other
  sets. A leg whose first hit the other leg confirms more often is trusted more;
- ``cell per question (ridge)``: the served order's own formula, with its agreement k, lift,
  meaning-gap weight and margin chosen per question among a few cells: the served one and each
  other set's best cell of :data:`CELLS` (the held-out set's own best is not offered unless
  another set chose it too). Each offered cell's nDCG@10 gain over the served cell is regressed
  (ridge, the question's features and their squares) on the other sets' questions, and a
  question gets the cell of largest predicted gain (the served one where none is predicted
  above 0). The bench prints, per set, its best cell in-sample and an oracle that picks each
  question's best of the offered cells;
- ``pointwise LR`` / ``lambdarank``: a candidate scored from scale-free features only (each
  leg's rank, z-score and share of its top score, the cosine and its gap to the query's best,
  the absolute score, the RRF value), so that no corpus's BM25 scale is learned. These two and
  the adaptive weights rank the union of both legs' lists.

The leg lists are cached in ``--cache`` by set, split and served order (:data:`electa.judges.ltr.ORDER`):
delete it after re-ingesting.

Each set's labelled questions weigh the same in training, whatever its size. Leg lists are
collected through the engine at depth 100 from the cached evaluation stores (``electa eval``
builds them; the first run of a set ingests it) and kept in ``--cache``.
"""

from __future__ import annotations

import argparse
import math
import pickle
import sys
from pathlib import Path

import numpy as np

from electa.eval.metrics import ndcg_at
from electa.eval.runner import EVAL_ORG, collect_leg_lists, labelled_set
from electa.eval.tuning import meaning_gaps
from electa.fusion import RRF_K, max_fused
from electa.judges.ltr import ORDER
from electa.scoring import AGREEMENT_K, GAP_MARGIN, GAP_WEIGHT, LIFT
from electa.types import Caller

SETS = [("scifact", "train"), ("stackfaq", "dev"), ("cranfield", "test"), ("xquad-r/en", "test"),
        ("xquad-r/de", "test"), ("xquad-r/es", "test"), ("xquad-r/zh", "test")]
GRID = np.linspace(0.0, 1.0, 11)


def collect(data: Path, cache: Path) -> dict[str, dict]:
    out = {}
    for name, split in SETS:
        if not (data / name).is_dir():
            continue
        file = cache / f"{name.replace('/', '-')}-{split}-{ORDER}.pkl"  # the tables hold the served order
        if not file.exists():
            with labelled_set(data / name, split, None, None) as (engine, beir, _, _):
                tables: dict = {}
                lists = collect_leg_lists(engine, beir, 100, False, Caller(EVAL_ORG), "ext_id",
                                          ["fulltext", "dense"], tables)
            cache.mkdir(parents=True, exist_ok=True)
            with file.open("wb") as f:
                pickle.dump({"lists": lists, "tables": tables, "qrels": beir.qrels, "queries": beir.queries}, f)
        with file.open("rb") as f:
            out[name] = pickle.load(f)
    return out


def rrf(lists: dict, weights: dict[str, float], k: float = RRF_K) -> dict[str, float]:
    acc: dict[str, float] = {}
    for leg, ranked in lists.items():
        for rank, (doc, _) in enumerate(ranked, 1):
            acc[doc] = acc.get(doc, 0.0) + weights.get(leg, 1.0) / (k + rank)
    return acc


def _spread(scores: list[float]) -> list[float]:
    s = np.asarray(scores, dtype=float)
    if len(s) < 2:
        return [len(s) / 100.0, 0.0, 0.0]
    sd = s.std() + 1e-9
    return [len(s) / 100.0, (s[0] - s.mean()) / sd, (s[0] - s[1]) / sd]


def query_features(lists: dict, question: str) -> list[float]:
    ft, de = lists.get("fulltext", []), lists.get("dense", [])
    top_ft, top_de = {d for d, _ in ft[:10]}, {d for d, _ in de[:10]}
    return [*_spread([s for _, s in ft]), *_spread([s for _, s in de]), len(top_ft & top_de) / 10.0,
            de[0][1] if de else 0.0, math.log1p(len(question.split()))]


def candidate_rows(d: dict, q: str) -> tuple[list[str], np.ndarray]:
    lists = d["lists"][q]
    ft, de = lists.get("fulltext", []), lists.get("dense", [])
    fs = np.array([s for _, s in ft] or [0.0])
    ds = np.array([s for _, s in de] or [0.0])
    rank_ft = {x: (i, s) for i, (x, s) in enumerate(ft, 1)}
    rank_de = {x: (i, s) for i, (x, s) in enumerate(de, 1)}
    absolute = first_scores(d["tables"][q])
    best_cos = float(ds.max()) if de else 0.0
    fused = rrf(lists, {})
    docs = list(dict.fromkeys([x for x, _ in ft] + [x for x, _ in de]))
    rows = []
    for x in docs:
        i, s = rank_ft.get(x, (0, 0.0))
        j, c = rank_de.get(x, (0, float(ds.min()) - 0.05))
        rows.append([float(i > 0), 1.0 / math.log2(1 + i) if i else 0.0,
                     (s - fs.mean()) / (fs.std() + 1e-9) if i else -1.0, s / ft[0][1] if i and ft[0][1] > 0 else 0.0,
                     float(j > 0), 1.0 / math.log2(1 + j) if j else 0.0,
                     (c - ds.mean()) / (ds.std() + 1e-9) if j else -1.0, c, c - best_cos,
                     absolute.get(x, 0.0), fused[x] * 30.0])
    return docs, np.asarray(rows)


def fit_logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float = 1.0) -> np.ndarray:
    """Weighted L2 logistic regression by Newton's method (a column of ones appended)."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    theta = np.zeros(xb.shape[1])
    ridge = l2 * np.diag(np.r_[np.ones(len(theta) - 1), 0.0])
    for _ in range(30):
        p = 1.0 / (1.0 + np.exp(-xb @ theta))
        grad = xb.T @ (w * (p - y)) + ridge @ theta
        hess = (xb * (w * p * (1 - p))[:, None]).T @ xb + ridge + 1e-6 * np.eye(len(theta))
        theta -= np.linalg.solve(hess, grad)
    return theta


def first_scores(table: list) -> dict[str, float]:
    """Each document's absolute score at its first (best-placed) unit, in served order."""
    out: dict[str, float] = {}
    for doc, score, _ in table:
        out.setdefault(doc, score)
    return out


LIFTS = (0.0, 0.1, 0.2, 0.3, 0.5, 1.0, 3.0)


def served_ndcg(d: dict, q: str, lift: float) -> float:
    """nDCG@10 of the C4 order at ``lift``: absolute score + lift x RRF value over its maximum
    (first in every leg that found something) less the meaning gap, read at the served order's k
    (:data:`electa.scoring.AGREEMENT_K`), over the candidates the engine kept."""
    absolute = first_scores(d["tables"][q])
    fused = rrf(d["lists"][q], {}, AGREEMENT_K)
    scale = max_fused({}, [leg for leg, ranked in d["lists"][q].items() if ranked], AGREEMENT_K) or 1.0
    # (the gap's best and lowest cosine are read over every document the dense leg returned, as
    # the engine reads them: the tables hold only the first ``depth`` candidates)
    gaps = meaning_gaps(d["lists"][q], {})  # (the lists are 100 deep, the tuner's default depth)
    ranked = sorted(absolute, key=lambda x: -(absolute[x] + lift * min(1.0, fused.get(x, 0.0) / scale) - gaps.get(x, 0.0)))
    if lift == LIFT and ranked != list(absolute):  # (the tables hold the engine's served order)
        raise SystemExit(f"{q}: the bench's C4 order at the served lift is not the engine's; fix served_ndcg()")
    return ndcg_at(ranked, d["qrels"][q])


# (agreement k, lift, meaning-gap weight, margin), the served cell first: from the served lift to
# near-plain RRF and from the served gap to one where the dense leg's meaning rules (values picked
# after sweeping these sets in-sample: the grid is not blind, only each held-out set's cells are).
CELLS = ((AGREEMENT_K, LIFT, GAP_WEIGHT, GAP_MARGIN),
         *((k, lift, weight, margin) for k in (10.0, 30.0) for lift in (0.4, 1.0, 20.0) for weight in (0.25, 1.0, 3.0)
           for margin in (0.0, 0.05) if (k, lift, weight, margin) != (AGREEMENT_K, LIFT, GAP_WEIGHT, GAP_MARGIN)))


def cell_order(d: dict, q: str, cell: tuple[float, float, float, float]) -> list[str]:
    """The C4 order at one cell of :data:`CELLS` of the candidates the engine kept, the gap read
    as the engine reads it (:func:`electa.eval.tuning.meaning_gaps`) at the cell's weight and margin."""
    k, lift, weight, margin = cell
    lists = d["lists"][q]
    absolute = first_scores(d["tables"][q])
    fused = rrf(lists, {}, k)
    scale = max_fused({}, [leg for leg, ranked in lists.items() if ranked], k) or 1.0
    gaps = meaning_gaps(lists, {}, weight, margin)
    return sorted(absolute, key=lambda x: -(absolute[x] + lift * min(1.0, fused.get(x, 0.0) / scale) - gaps.get(x, 0.0)))


def ridge(x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float = 1.0) -> np.ndarray:
    """Weighted ridge regression of each column of ``y`` on ``x`` (a column of ones appended, not penalised)."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    penalty = l2 * np.diag(np.r_[np.ones(x.shape[1]), 0.0])
    return np.linalg.solve(xb.T @ (xb * w[:, None]) + penalty, xb.T @ (y * w[:, None]))


def convex(lists: dict, alpha: float, norm: str) -> dict[str, float]:
    """``alpha`` x dense + (1 - ``alpha``) x full text, each leg's scores normalised within its
    list by ``norm`` (``mm``: min-max; ``z``: z-score); a candidate a leg missed gets that leg's
    lowest normalised score."""
    acc: dict[str, float] = {}
    parts = []
    for leg, share in (("dense", alpha), ("fulltext", 1.0 - alpha)):
        ranked = lists.get(leg, [])
        if not ranked:
            continue
        s = np.array([v for _, v in ranked], dtype=float)
        n = (s - s.min()) / (s.max() - s.min() + 1e-9) if norm == "mm" else (s - s.mean()) / (s.std() + 1e-9)
        parts.append((share, dict(zip((x for x, _ in ranked), n, strict=True)), float(n.min())))
    docs = {x for _, scores, _ in parts for x in scores}
    for x in docs:
        acc[x] = sum(share * scores.get(x, low) for share, scores, low in parts)
    return acc


ALPHAS = tuple(round(a, 1) for a in np.linspace(0.0, 1.0, 11))
BASES, SLOPES = (0.5, 0.6, 0.7), (0.0, 5.0, 10.0, 15.0, 20.0)
SAMPLES = (50, 200, 1000)


def confirmation(d: dict, qids: list[str] | None = None) -> float:
    """How much more often the dense leg's first hit is in the full-text leg's first ten than
    the other way round, over the questions ``qids`` (default: every question of the set) with
    both lists (no labels read)."""
    dense_confirmed = full_text_confirmed = n = 0
    for lists in (d["lists"][q] for q in (qids if qids is not None else d["lists"])):
        ft, de = [x for x, _ in lists.get("fulltext", [])], [x for x, _ in lists.get("dense", [])]
        if ft and de:
            n += 1
            dense_confirmed += de[0] in ft[:10]
            full_text_confirmed += ft[0] in de[:10]
    return (dense_confirmed - full_text_confirmed) / max(n, 1)


def confirmed_share(base: float, slope: float, confirm: float) -> float:
    return float(np.clip(round(base + slope * confirm, 2), 0.0, 1.0))


def labelled(d: dict) -> list[str]:
    return [q for q in sorted(d["lists"]) if any(g > 0 for g in d["qrels"].get(q, {}).values())]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "electa" / "fusion-transfer")
    args = ap.parse_args()
    sets = collect(args.data, args.cache)
    names = list(sets)
    per_query: dict[str, tuple] = {}
    for name in names:
        d = sets[name]
        qs = labelled(d)
        curves = []
        for q in qs:
            rel = d["qrels"][q]
            curves.append([ndcg_at(sorted(acc, key=lambda x, a=acc: -a[x]), rel)
                           for acc in (rrf(d["lists"][q], {"dense": 2 * w, "fulltext": 2 * (1 - w)}) for w in GRID)])
        per_query[name] = (qs, np.array([query_features(d["lists"][q], d["queries"][q]) for q in qs]), np.array(curves),
                           [candidate_rows(d, q) for q in qs])
    # The C4 lift (score + lift x normalised RRF), each value on every set: the lift a held-out
    # set is served with is the one best on average over the other sets.
    lift_curves: dict[str, dict[float, float]] = {}
    for name in names:
        d = sets[name]
        lift_curves[name] = {lift: float(np.mean([served_ndcg(d, q, lift) for q in per_query[name][0]])) for lift in LIFTS}
    chosen_lifts: dict[str, float] = {}
    for name in names:  # (the tables hold the engine's served order)
        if any(cell_order(sets[name], q, CELLS[0]) != list(first_scores(sets[name]["tables"][q])) for q in per_query[name][0]):
            raise SystemExit(f"{name}: the served cell of CELLS does not give the engine's order; fix cell_order()")
    cell_table = {name: np.array([[ndcg_at(cell_order(sets[name], q, cell), sets[name]["qrels"][q]) for cell in CELLS]
                                  for q in per_query[name][0]]) for name in names}
    best_cell = {name: int(cell_table[name].mean(0).argmax()) for name in names}
    offered: dict[str, list[int]] = {}
    picked: dict[str, np.ndarray] = {}
    convex_curves = {(name, norm): {a: float(np.mean([ndcg_at(sorted(acc, key=lambda x, c=acc: -c[x]), sets[name]["qrels"][q])
                                                      for q in per_query[name][0]
                                                      for acc in (convex(sets[name]["lists"][q], a, norm),)]))
                                    for a in ALPHAS}
                     for name in names for norm in ("mm", "z")}
    chosen_alphas: dict[str, list[float]] = {}
    confirm = {name: confirmation(sets[name]) for name in names}
    convex_at: dict[tuple[str, float], float] = {}

    def convex_z(name: str, share: float) -> float:
        if (name, share) not in convex_at:
            d = sets[name]
            convex_at[(name, share)] = float(np.mean([
                ndcg_at(sorted(acc, key=lambda x, c=acc: -c[x]), d["qrels"][q])
                for q in per_query[name][0] for acc in (convex(d["lists"][q], share, "z"),)]))
        return convex_at[(name, share)]

    confirmed: dict[str, tuple[float, float, float]] = {}
    header = [f"served (lift {LIFT:g})", "served, lift 0.3", "served, lift from the others", "fused", "fulltext", "dense",
              "RRF, dense weight from the others", "convex, min-max", "convex, z", "convex z, share from confirmation",
              "adaptive weights (LR)", "cell per question (ridge)", "pointwise LR", "lambdarank"]
    print("| held-out set | queries | " + " | ".join(header) + " |")
    print("|---" * (len(header) + 2) + "|")
    for held in names:
        train = [n for n in names if n != held]
        qs, xq, curves, cands = per_query[held]
        d = sets[held]
        rows: dict[str, float] = {}
        served = [served_ndcg(d, q, LIFT) for q in qs]  # (the tables' order, checked against the bench's formula)
        lifted = [served_ndcg(d, q, 0.3) for q in qs]
        rows[header[0]], rows["served, lift 0.3"] = float(np.mean(served)), float(np.mean(lifted))
        chosen = max(LIFTS, key=lambda lift: np.mean([lift_curves[n][lift] for n in train]))
        rows["served, lift from the others"] = lift_curves[held][chosen]
        chosen_lifts[held] = chosen
        rows["fused"] = curves[:, 5].mean()
        share = max(range(len(GRID)), key=lambda i: np.mean([per_query[n][2][:, i].mean() for n in train]))
        rows["RRF, dense weight from the others"] = curves[:, share].mean()
        chosen_alphas[held] = [float(GRID[share])]
        for norm, column in (("mm", "convex, min-max"), ("z", "convex, z")):
            alpha = max(ALPHAS, key=lambda a, norm=norm: np.mean([convex_curves[(n, norm)][a] for n in train]))
            rows[column] = convex_curves[(held, norm)][alpha]
            chosen_alphas[held].append(alpha)
        base, slope = max(((b, c) for b in BASES for c in SLOPES), key=lambda bc: np.mean(
            [convex_z(n, confirmed_share(*bc, confirm[n])) for n in train]))
        confirmed[held] = (base, slope, confirmed_share(base, slope, confirm[held]))
        rows["convex z, share from confirmation"] = convex_z(held, confirmed[held][2])
        for leg in ("fulltext", "dense"):  # each leg's own list: nothing of the other leg pads it
            rows[leg] = float(np.mean([ndcg_at([x for x, _ in d["lists"][q].get(leg, [])], d["qrels"][q]) for q in qs]))
        # Adaptive weights: P(dense beats full text) from query features, weighted by how much it matters.
        x = np.vstack([per_query[n][1] for n in train])
        g = np.vstack([per_query[n][2] for n in train])
        share = np.concatenate([np.full(len(per_query[n][0]), 1.0 / len(per_query[n][0])) for n in train])
        mu, sd = x.mean(0), x.std(0) + 1e-9
        theta = fit_logistic((x - mu) / sd, (g[:, 10] > g[:, 0]).astype(float), np.abs(g[:, 10] - g[:, 0]) * share * len(x))
        w = 1.0 / (1.0 + np.exp(-(np.hstack([(xq - mu) / sd, np.ones((len(xq), 1))]) @ theta)))
        pos = np.clip(w * 10, 0, 10)
        lo = np.minimum(np.floor(pos).astype(int), 9)
        rows["adaptive weights (LR)"] = float(np.mean(curves[np.arange(len(w)), lo] * (1 - (pos - lo))
                                                      + curves[np.arange(len(w)), lo + 1] * (pos - lo)))
        # A cell per question, from the other sets' questions (each set weighing the same).
        def squared(x: np.ndarray) -> np.ndarray:
            return np.hstack([x, x ** 2])

        xs = np.vstack([squared(per_query[n][1]) for n in train])
        smu, ssd = xs.mean(0), xs.std(0) + 1e-9
        each = np.concatenate([np.full(len(per_query[n][0]), 1.0 / len(per_query[n][0])) for n in train])
        offered[held] = [0, *sorted({best_cell[n] for n in train} - {0})]
        coef = ridge((xs - smu) / ssd, np.vstack([cell_table[n][:, offered[held]] - cell_table[n][:, :1] for n in train]),
                     each * len(xs) / len(train))
        predicted = np.hstack([(squared(xq) - smu) / ssd, np.ones((len(xq), 1))]) @ coef
        predicted[:, 0] = 0.0  # (the served cell: no gain over itself)
        choice = np.asarray(offered[held])[predicted.argmax(1)]
        rows["cell per question (ridge)"] = float(cell_table[held][np.arange(len(qs)), choice].mean())
        picked[held] = np.bincount(predicted.argmax(1), minlength=len(offered[held]))
        # Candidate models on scale-free features.
        cx = np.vstack([f for n in train for _, f in per_query[n][3]])
        cy = np.concatenate([[1.0 if sets[n]["qrels"][q].get(doc, 0) > 0 else 0.0 for doc in docs]
                             for n in train for q, (docs, _) in zip(per_query[n][0], per_query[n][3], strict=True)])
        cw = np.concatenate([np.full(len(docs), 1.0 / len(per_query[n][0])) for n in train for docs, _ in per_query[n][3]])
        cmu, csd = cx.mean(0), cx.std(0) + 1e-9
        theta = fit_logistic((cx - cmu) / csd, cy, cw * len(cy) / cw.sum())
        rows["pointwise LR"] = float(np.mean([
            ndcg_at([docs[i] for i in np.argsort(-(np.hstack([(f - cmu) / csd, np.ones((len(f), 1))]) @ theta), kind="stable")],
                    d["qrels"][q]) for q, (docs, f) in zip(qs, cands, strict=True)]))
        try:
            import lightgbm as lgb
        except ImportError:
            rows["lambdarank"] = float("nan")
        else:
            groups = [len(docs) for n in train for docs, _ in per_query[n][3]]
            weights = np.repeat([1.0 / len(per_query[n][0]) for n in train for _ in per_query[n][3]], groups)
            ds = lgb.Dataset(cx, cy, group=groups, weight=weights * len(weights) / weights.sum())
            model = lgb.train({"objective": "lambdarank", "learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 50,
                               "feature_fraction": 0.8, "lambdarank_truncation_level": 20, "seed": 1, "verbose": -1,
                               "num_threads": 2}, ds, 200)
            rows["lambdarank"] = float(np.mean([
                ndcg_at([docs[i] for i in np.argsort(-model.predict(f), kind="stable")], d["qrels"][q])
                for q, (docs, f) in zip(qs, cands, strict=True)]))
        best = max(rows["fused"], rows["fulltext"], rows["dense"])
        cells = [f"**{rows[h]:.4f}**" if rows[h] >= best else f"{rows[h]:.4f}" for h in header]
        print(f"| {held} | {len(qs)} | " + " | ".join(cells) + " |", flush=True)
    print("\nbold: at least the best of fused and each leg alone on that set")
    print("\nCells of the served formula (k, lift, gap weight, margin): each set's best in-sample; held out, the cells "
          "offered (the served one and the other sets' best), each one's nDCG@10 on the set, how many questions the "
          "ridge gave it, and an oracle picking each question's best offered cell:")
    for name in names:
        table = cell_table[name]
        print(f"  {name}: best {CELLS[best_cell[name]]} {table[:, best_cell[name]].mean():.4f}; offered "
              + ", ".join(f"{CELLS[c]} {table[:, c].mean():.4f} ({n})" for c, n in zip(offered[name], picked[name], strict=True))
              + f"; oracle {table[:, offered[name]].max(1).mean():.4f}")
    print("lift chosen on the other sets:", ", ".join(f"{n} {lift:g}" for n, lift in chosen_lifts.items()))
    print("dense share chosen on the other sets (RRF, min-max, z):",
          ", ".join(f"{n} {'/'.join(f'{a:g}' for a in alphas)}" for n, alphas in chosen_alphas.items()))
    print("confirmation (dense's first hit confirmed - full text's), base, slope and share chosen on the other sets:",
          ", ".join(f"{n} {confirm[n]:+.3f} {b:g}/{c:g}/{a:g}" for n, (b, c, a) in confirmed.items()))
    # An organisation counts its questions as they come: the share from the first few.
    print("convex z, share from confirmation counted on n random questions of the set (20 draws each; one,"
          " the whole set, where it has no more than n): share min-max, nDCG@10 mean / min")
    rng = np.random.default_rng(7)
    for n in SAMPLES:
        cells = []
        for held in names:
            pool = sorted(sets[held]["lists"])
            shares = [confirmed_share(*confirmed[held][:2], confirmation(sets[held], list(rng.choice(pool, n, replace=False))))
                      for _ in range(20)] if n < len(pool) else [confirmed[held][2]]
            got = [convex_z(held, a) for a in shares]
            cells.append(f"{held} {min(shares):g}-{max(shares):g} {np.mean(got):.4f} / {min(got):.4f}")
        print(f"  n={n}: " + "; ".join(cells), flush=True)
    for norm in ("mm", "z"):
        print(f"convex {norm} by dense share:", "; ".join(
            f"{n} " + " ".join(f"{convex_curves[(n, norm)][a]:.3f}" for a in ALPHAS) for n in names))


if __name__ == "__main__":
    sys.exit(main())
