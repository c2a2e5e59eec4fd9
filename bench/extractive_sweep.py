"""The extractive answerer's knobs, side by side on the same items, through the real ask pipeline.

    python bench/extractive_sweep.py [--xquad ../shared/data/xquad-r/en] [--limit 400]

Rows (``ExtractiveAnswerer`` keyword arguments; the first is what is served):

- ``served``: the defaults (no title term with an embedder, no relative cut, no abstention of
  its own: retrieval's floor decides when to abstain);
- ``title 0.1``: the title-stems term the lexical mode uses, also with the embedder;
- ``relative 0.8``: later sentences only when they score ≥ 0.8 × the best one;
- ``abstain < bar``: the strict reply when no sentence clears the similarity bar;
- ``bar 0.45 + abstain``: a higher bar with abstention.

Sets: the packaged support set, and XQuAD-R (first ``--limit`` questions in hash order). The
extractive answerer's docstring quotes this script's figures.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from electa.answer.extractive import ExtractiveAnswerer
from electa.config import Settings
from electa.eval.answer_sets import load_support_set, load_xquad
from electa.eval.answers import answer_engine, evaluate_answers

CONFIGS: dict[str, dict[str, Any]] = {
    "served": {},
    "title 0.1": {"title_weight": 0.1},
    "relative 0.8": {"relative": 0.8},
    "abstain < bar": {"abstain_below_bar": True},
    "bar 0.45 + abstain": {"min_similarity": 0.45, "abstain_below_bar": True},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--xquad", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data" / "xquad-r" / "en")
    parser.add_argument("--limit", type=int, default=400)
    parser.add_argument("--skip-xquad", action="store_true")
    args = parser.parse_args()
    settings = Settings()
    sets = [(load_support_set(), None)]
    if not args.skip_xquad:
        sets.append((load_xquad(args.xquad), args.limit))
    for answer_set, limit in sets:
        with answer_engine(answer_set, settings) as engine:
            answerers = []
            for name, kwargs in CONFIGS.items():
                answerer = ExtractiveAnswerer(engine.embedder if engine.index is not None else None, **kwargs)
                answerer.name = name
                answerers.append(answerer)
            report = evaluate_answers(engine, answer_set, answerers, None, limit, False, settings)
        print(report.to_markdown())


if __name__ == "__main__":
    main()
