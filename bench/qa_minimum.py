"""Which curated pairs earn the 0.85 Q&A minimum (SPEC C3), measured on an agent's golden set.

    python bench/qa_minimum.py                      # the packaged help center, as tallyo/web
    python bench/qa_minimum.py --data DIR --agent ORG/AGENT
    python bench/qa_minimum.py --xquad ../shared/data/xquad-r/de   # a help center in another language
    python bench/qa_minimum.py --stackfaq ../shared/data/stackfaq  # curated pairs asked in other words

With ``--xquad`` the help center is an XQuAD-R language: each paragraph a page (its Wikipedia
article's title, the whole paragraph, the same in every language) and every question a curated
pair whose answer is the sentence that holds it, pointing to its paragraph's page. A paragraph
has about five questions: left out, a question's own pair leaves its paragraph's other pairs and
the page itself to be found, and every other paragraph's pairs stand for "another topic's pair".
Over half of a language's questions (614 to 683 of 1,190) share their answer sentence with
another question of the paragraph, so with the own pair left out the very answer is often still
a pair: the column with the page's pairs all left out is the one that asks the rule about a
question the pairs do not cover. XQuAD-R's titles are the English article's in every language,
five paragraphs or so to a title.
The dense leg reads each page and pair in its own language (the default chain: MiniLM for
English, multilingual e5 for the others), so this is where the rule's second opinion, the
dense leg's, may be missing for a reason other than the question.

With ``--stackfaq`` every thread is a page and a curated pair at one URL and the golden
questions are the set's rephrasings (:func:`stackfaq_kb`): no question is a pair's own, so the
"own pair left out" and "own pair in" columns are one search, where the pair that answers is
asked in other words, the case the minimum is for.

Each golden question (a curated pair's question, or feedback) is searched as served (judges
off, every leg at its served depth) three times: with each question's own pair left out of
every leg, as a question the pairs do not cover is searched; with every pair pointing to the
question's page left out, a question no pair covers, which its page alone answers (every pair
served first there is another page's); and with it all, as a visitor asking that very question
is. Each leg is searched :data:`REFILL` deeper and cut to its served depth after the pairs are
left out, as a store without them would fill it (until the evening of 2026-12-05 the legs were
not refilled: the Q&A leg offered 8 less those dropped). The hits are ranked by the engine under
each rule (:data:`RULES`): the rule served now (:func:`electa.scoring.qa_earns_minimum`), its
first clause alone, the two served before it on 2026-12-05, and none. For each it prints nDCG@10 by URL (each URL once
at its first place) and how many questions are served another question's pair first, a pair
whose URL is not judged relevant; with every pair to the page left out and with every pair in,
also how many questions have a relevant hit among the passages the ask pipeline reads
(:func:`passages_read`): the minimum lifts a pair over the floor.
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import electa.served_order as order_module
from electa import Access, Caller, Engine, Settings
from electa.answer.passages import ANSWER_WINDOW
from electa.cli.demo import sample_kb
from electa.eval.beir import BeirSet, load_beir
from electa.eval.golden import golden_set
from electa.eval.metrics import ndcg_at
from electa.eval.runner import served_order, without_own_pair
from electa.ingest.page import Loaded
from electa.scoring import qa_earns_minimum
from electa.types import ChunkKind, Document, Hit, LegResult, QAPair


def first_place_alone(qa_rank: int, dense_rank: int, dense_ran: bool = True, page_first: bool = False) -> bool:
    """The rule served until the morning of 2026-12-05, verbatim: the Q&A leg's first place, or dense's top three."""
    return qa_rank == 1 or (qa_rank > 1 and 0 < dense_rank <= 3)


def dense_first_three(qa_rank: int, dense_rank: int, dense_ran: bool = True, page_first: bool = False) -> bool:
    """The rule served until the evening of 2026-12-05, verbatim: dense's first three."""
    if not dense_ran:
        return qa_rank == 1
    return qa_rank > 0 and 0 < dense_rank <= 3


def dense_first_place(qa_rank: int, dense_rank: int, dense_ran: bool = True, page_first: bool = False) -> bool:
    """Dense's first place alone (the served rule less its page clause)."""
    if not dense_ran:
        return qa_rank == 1
    return qa_rank > 0 and dense_rank == 1


def never(qa_rank: int, dense_rank: int, dense_ran: bool = True, page_first: bool = False) -> bool:
    """No minimum: a pair stands on its own score, as a page does (what the minimum adds)."""
    return False


RULES: dict[str, Callable[..., bool]] = {
    "served now (dense's first place; its first three when dense's first is the pair's page)": qa_earns_minimum,
    "dense's first place alone": dense_first_place,
    "until 2026-12-05 evening (dense's first three)": dense_first_three,
    "until 2026-12-05 morning (Q&A first place alone too)": first_place_alone,
    "no minimum": never}

#: Each leg is searched this many deeper than served; :func:`served_order` cuts it back to its
#: served depth after the pairs left out are dropped, so a leg is refilled as a store without them
#: would fill it. A page
#: of XQuAD-R has about five pairs (at most 13), the demo's at most 3, so 30 leaves every cut exact.
REFILL = 30


def without_pairs_to(engine: Engine, results: Sequence[LegResult], urls: set[str]) -> list[LegResult]:
    """``results`` without any curated pair pointing to one of ``urls``, each leg's ranks closed up.
    An approximation of a search of a store without them, as :func:`without_own_pair` is: the
    words' statistics still count the pairs dropped (the legs are refilled: :data:`REFILL`)."""
    units = engine.store.units(sorted({h.unit_id for r in results for h in r.hits}))
    drop = {i for i, u in units.items() if u.kind is ChunkKind.QA and not urls.isdisjoint((u.url, *u.also_urls))}
    return [replace(r, hits=tuple(replace(x, rank=i) for i, x in enumerate((x for x in r.hits if x.unit_id not in drop), 1)))
            for r in results]



def refilled(before: Sequence[LegResult], after: Sequence[LegResult], deeper: dict[str, int]) -> list[LegResult]:
    """``after`` (a leave-out of ``before``, searched at ``deeper``), refused where a leg dropped
    more than :data:`REFILL` units from a full list (one that had more to give): its cut would then
    not be what a store without the pairs serves (:func:`served_order` cuts each leg to its
    served depth)."""
    for b, a in zip(before, after, strict=True):
        if len(b.hits) - len(a.hits) > REFILL and len(b.hits) >= deeper.get(b.leg, 0):
            raise SystemExit(f"the {b.leg} leg dropped {len(b.hits) - len(a.hits)} pairs of one question, more than"
                             f" the {REFILL} it was searched deeper: raise REFILL in bench/qa_minimum.py")
    return list(after)


def passages_read(engine: Engine, text: str, caller: Caller, hits: Sequence[Hit]) -> list[Hit]:
    """What the ask pipeline reads of ``hits`` (served order): the first ``top_passages`` that
    pass among the first :data:`~electa.answer.passages.ANSWER_WINDOW`, the floor or the title rescue
    (SPEC B6) passing them as a search does."""
    rescued = engine.rescue.rescued(text, [(h.unit_id, h.title) for h in hits if not h.passes], caller)
    return [h for h in hits[:ANSWER_WINDOW] if h.passes or h.unit_id in rescued][: engine.settings.top_passages]


def measure(engine: Engine, org: str, agent: str, golden: BeirSet | None = None) -> None:
    """The table; ``golden`` the questions (default: the agent's golden set, its pairs' own)."""
    golden = golden_set(engine.store, org, agent) if golden is None else golden
    caller = Caller(org, agent)
    deeper = {leg: depth + REFILL for leg, depth in engine.settings.depths.items()}
    searched = {q: engine.retrieve(text, caller, depths=deeper)[0] for q, text in golden.queries.items()}
    n = len(golden.queries)
    print(f"{n} golden questions of {org}/{agent}")
    print("| rule | own pair left out: nDCG@10 | another page's pair first | every pair to its page left out: nDCG@10"
          " | a pair first | a relevant passage read | own pair in: nDCG@10 | another page's pair first"
          " | a relevant passage read |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, rule in RULES.items():
        order_module.qa_earns_minimum = rule  # (the engine's own ranking under each rule)
        try:
            out = uncovered = within = 0.0
            wrong = pair_first = read_uncovered = wrong_in = read_in = 0
            for q, text in golden.queries.items():
                relevant = {u for u, g in golden.qrels[q].items() if g > 0}
                hits = served_order(engine, text, refilled(searched[q], without_own_pair(engine, text, searched[q]), deeper))
                out += ndcg_at(list(dict.fromkeys(h.url for h in hits)), golden.qrels[q], 10)
                wrong += bool(hits and hits[0].kind is ChunkKind.QA and hits[0].url not in relevant)
                # A question no pair covers: its page's pairs all left out, the page alone answers it.
                hits = served_order(engine, text, refilled(searched[q], without_pairs_to(engine, searched[q], relevant), deeper))
                uncovered += ndcg_at(list(dict.fromkeys(h.url for h in hits)), golden.qrels[q], 10)
                pair_first += bool(hits and hits[0].kind is ChunkKind.QA)
                read_uncovered += any(h.url in relevant for h in passages_read(engine, text, caller, hits))
                hits = served_order(engine, text, searched[q])
                within += ndcg_at(list(dict.fromkeys(h.url for h in hits)), golden.qrels[q], 10)
                wrong_in += bool(hits and hits[0].kind is ChunkKind.QA and hits[0].url not in relevant)
                read_in += any(h.url in relevant for h in passages_read(engine, text, caller, hits))
        finally:
            order_module.qa_earns_minimum = qa_earns_minimum
        print(f"| {name} | {out / n:.4f} | {wrong} of {n} | {uncovered / n:.4f} | {pair_first} of {n}"
              f" | {read_uncovered} of {n} | {within / n:.4f} | {wrong_in} of {n} | {read_in} of {n} |")


def xquad_kb(folder: Path, limit: int | None) -> tuple[list[Document], list[QAPair]]:
    """An XQuAD-R language as pages (one a paragraph) and curated pairs (one a question)."""
    beir = load_beir(folder, "test")  # (the questions and qrels; the paragraphs are read below)
    pages: dict[str, Document] = {}
    sentence_page: dict[str, str] = {}
    sentence_text: dict[str, str] = {}
    with gzip.open(folder / "corpus.jsonl.gz", "rt", encoding="utf-8") as lines:
        for line in lines:
            rec = json.loads(line)
            paragraph = rec["_id"].rsplit("-", 1)[0]  # "de-5-2-1": sentence 1 of paragraph "de-5-2"
            url = f"https://xquad.example/{paragraph}"
            pages.setdefault(paragraph, Document(paragraph, rec["title"].replace("_", " "), rec["metadata"]["context"], url))
            sentence_page[rec["_id"]], sentence_text[rec["_id"]] = url, rec["text"]
    pairs = []
    for q in sorted(beir.queries)[:limit]:
        sentence = next(d for d, g in beir.qrels[q].items() if g > 0)
        pairs.append(QAPair(q, beir.queries[q], sentence_text[sentence], sentence_page[sentence]))
    return list(pages.values()), pairs


def stackfaq_kb(folder: Path) -> tuple[list[Document], list[QAPair], BeirSet]:
    """StackFAQ as a help center whose curated pairs are asked in other words: each thread a page
    (its title, every answer) and a curated pair (its title as the question, its first answer),
    both at the thread's URL; the golden questions are the ``dev`` rephrasings, each relevant to
    its thread's URL. Here the minimum can earn its keep: a rephrased question whose own pair
    scores below a page of another thread."""
    beir = load_beir(folder, "dev")
    threads: dict[str, list[Document]] = {}
    for doc in beir.corpus:  # ("t12-a0": answer 0 of thread 12)
        threads.setdefault(doc.ext_id.split("-", 1)[0], []).append(doc)
    pages, pairs = [], []
    for thread, answers in threads.items():
        url, title = f"https://stackfaq.example/{thread}", answers[0].title
        pages.append(Document(thread, title, "\n\n".join(a.text for a in answers), url))
        pairs.append(QAPair(thread, title, answers[0].text, url))
    thread_of = {d.ext_id: f"https://stackfaq.example/{d.ext_id.split('-', 1)[0]}" for d in beir.corpus}
    qrels = {q: {thread_of[d]: g for d, g in rel.items()} for q, rel in beir.qrels.items()}
    golden = BeirSet("stackfaq-dev-as-pairs", [], {q: beir.queries[q] for q in qrels}, qrels, "stackfaq")
    return pages, pairs, golden


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, help="a store holding the agent (default: the packaged help center)")
    parser.add_argument("--agent", default="tallyo/web", help="ORG/AGENT (default tallyo/web)")
    parser.add_argument("--xquad", type=Path, help="an XQuAD-R language folder as the help center (above)")
    parser.add_argument("--limit", type=int, help="with --xquad: the first N questions as curated pairs")
    parser.add_argument("--stackfaq", type=Path, help="the StackFAQ folder as the help center (pairs asked in other words)")
    parser.add_argument("--pairs-only", action="store_true",
                        help="with --stackfaq: curated pairs alone, no thread pages (no page passes in a pair's place)")
    args = parser.parse_args()
    if sum(x is not None for x in (args.xquad, args.data, args.stackfaq)) > 1:
        parser.error("--xquad and --stackfaq build their own help center: give one of them or --data")
    if args.pairs_only and args.stackfaq is None:
        parser.error("--pairs-only leaves out --stackfaq's pages")
    if args.limit is not None and args.xquad is None:
        parser.error("--limit counts --xquad's questions")
    org, agent = args.agent.split("/", 1)
    settings = Settings(**{**Settings().model_dump(), "ltr": ""})
    if args.data is not None:
        with Engine.open(args.data, settings) as engine:
            measure(engine, org, agent)
        return
    with tempfile.TemporaryDirectory() as tmp, Engine.open(Path(tmp), settings) as engine:
        if args.stackfaq is not None:
            pages, pairs, golden = stackfaq_kb(args.stackfaq)
            if not args.pairs_only:
                engine.ingest_loaded("stackfaq/pages", Loaded(pages), Access(org, agent))
            engine.ingest_loaded("stackfaq/pairs", Loaded(qa_pairs=pairs), Access(org, agent))
            print(f"{args.stackfaq.name}: {0 if args.pairs_only else len(pages)} pages, {len(pairs)} curated pairs")
            measure(engine, org, agent, golden)
            return
        if args.xquad is not None:
            pages, pairs = xquad_kb(args.xquad, args.limit)
            engine.ingest_loaded("xquad/pages", Loaded(pages), Access(org, agent))
            engine.ingest_loaded("xquad/pairs", Loaded(qa_pairs=pairs), Access(org, agent))
            print(f"{args.xquad.name}: {len(pages)} pages, {len(pairs)} curated pairs")
            measure(engine, org, agent)
            return
        kb = sample_kb()
        engine.ingest([kb / "help-center", kb / "qa.csv"], Access(org, agent))
        measure(engine, org, agent)


if __name__ == "__main__":
    main()
