"""Do features of a hit's place in its list help the calibrator abstain? (issue 10: >= 85% of
unanswerable questions pass nothing while >= 90% of answerable ones keep a relevant passage)

    python bench/abstention_features.py ../shared/data

The calibrated cut reads each hit alone: each leg's raw score, mapped to P(relevant) by isotonic
regression, the legs stacked by a logistic regression (``electa.eval.abstention``). A question
whose answer is present may look different from its unanswerable twin (the same question, its
relevant pages removed) not in any one hit's scores but in how the best hit stands against the
rest: a clear winner, or a crowd of near-equal siblings. This bench adds such features as more
calibrated signals, each computed on the list the search serves (on the twin's list for the
twin, as a search of a store without those pages would compute them):

- ``margin``: each leg's raw score minus the best *other* candidate's of that leg (the winner's
  lead over the runner-up, a loser's distance to the winner; full text's as a share of the
  larger, BM25 having no fixed scale);
- ``position``: the hit's place in the served order (negated: first is highest);
- ``agreement``: how many legs found it;
- ``dense gap``: the dense cosine minus the question's best (−1 where dense did not find it);
- ``coverage`` and ``IDF coverage``: the share of the question's terms the hit holds (C3's
  lexical coverage, which the calibrated cut does not read), plain or weighted by each term's
  Lucene IDF over the set's units (the twin's from the same counts: a store without its pages
  would count a little differently).

StackFAQ's dev questions are searched as served (each leg at its served depth, the C4 order, the
first 20 shown: ``electa.answer.passages.ANSWER_WINDOW``), once, then every variant is fitted and
measured on the same lists three ways: fitted on ``dev:tune-by-thread`` and measured on
``dev:test-by-thread`` (threads never fitted on), 5-fold cross-validation by thread within
``dev:test-by-thread``, and 5-fold cross-validation by question over all of dev. The floor is
chosen as ``electa tune`` chooses it (cross-fitted, one standard error over 90%, the steady
rule of :func:`electa.eval.abstention.floor_for`). The ``legs`` rows are the engine's cut; they
equal ``electa eval``'s figures for the same splits.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
from idf_coverage import idf

from electa.answer.passages import ANSWER_WINDOW
from electa.calibration import COMBINED, Calibrator, calibrated_score, fit_isotonic, fit_stacked
from electa.eval.abstention import STACK_HEAD, Candidate, floor_for, keep_grid
from electa.eval.beir import thread_groups, thread_half_of
from electa.eval.folds import deal_folds
from electa.eval.runner import EVAL_ORG, candidates, labelled_set
from electa.legs.runner import DEFAULT_DEPTH
from electa.served_order import Order
from electa.text.analysis import DEFAULT_LANGUAGE, coverage_terms, credit, index_terms, joined_parts
from electa.types import Caller

Featurize = Callable[[Sequence[Candidate], str], list[Candidate]]  # (a question's rows, its id)


def served_tables(stackfaq: Path) -> tuple[dict[str, list[Candidate]], dict[str, dict[str, int]]]:
    """Each dev question's candidates as an unjudged search serves them, with the legs' raw scores
    and, apart (``COVERAGE``), each candidate's plain and IDF-weighted share of the question's terms."""
    tables: dict[str, list[Candidate]] = {}
    with labelled_set(stackfaq, "dev", None, None) as (engine, beir, settings, _):
        segments = engine.fulltext.warm()
        total = sum(seg.unit_ids.size for seg in segments)
        legs = [name for name, leg in engine.legs.items() if leg.available()]
        depths = {leg: settings.depths.get(leg, DEFAULT_DEPTH) for leg in legs}
        for q in sorted(beir.queries):
            text = beir.queries[q]
            results, _ = engine.retrieve(text, Caller(EVAL_ORG), legs=legs, depths=depths)
            hits = engine.rank(text, results, order=Order.SCORED)
            tables[q] = candidates(hits, "ext_id")
            asked = coverage_terms(text, {h.lang or DEFAULT_LANGUAGE for h in hits})
            weight = {t: idf(sum(len(p[0]) for seg in segments if (p := seg.postings(t)) is not None), total, "lucene")
                      for terms in asked.values() for t in terms}
            for h in hits:
                terms = asked[h.lang or DEFAULT_LANGUAGE]
                lang = h.lang or DEFAULT_LANGUAGE
                shared = terms.intersection(credit(frozenset(index_terms(f"{h.title} {h.text}", lang)),
                                                   joined_parts(text, lang)))  # (as the engine: rules 9)
                whole = sum(weight[t] for t in terms)
                COVERAGE.setdefault(q, {}).setdefault(h.ext_id, (
                    len(shared) / len(terms) if terms else 0.0,
                    sum(weight[t] for t in shared) / whole if whole > 0 else 0.0))
        return tables, {q: dict(beir.qrels.get(q, {})) for q in tables}


# question -> document -> (share of the question's terms it holds, the same weighted by IDF)
COVERAGE: dict[str, dict[str, tuple[float, float]]] = {}


def coverage(rows: Sequence[Candidate], q: str) -> list[Candidate]:
    return [(d, s, {**v, "coverage": COVERAGE[q][d][0]}) for d, s, v in rows]


def idf_coverage(rows: Sequence[Candidate], q: str) -> list[Candidate]:
    return [(d, s, {**v, "idf coverage": COVERAGE[q][d][1]}) for d, s, v in rows]


def margin(rows: Sequence[Candidate], q: str = "") -> list[Candidate]:
    ranked = {leg: sorted((c[2][leg] for c in rows if leg in c[2]), reverse=True)
              for leg in {leg for c in rows for leg in c[2]}}
    out = []
    for doc, score, votes in rows:
        extra = {}
        for leg, raw in votes.items():
            values = ranked[leg]
            other = values[1] if raw >= values[0] and len(values) > 1 else values[0] if raw < values[0] else None
            lead = 1.0 if other is None else raw - other if leg == "dense" else (raw - other) / max(raw, other, 1e-9)
            extra[f"{leg} margin"] = lead
        out.append((doc, score, {**votes, **extra}))
    return out


def position(rows: Sequence[Candidate], q: str = "") -> list[Candidate]:
    return [(d, s, {**v, "position": -float(i)}) for i, (d, s, v) in enumerate(rows)]


def agreement(rows: Sequence[Candidate], q: str = "") -> list[Candidate]:
    return [(d, s, {**v, "agreement": float(len(v))}) for d, s, v in rows]


def dense_gap(rows: Sequence[Candidate], q: str = "") -> list[Candidate]:
    best = max((v["dense"] for _, _, v in rows if "dense" in v), default=0.0)
    return [(d, s, {**v, "dense gap": v["dense"] - best if "dense" in v else -1.0}) for d, s, v in rows]


def every(rows: Sequence[Candidate], q: str = "") -> list[Candidate]:
    return dense_gap(agreement(position(margin(rows))))


VARIANTS: dict[str, Featurize] = {"legs": lambda rows, q: list(rows), "+ margin": margin, "+ position": position,
                                  "+ agreement": agreement, "+ dense gap": dense_gap, "+ all four": every,
                                  "+ coverage": coverage, "+ IDF coverage": idf_coverage}


class Lists:
    """Each question's served list and its twin's, both with a variant's features."""

    def __init__(self, tables: Mapping[str, Sequence[Candidate]], qrels: Mapping[str, Mapping[str, int]],
                 featurize: Featurize) -> None:
        self.qrels = qrels
        self.rel = {q: {d for d, g in qrels[q].items() if g > 0} for q in tables}
        self.answerable = {q: featurize(rows, q) for q, rows in tables.items()}
        self.twin = {q: featurize([c for c in rows if c[0] not in self.rel[q]], q) for q, rows in tables.items()}

    def fit(self, qids: Sequence[str]) -> dict[str, Calibrator]:
        """As :func:`electa.eval.abstention.fit_leg_calibrators`, the twin's head read with its own features."""
        per: dict[str, tuple[list[float], list[int]]] = {}
        for q in qids:
            for doc, _, votes in self.answerable[q]:
                for signal, raw in votes.items():
                    xs, ys = per.setdefault(signal, ([], []))
                    xs.append(raw)
                    ys.append(int(doc in self.rel[q]))
        cal = {signal: fit_isotonic(xs, ys) for signal, (xs, ys) in per.items()}
        rows, labels = [], []
        for q in qids:
            for doc, _, votes in [*self.answerable[q][:STACK_HEAD], *self.twin[q][:STACK_HEAD]]:
                rows.append({s: cal[s](raw) for s, raw in votes.items() if s in cal})
                labels.append(int(doc in self.rel[q]))
        cal[COMBINED] = fit_stacked(rows, labels)
        return cal

    def floor(self, qids: Sequence[str], groups: Mapping[str, str] | None, target: float = 0.9) -> float:
        """As :func:`electa.eval.abstention.choose_floor`: cross-fitted, one standard error over ``target``."""
        target = min(target + math.sqrt(target * (1 - target) / len(qids)), 0.999)
        parts = deal_folds(qids, 5, 7, groups, warn=False)
        kept = []
        for i, part in enumerate(parts):
            cal = self.fit([q for j, p in enumerate(parts) if j != i for q in p])
            kept.append(keep_grid(self.answerable, self.qrels, part,
                                  lambda c, cal=cal: calibrated_score(cal, c[2])))  # type: ignore[misc]
        return floor_for(np.concatenate(kept), target)

    def measure(self, qids: Sequence[str], cal: Mapping[str, Calibrator], floor: float) -> tuple[float, float]:
        """(share of twins of which none of the first 20 passes, share keeping a relevant page among
        the first 4 passing of their first 20)."""
        abstain = keep = 0
        for q in qids:
            passing = [c for c in self.answerable[q][:ANSWER_WINDOW] if calibrated_score(cal, c[2]) >= floor]
            keep += any(c[0] in self.rel[q] for c in passing[:4])
            abstain += not any(calibrated_score(cal, c[2]) >= floor for c in self.twin[q][:ANSWER_WINDOW])
        return abstain / len(qids), keep / len(qids)

    def cross_validate(self, qids: Sequence[str], groups: Mapping[str, str] | None) -> tuple[float, float]:
        abstain = keep = 0.0
        parts = deal_folds(qids, 5, 13, groups)
        for i, test in enumerate(parts):
            train = [q for j, p in enumerate(parts) if j != i for q in p]
            a, k = self.measure(test, self.fit(train), self.floor(train, groups))
            abstain, keep = abstain + a * len(test), keep + k * len(test)
        return abstain / len(qids), keep / len(qids)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path)
    args = ap.parse_args()
    tables, qrels = served_tables(args.data / "stackfaq")
    labelled = sorted(q for q in tables if any(g > 0 for g in qrels[q].values()))
    groups = thread_groups(qrels)
    tune = sorted(thread_half_of(qrels, "tune-by-thread") & set(labelled))
    test = sorted(thread_half_of(qrels, "test-by-thread") & set(labelled))
    print(f"StackFAQ dev: {len(labelled)} questions ({len(tune)} / {len(test)} by thread)\n")
    print("| signals | tune→test by thread: floor, nothing passes, kept | 5-fold CV by thread in test | 5-fold CV, dev |")
    print("|---|---|---|---|")
    for name, featurize in VARIANTS.items():
        lists = Lists(tables, qrels, featurize)
        floor = lists.floor(tune, groups)
        a, k = lists.measure(test, lists.fit(tune), floor)
        cv = lists.cross_validate(test, groups)
        dev = lists.cross_validate(labelled, None)
        print(f"| {name} | {floor:.2f}: {a:.1%} at {k:.1%} | {cv[0]:.1%} at {cv[1]:.1%} | {dev[0]:.1%} at {dev[1]:.1%} |",
              flush=True)


if __name__ == "__main__":
    main()
