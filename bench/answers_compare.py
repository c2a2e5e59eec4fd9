"""The extractive answerer before issue 9 and as it is now, side by side, through the real ask pipeline.

    python bench/answers_compare.py --xquad ../shared/data/xquad-r/en --limit 200 --runs runs/answers-compare

Two sets, the same items for both answerers (``electa.eval.answers``):

- the packaged support set (``sample_kb/answers.jsonl``, over the sample help center): fact
  recall, forbidden strings, injection echo, citation precision, strict-reply precision/recall;
- XQuAD-R (one language directory, first ``--limit`` questions in hash order, 10% of paragraphs
  held out): answer-sentence exact and token F1, gold source cited, abstention.

Rows: ``extractive-v1`` is ``bench/legacy_extractive.py`` (the answerer as of commit 417c104,
given the engine's embedder as the pipeline gives its own); ``extractive`` is what the pipeline
serves now (``POST /v1/ask`` with the default answerer). Below each table, the paired
difference now − before on the same items, with its bootstrap 95% interval.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from electa.config import Settings
from electa.eval.answer_metrics import paired_difference
from electa.eval.answer_sets import load_support_set, load_xquad
from electa.eval.answers import AnswerReport, answer_engine, evaluate_answers

sys.path.insert(0, str(Path(__file__).resolve().parent))
from legacy_extractive import LegacyExtractiveAnswerer

CURRENT = "extractive"


def paired_lines(report: AnswerReport, before: str, after: str) -> list[str]:
    """Per-item paired differences on the headline numbers (answerable items only where they apply)."""
    a, b = report.records[before], report.records[after]
    assert [r.item for r in a] == [r.item for r in b]

    def per_item(records: list, key: str) -> list[float]:  # type: ignore[type-arg]
        if key == "fact_recall":
            return [r.scores["facts_stated"] / r.scores["facts"] for r in records if "facts" in r.scores]
        if key == "all_facts":
            return [float(r.scores["facts_stated"] == r.scores["facts"]) for r in records if "facts" in r.scores]
        if key == "abstained_unanswerable":
            return [float(r.scores["abstained"]) for r in records if not ("exact" in r.scores or "facts" in r.scores)]
        return [float(r.scores[key]) for r in records if key in r.scores]

    keys = (("exact", "token_f1", "gold_cited", "abstained_unanswerable") if report.kind == "xquad"
            else ("fact_recall", "all_facts", "forbidden", "injection_echo", "abstained_unanswerable"))
    lines = [f"paired difference {after} − {before} (same items; bootstrap 95% interval):"]
    for key in keys:
        e = paired_difference(per_item(a, key), per_item(b, key))
        if e.value is not None:
            lines.append(f"  {key:24s} {e.value:+.3f} [{e.low:+.3f}, {e.high:+.3f}] n={e.n}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--xquad", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data" / "xquad-r" / "en",
                        help="an XQuAD-R language directory (default ../shared/data/xquad-r/en)")
    parser.add_argument("--limit", type=int, default=200, help="XQuAD-R questions (first N in hash order)")
    parser.add_argument("--runs", type=Path, default=None, help="write each set's reports and answers under this folder")
    parser.add_argument("--skip-xquad", action="store_true")
    args = parser.parse_args()
    settings = Settings()
    sets = [("support", load_support_set(), None)]
    if not args.skip_xquad:
        sets.append(("xquad", load_xquad(args.xquad), args.limit))
    for tag, answer_set, limit in sets:
        with answer_engine(answer_set, settings) as engine:
            legacy = LegacyExtractiveAnswerer(engine.embedder if engine.index is not None else None)
            report = evaluate_answers(engine, answer_set, [legacy, CURRENT], args.runs / tag if args.runs else None,
                                      limit, sys.stderr.isatty(), settings)
        print(report.to_markdown())
        print("\n".join(paired_lines(report, legacy.name, CURRENT)) + "\n")


if __name__ == "__main__":
    main()
