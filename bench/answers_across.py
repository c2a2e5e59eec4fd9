"""Answers across languages: a help center written in one language asked in others, each dense reading (issue 14).

    python bench/answers_across.py ../shared/data/xquad-r --corpus en --asked en,de,es,zh --limit 200

XQuAD-R is parallel: ``de-56beb…`` asks in German what ``en-56beb…`` asks in English. The
answer set is ``electa eval --answers``'s for the ``--corpus`` language (its paragraphs, 10%
held out, gold sentences in that language: :func:`electa.eval.answer_sets.load_xquad`), each
question replaced by its translation into the asked language. Every item is asked through the
real ask pipeline with the extractive default, once per dense reading of the evaluation's
organisation (``by-language``: the chain and its crossing model; ``by-question``: a question in
a language the organisation does not write in searched, and its answer's sentences read, by
USE), on one cached store. Printed per asked language: answer-sentence exact and token F1,
gold paragraph cited, abstention; then the paired difference by-question − by-language on the
same items with its bootstrap 95% interval.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from electa.config import Settings
from electa.eval.answer_metrics import paired_difference
from electa.eval.answer_sets import AnswerSet, load_xquad
from electa.eval.answers import AnswerReport, answer_engine, evaluate_answers
from electa.eval.beir import load_beir
from electa.eval.runner import EVAL_ORG

READINGS = ("by-language", "by-question")
# Rows: the answer set's own columns (``strict_recall``: abstained where the paragraph is held
# out); paired differences: per item (``abstained``: on every item).
ROW_KEYS = ("exact", "token_f1", "gold_cited", "strict_recall")
KEYS = ("exact", "token_f1", "gold_cited", "abstained")


def asked_in(answer_set: AnswerSet, questions: dict[str, str], corpus: str, lang: str) -> AnswerSet:
    """``answer_set`` with each question replaced by its ``lang`` translation (items without one dropped)."""
    items = tuple(dataclasses.replace(item, id=f"{lang}-{item.id.split('-', 1)[1]}",
                                      question=questions[f"{lang}-{item.id.split('-', 1)[1]}"])
                  for item in answer_set.items if f"{lang}-{item.id.split('-', 1)[1]}" in questions)
    assert all(item.id.startswith(f"{corpus}-") for item in answer_set.items)
    return dataclasses.replace(answer_set, items=items)


def per_item(report: AnswerReport, label: str, key: str) -> list[float]:
    return [float(r.scores[key]) for r in report.records[label] if key in r.scores]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path, help="the xquad-r folder (one sub-folder per language)")
    parser.add_argument("--corpus", default="en", help="the language the help center is written in")
    parser.add_argument("--asked", default="en,de,es,zh", help="the languages its questions are asked in")
    parser.add_argument("--limit", type=int, default=200, help="questions per asked language (first N in hash order)")
    args = parser.parse_args()
    base = load_xquad(args.data / args.corpus)
    settings = Settings()
    rows: list[str] = []
    diffs: list[str] = []
    with answer_engine(base, settings) as engine:
        for lang in args.asked.split(","):
            questions = load_beir(args.data / lang, "test").queries
            answer_set = asked_in(base, questions, args.corpus, lang)
            reports = {}
            for reading in READINGS:
                engine.set_dense_reading(EVAL_ORG, reading)
                reports[reading] = evaluate_answers(engine, answer_set, ["extractive"], None, args.limit,
                                                    sys.stderr.isatty(), settings)
                row = reports[reading].rows["extractive"]
                cells = " | ".join(f"{row[k].value:.3f}" if row[k].value is not None else "-" for k in ROW_KEYS)
                rows.append(f"| {args.corpus} | {lang} | {reading} | {reports[reading].items} | {cells} |")
                print(rows[-1], flush=True)
            for key in KEYS:
                before = per_item(reports[READINGS[0]], "extractive", key)
                after = per_item(reports[READINGS[1]], "extractive", key)
                e = paired_difference(before, after)
                if e.value is not None:
                    diffs.append(f"  {lang} {key:12s} {e.value:+.3f} [{e.low:+.3f}, {e.high:+.3f}] n={e.n}")
    print(f"\nXQuAD-R, the {args.corpus} paragraphs (10% held out), extractive answers\n")
    print("| written in | asked in | reading | questions | " + " | ".join(ROW_KEYS) + " |")
    print("|---" * (4 + len(ROW_KEYS)) + "|")
    print("\n".join(rows))
    print("\npaired difference by-question − by-language (same items; bootstrap 95% interval):")
    print("\n".join(diffs))


if __name__ == "__main__":
    main()
