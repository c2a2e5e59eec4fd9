"""Every language a help center is written in, measured on XQuAD-R (issue 14).

    python bench/multilingual.py ../shared/data/xquad-r [--langs en,de,es,zh] [--no-pool]

1. **Language identification** (:mod:`electa.text.language`): the share of each language's
   sentences and questions read as that language.
2. **Per language**: ``electa eval`` on each ``xquad-r/<lang>`` test split in four
   configurations: every document analysed as English with the English MiniLM (the English-only
   configuration before issue 14, but with unspaced scripts cut into characters and pairs);
   each document analysed in its own language (read at ingest) with MiniLM; the same with one
   multilingual model for every unit (USE; multilingual-e5-small); with the chain (MiniLM for
   English units, e5 for the rest: :mod:`electa.embedders.chain`, the default); and with the
   chain of the release before (USE for the rest). nDCG@10 and Recall@10 of each leg, plain
   fusion and the served order.
3. **The mixed pool**: the four corpora in one store, every question of every language asked of
   it, the relevant sentences being the one that holds the answer in *each* language (XQuAD-R
   is parallel: ``de-5-2-1`` and ``en-5-2-1`` are the same sentence translated), as LAReQA
   scores its cross-language retrieval. Rows per question language and all together. Then the
   same runs with the answer in the question's own language alone relevant (its translations
   dropped, every other sentence in another language a distractor): what reading across
   languages costs a help center whose answer is in the visitor's language. ``--corpus en``:
   the pool of the English sentences alone, every language's questions asked of it (an English
   help center and its visitors).

The stores are cached like ``electa eval``'s (``~/.cache/electa/eval``); the first run of each
embeds its corpus (the pool: about 4,900 sentences).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

from electa.config import Settings
from electa.embedders.registry import create_embedder
from electa.engine import Engine
from electa.eval.beir import BeirSet, load_beir
from electa.eval.metrics import mean_metrics
from electa.eval.runner import EVAL_ORG, default_data_dir, evaluate, ingest_corpus
from electa.text.language import detect

ROWS = [("fulltext", "full text"), ("dense", "dense"), ("fused", "fused (RRF)"), ("scored", "served")]


def identification(data: Path, langs: list[str]) -> None:
    print("| language | sentences read as it | questions read as it | most frequent other reading |")
    print("|---|---|---|---|")
    for lang in langs:
        beir = load_beir(data / lang, "test")
        docs = Counter(detect(f"{d.text}") for d in beir.corpus)
        questions = Counter(detect(q) for q in beir.queries.values())
        others = (docs + questions)
        others.pop(lang, None)
        worst = ", ".join(f"{k or 'none'} {v}" for k, v in others.most_common(2)) or "-"
        print(f"| {lang} | {docs[lang] / sum(docs.values()):.1%} of {sum(docs.values())} |"
              f" {questions[lang] / sum(questions.values()):.1%} of {sum(questions.values())} | {worst} |")


def run(beir: BeirSet, settings: Settings, subsets: dict[str, BeirSet] | None = None) -> dict[str, dict[str, dict]]:
    embedder = create_embedder(settings.embedder)
    out = {}
    with Engine.open(default_data_dir(beir, embedder.model_id, settings), settings, embedder) as engine:
        for name, part in (subsets or {"all": beir}).items():
            out[name] = evaluate(engine, part, "test", depth=100).metrics
    return out


def table(title: str, results: dict[str, dict[str, dict[str, dict]]]) -> None:
    """``results[configuration][set]`` = an eval's metrics."""
    print(f"\n{title}\n")
    sets = list(next(iter(results.values())))
    print("| set | analysis | " + " | ".join(f"{label} nDCG@10 / R@10" for _, label in ROWS) + " |")
    print("|---|---|" + "---|" * len(ROWS))
    for name in sets:
        for config, by_set in results.items():
            metrics = by_set[name]
            cells = [f"{metrics[k]['ndcg@10']:.4f} / {metrics[k]['recall@10']:.4f}" if k in metrics else "-"
                     for k, _ in ROWS]
            print(f"| {name} | {config} | " + " | ".join(cells) + " |")
    sys.stdout.flush()


def by_language(runs: Path, part: BeirSet, own_only: bool = False) -> dict[str, dict[str, float]]:
    """Each run's metrics over ``part``'s questions only (its TREC file, in the engine's order).
    ``own_only``: the answer in the question's language alone is relevant, its translations are
    dropped from the ranking, and every other sentence of another language stays a distractor."""
    qrels = part.qrels
    if own_only:
        qrels = {q: {d: g for d, g in judged.items() if d.split("-", 1)[0] == q.split("-", 1)[0]}
                 for q, judged in part.qrels.items()}
    out = {}
    for key, _ in ROWS:
        path = runs / f"{key}.trec"
        if not path.exists():
            continue
        ranked: dict[str, list[str]] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            qid, _, doc, *_ = line.split()
            if qid in qrels and not (own_only and doc in part.qrels[qid] and doc not in qrels[qid]):
                ranked.setdefault(qid, []).append(doc)
        out[key] = mean_metrics({q: ranked.get(q, []) for q in qrels}, qrels)
    return out


def pool(data: Path, langs: list[str], folder: Path,
         corpus_langs: list[str] | None = None) -> tuple[BeirSet, dict[str, BeirSet]]:
    """The mixed pool as a BEIR set in ``folder``, and its questions split by language;
    ``corpus_langs``: only these languages' sentences in it (every language's questions)."""
    sets = {lang: load_beir(data / lang, "test") for lang in langs}
    corpus_langs = corpus_langs or langs
    ids = {d.ext_id for lang in corpus_langs for d in sets[lang].corpus}
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / "corpus.jsonl.gz", "wt", encoding="utf-8") as out:
        for lang in corpus_langs:
            for d in sets[lang].corpus:
                out.write(json.dumps({"_id": d.ext_id, "title": d.title, "text": d.text}, ensure_ascii=False) + "\n")
    with gzip.open(folder / "queries.jsonl.gz", "wt", encoding="utf-8") as out:
        for s in sets.values():
            for qid, text in s.queries.items():
                out.write(json.dumps({"_id": qid, "text": text}, ensure_ascii=False) + "\n")
    with open(folder / "qrels" / "test.tsv", "w", encoding="utf-8") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        for s in sets.values():
            for qid, judged in s.qrels.items():
                for doc, grade in judged.items():
                    sentence = doc.split("-", 1)[1]  # "de-5-2-1" -> "5-2-1", the same sentence in every language
                    for lang in langs:
                        if f"{lang}-{sentence}" in ids:
                            out.write(f"{qid}\t{lang}-{sentence}\t{grade}\n")
    beir = load_beir(folder, "test")
    name = f"xquad-r-pool-{'-'.join(langs)}" + (f"-in-{'-'.join(corpus_langs)}" if corpus_langs != langs else "")
    beir = BeirSet(name, beir.corpus, beir.queries, beir.qrels, beir.corpus_hash)
    by_lang = {lang: BeirSet(beir.name, [], {q: t for q, t in beir.queries.items() if q.startswith(f"{lang}-")},
                             {q: j for q, j in beir.qrels.items() if q.startswith(f"{lang}-")}, beir.corpus_hash)
               for lang in langs}
    return beir, {**by_lang, "all": BeirSet(beir.name, [], beir.queries, beir.qrels, beir.corpus_hash)}


WITHOUT_CROSSING = "own language, chain without crossing"
# The chain, the evaluation's organisation reading ``by-question`` (:mod:`electa.legs.dense_readings`).
BY_QUESTION = "own language, chain, by-question"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path, help="the xquad-r folder (one sub-folder per language)")
    parser.add_argument("--langs", default="en,de,es,zh")
    parser.add_argument("--no-pool", action="store_true")
    parser.add_argument("--pool-only", action="store_true", help="skip identification and each language alone")
    parser.add_argument("--configs", default="", help="only these configurations, ';'-separated")
    parser.add_argument("--no-identification", action="store_true")
    parser.add_argument("--corpus", default="", help="the pool holds these languages' sentences only (en: an English"
                        " help center asked in every language); default: every language of --langs")
    args = parser.parse_args()
    langs = args.langs.split(",")
    configs = {"English only (MiniLM)": Settings(language="en", embedder="minilm"),
               "own language, MiniLM": Settings(embedder="minilm"),
               "own language, USE for all": Settings(embedder="use-multilingual"),
               "own language, e5 for all": Settings(embedder="e5-multilingual"),
               "own language, chain with USE": Settings(embedder="chain-use"),
               "own language, chain": Settings(embedder="chain"),
               # (the chain's units in other languages scored by their own model: the chain before
               # issue 14's fifth part; the pool only)
               WITHOUT_CROSSING: Settings(embedder="chain"),
               BY_QUESTION: Settings(embedder="chain")}
    configs = {name: s for name, s in configs.items() if not args.configs or name in args.configs.split(";")}
    if not args.no_identification and not args.pool_only:
        print("Language identification (py3langid, langid.py's 97 languages)\n")
        identification(args.data, langs)
    if not args.pool_only:
        table("Each language alone (test split)",
              {c: {lang: run(load_beir(args.data / lang, "test"), s)["all"] for lang in langs}
               for c, s in configs.items() if c not in (WITHOUT_CROSSING, BY_QUESTION)})
    if args.no_pool:
        return
    with tempfile.TemporaryDirectory() as folder:
        corpus_langs = args.corpus.split(",") if args.corpus else None
        beir, parts = pool(args.data, langs, Path(folder), corpus_langs)
        print(f"\nThe pool: {len(beir.corpus)} sentences ({', '.join(corpus_langs or langs)}), {len(beir.queries)}"
              f" questions, {sum(len(j) for j in beir.qrels.values())} relevant (question, sentence) pairs")
        results, own = {}, {}
        for config, settings in configs.items():
            embedder = create_embedder(settings.embedder)
            with Engine.open(default_data_dir(beir, embedder.model_id, settings), settings, embedder) as engine:
                ingest_corpus(engine, beir, progress=True)
                if config == WITHOUT_CROSSING:
                    engine.dense._crossing = None  # (a measurement's switch, not a setting)
                if settings.embedder == "chain":  # (the chain's configurations share a cached store)
                    engine.set_dense_reading(EVAL_ORG, "by-question" if config == BY_QUESTION else "by-language")
                # Every question once; each language's rows from its questions' runs.
                runs = Path(folder) / "runs" / config
                report = evaluate(engine, parts["all"], "test", runs_dir=runs, depth=100)
            results[config] = {name: by_language(runs, part) for name, part in parts.items() if name != "all"}
            results[config]["all"] = report.metrics
            if not corpus_langs:  # (else a question's own language may hold no answer)
                own[config] = {name: by_language(runs, part, own_only=True) for name, part in parts.items()}
            again = by_language(runs, parts["all"])  # (the split reads the runs as the report did)
            assert all(abs(again[k]["ndcg@10"] - report.metrics[k]["ndcg@10"]) < 1e-3 for k in again), (again, report.metrics)
        table("The mixed pool (a question in any language; the answer's sentence in every language is relevant)",
              results)
        if own:
            table("The same runs, the answer in the question's language alone relevant (its translations dropped"
                  " from the ranking, every other sentence in another language a distractor)", own)


if __name__ == "__main__":
    main()
