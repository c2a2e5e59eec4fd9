"""Which curated pairs earn the 0.85 Q&A minimum (SPEC C3), measured on an agent's golden set.

    python bench/qa_minimum.py                      # the packaged help center, as tallyo/web
    python bench/qa_minimum.py --data DIR --agent ORG/AGENT

Each golden question (a curated pair's question, or feedback) is searched as served (judges
off, every leg at its served depth) twice: with each question's own pair left out of every leg,
as a question the pairs do not cover is searched, and with it, as a visitor asking that very
question is. The hits are ranked by the engine under each rule (:data:`RULES`): the rule served
now (:func:`electa.scoring.qa_earns_minimum`) and the one served until 2026-12-05, which also
gave the minimum to any pair the Q&A leg ranked first. For each it prints nDCG@10 by URL (each
URL once at its first place) and how many questions are served another question's pair first,
a pair whose URL is not judged relevant.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path

import electa.engine as engine_module
from electa import Access, Caller, Engine, Settings
from electa.cli.demo import sample_kb
from electa.eval.golden import golden_set
from electa.eval.metrics import ndcg_at
from electa.eval.runner import served_order, without_own_pair
from electa.scoring import qa_earns_minimum
from electa.types import ChunkKind


def first_place_alone(qa_rank: int, dense_rank: int, dense_ran: bool = True) -> bool:
    """The rule served until 2026-12-05, verbatim: the Q&A leg's first place, or dense's top three."""
    return qa_rank == 1 or (qa_rank > 1 and 0 < dense_rank <= 3)


RULES: dict[str, Callable[..., bool]] = {"served now (dense's second opinion)": qa_earns_minimum,
                                         "until 2026-12-05 (Q&A first place alone too)": first_place_alone}


def measure(engine: Engine, org: str, agent: str) -> None:
    golden = golden_set(engine.store, org, agent)
    caller = Caller(org, agent)
    searched = {q: engine.retrieve(text, caller)[0] for q, text in golden.queries.items()}
    print(f"{len(golden.queries)} golden questions of {org}/{agent}")
    print("| rule | nDCG@10, own pair left out | another pair first | nDCG@10, own pair in |")
    print("|---|---|---|---|")
    for name, rule in RULES.items():
        engine_module.qa_earns_minimum = rule  # (the engine's own ranking under each rule)
        try:
            out = within = 0.0
            wrong = 0
            for q, text in golden.queries.items():
                hits = served_order(engine, text, without_own_pair(engine, text, searched[q]))
                out += ndcg_at(list(dict.fromkeys(h.url for h in hits)), golden.qrels[q], 10)
                wrong += bool(hits and hits[0].kind is ChunkKind.QA and golden.qrels[q].get(hits[0].url, 0) <= 0)
                hits = served_order(engine, text, searched[q])
                within += ndcg_at(list(dict.fromkeys(h.url for h in hits)), golden.qrels[q], 10)
        finally:
            engine_module.qa_earns_minimum = qa_earns_minimum
        n = len(golden.queries)
        print(f"| {name} | {out / n:.4f} | {wrong} of {n} | {within / n:.4f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, help="a store holding the agent (default: the packaged help center)")
    parser.add_argument("--agent", default="tallyo/web", help="ORG/AGENT (default tallyo/web)")
    args = parser.parse_args()
    org, agent = args.agent.split("/", 1)
    settings = Settings(**{**Settings().model_dump(), "ltr": ""})
    if args.data is not None:
        with Engine.open(args.data, settings) as engine:
            measure(engine, org, agent)
        return
    with tempfile.TemporaryDirectory() as tmp, Engine.open(Path(tmp), settings) as engine:
        kb = sample_kb()
        engine.ingest([kb / "help-center", kb / "qa.csv"], Access(org, agent))
        measure(engine, org, agent)


if __name__ == "__main__":
    main()
