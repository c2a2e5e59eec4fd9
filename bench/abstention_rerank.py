"""Does a reranker's score help the calibrator abstain? (issue 10: >= 85% of unanswerable
questions pass nothing while >= 90% of answerable ones keep a relevant passage among the 4 the answer reads)

    python bench/abstention_rerank.py ../shared/data --rerank nanoranker

On StackFAQ, calibrators and floor are fitted on ``--fit`` and measured on ``--measure``
(default ``dev:tune-by-thread`` and ``dev:test-by-thread``: halves dealt by whole threads, so
no measured question's answer was fitted on; ``--fit dev:tune --measure dev:test`` are the
halves dealt by question that ``electa tune`` and ``electa eval`` use, which share most
threads, and the bench says so), twice from the same candidates: with
the legs' raw scores only (what Electa calibrates today), and with the reranker's score of each
of the top ``--depth`` candidates added as one more calibrated signal (candidates below it have
none, as in serving, where the reranker reads only the top hits). Unanswerable twins are the
held-out questions with their relevant documents removed (``electa.eval.abstention``).

Each pair is also cross-validated within ``--measure`` alone (5 folds: calibrators and floor
fitted on four fifths, measured on the fifth; by whole threads when ``--measure`` is). **That
is the clean figure for a reranker trained on ``--fit``'s questions**
(``bench/train_cross_encoder.py`` trains on ``dev:tune``, or on ``dev:tune-by-thread`` with
``--by-thread``, the model for the default halves; the bench refuses a model that trained on
``--measure``'s questions): its scores on questions it learned
from are surer than on new ones, so calibrators fitted there are too strict on new questions;
within ``--measure`` neither the reranker nor the calibrators saw the questions they are
measured on. Where the set has a test split (StackFAQ's is held out from us): ``--fit
dev:test --measure test``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from electa.calibration import COMBINED
from electa.eval.abstention import Candidate, at_given_floor, choose_floor, cross_validate, fit_leg_calibrators
from electa.eval.beir import BY_THREAD, load_qrels, shared_between, thread_groups
from electa.eval.runner import EVAL_ORG, labelled_set
from electa.judges.rerank import passage_of
from electa.judges.scorers import open_scorer
from electa.types import Caller


def tables_for(data: Path, split: str, scorer, depth: int) -> tuple[dict[str, list[Candidate]], dict, float]:
    """Each question's served candidates (top 100) with the legs' raw scores, and the
    reranker's score on the first ``depth`` of them (key ``rerank``); the reranker's seconds."""
    tables: dict[str, list[Candidate]] = {}
    spent = 0.0
    with labelled_set(data, split, None, None) as (engine, beir, _, _):
        engine.fulltext.warm()
        legs = [name for name in ("fulltext", "dense") if engine.legs[name].available()]
        for qid in sorted(beir.queries):
            text = beir.queries[qid]
            results, _ = engine.retrieve(text, Caller(EVAL_ORG), legs=legs, depths=dict.fromkeys(legs, 100))
            hits = engine.rank(text, results)[:100]
            t0 = time.perf_counter()
            scores = scorer.score(text, [passage_of(h, 2000) for h in hits[:depth]])
            spent += time.perf_counter() - t0
            rows = []
            for i, h in enumerate(hits):
                votes = {v.leg: v.raw_score for v in h.votes}
                if i < depth:
                    votes["rerank"] = scores[i]
                rows.append((h.ext_id, h.score, votes))
            tables[qid] = rows
        return tables, beir.qrels, spent


def trained_questions(spec: str, stackfaq: Path) -> set[str] | None:
    """The StackFAQ questions an ``onnx:PATH`` reranker trained on, from its ``electa.json``:
    the ids ``train_cross_encoder.py`` records, or (older models) the half its ``trained_on``
    names; an empty set for a scorer not trained here, None when a model does not say."""
    if not spec.startswith("onnx:"):
        return set()
    about = Path(spec.removeprefix("onnx:")) / "electa.json"
    meta = json.loads(about.read_text(encoding="utf-8")) if about.is_file() else {}
    ids = (meta.get("trained_questions") or {}).get("stackfaq")
    if ids is not None:
        return set(ids)
    named = (meta.get("trained_on") or {}).get("stackfaq")
    if named is None:
        return set() if "trained_on" in meta else None
    for rule, half in (("(half)", "dev:tune"), ("(thread)", "dev:tune" + BY_THREAD)):
        if named.endswith(rule):
            return set(load_qrels(stackfaq, half))
    return None


def without(tables: dict[str, list[Candidate]], leg: str) -> dict[str, list[Candidate]]:
    return {q: [(d, s, {k: v for k, v in votes.items() if k != leg}) for d, s, votes in rows]
            for q, rows in tables.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path)
    ap.add_argument("--rerank", default="nanoranker")
    ap.add_argument("--depth", type=int, default=20, help="candidates the reranker scores per question")
    ap.add_argument("--fit", default=None,
                    help="StackFAQ split the calibrators and floor are fitted on (default: the tune half dealt as"
                         " --measure is: dev:tune-by-thread, or dev:tune for dev:test)")
    ap.add_argument("--measure", default="dev:test" + BY_THREAD, help="StackFAQ split they are measured on")
    args = ap.parse_args()
    if args.fit is None:
        args.fit = "dev:tune" + (BY_THREAD if args.measure.endswith(BY_THREAD) else "")
    stackfaq = args.data / "stackfaq"
    # Halves dealt by question and by thread overlap (dev:tune and dev:test-by-thread share about
    # half their questions): a fit on one measured on the other would read its own answers.
    measured = load_qrels(stackfaq, args.measure)
    questions, pages = shared_between(load_qrels(stackfaq, args.fit), measured)
    if questions:
        raise SystemExit(f"--fit {args.fit} and --measure {args.measure} share {len(questions)} questions"
                         f" (e.g. {sorted(questions)[0]}): pair halves dealt the same way (dev:tune with dev:test,"
                         " dev:tune-by-thread with dev:test-by-thread)")
    # A reranker's scores on questions it learned from are surer than on new ones: measured
    # there, its figure says nothing about new questions.
    learned = trained_questions(args.rerank, stackfaq)
    if learned is None:
        print(f"note: {args.rerank} does not say which questions it trained on; if they include --measure's,"
              " its figures are kind")
    elif learned & set(measured):
        raise SystemExit(f"{args.rerank} trained on {len(learned & set(measured))}"
                         f" of --measure {args.measure}'s questions: measure on questions it never saw (a model"
                         " trained with --by-thread for the halves by thread, without it for dev:test)")
    if pages:
        print(f"note: --fit {args.fit} and --measure {args.measure} share {len(pages)} relevant pages: measured"
              " questions whose answers were fitted on read kinder than new ones (the halves by thread share none)")
    scorer = open_scorer(args.rerank)
    tune, tune_qrels, s1 = tables_for(stackfaq, args.fit, scorer, args.depth)
    test, test_qrels, s2 = tables_for(stackfaq, args.measure, scorer, args.depth)
    # (a split dealt by thread is cross-validated by thread too: a fold holds whole threads)
    groups = thread_groups(test_qrels) if args.measure.endswith(BY_THREAD) else None
    fit_groups = thread_groups(tune_qrels) if args.fit.endswith(BY_THREAD) else None
    pairs = sum(min(args.depth, len(r)) for r in (*tune.values(), *test.values()))
    print(f"reranker {scorer.name}: {pairs} pairs in {s1 + s2:.0f} s ({1000 * (s1 + s2) / max(pairs, 1):.1f} ms a pair)")
    print("| signals | fitted on | measured on | floor | unanswerable: nothing passes"
          " | answerable: relevant among the first 4 passing (judged read) | precision | recall |")
    print("|---|---|---|---|---|---|---|---|")
    for label, a, b in (("legs", without(tune, "rerank"), without(test, "rerank")), (f"legs + {scorer.name}", tune, test)):
        judged = sorted(q for q in a if any(g > 0 for g in tune_qrels.get(q, {}).values()))
        calibrators = fit_leg_calibrators(a, tune_qrels, judged)
        # (read as a judged search shows hits, the reranker's: every candidate, passing first, by score)
        floor = choose_floor(a, tune_qrels, judged, 0.9, groups=fit_groups, judged=True)
        row = at_given_floor(b, test_qrels, calibrators, floor, label, judged=True)
        stacked = calibrators.get(COMBINED)
        if stacked is not None and stacked.kind == "stacked":
            print(f"<!-- {label}: stacked weights " + ", ".join(f"{leg} {w:.2f}" for leg, w in stacked.weights) + " -->")
        print(f"| {label} | {args.fit} | {args.measure} | {row.floor:.2f} | {row.abstain_unanswerable:.1%}"
              f" | {row.keep_answerable:.1%} | {row.precision:.3f} | {row.recall:.3f} |", flush=True)
        # (how the calibrator weighs each signal on questions none of it was trained on)
        on_measured = fit_leg_calibrators(b, test_qrels, sorted(q for q in b if any(g > 0 for g in test_qrels[q].values())))
        stacked = on_measured.get(COMBINED)
        if stacked is not None and stacked.kind == "stacked":
            print(f"<!-- {label}: stacked weights fitted on all of {args.measure} "
                  + ", ".join(f"{leg} {w:.2f}" for leg, w in stacked.weights) + " -->")
        report = cross_validate(b, test_qrels, groups=groups, judged=True)
        cal = next(r for r in report.rows if r.rule.startswith("calibrated"))
        how = f"{report.folds}-fold CV" + (" by thread" if groups else "")
        print(f"| {label} | {how} | {args.measure} | {cal.floor:.2f} | {cal.abstain_unanswerable:.1%}"
              f" | {cal.keep_answerable:.1%} | {cal.precision:.3f} | {cal.recall:.3f} |", flush=True)


if __name__ == "__main__":
    main()
