"""Which terms should a Chinese page be indexed under? (issue 14: "character n-grams, or a
packaged segmenter: measure which is better on XQuAD-R zh")

    python bench/cjk_terms.py ../shared/data/xquad-r/zh

Chinese is written without spaces, so a tokenizer that splits on spaces and punctuation (FTS5's
unicode61, Electa before issue 14) indexes each clause as one "word" that no question repeats.
Each way of cutting the text is scored with the same BM25 (bm25s, k1 = 1.5, b = 0.75, its
defaults) over the same folded text, every question against every sentence of the corpus:

- ``runs``: each run of letters as one token (before issue 14);
- ``bigrams``: overlapping character pairs (a one-character run kept whole);
- ``characters + bigrams``: both (Lucene's CJKAnalyzer with unigrams on; Electa's choice,
  :func:`electa.text.tokens`);
- ``jieba``: jieba 0.42.1's dictionary segmentation (``lcut``), and its search mode, which adds
  the shorter words inside long ones (``lcut_for_search``).

Prints nDCG@10 and Recall@10 with the seconds taken to cut the corpus.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from pathlib import Path

import bm25s
import jieba
import regex

from electa.eval.beir import load_beir
from electa.eval.metrics import ndcg_at, recall_at
from electa.text import fold, tokens

WORD = regex.compile(r"[\p{L}\p{N}\p{M}]+")
HAN = regex.compile(r"(\p{Han}+)")


def runs(text: str) -> list[str]:
    return WORD.findall(fold(text))


def bigrams(text: str) -> list[str]:
    out: list[str] = []
    for word in runs(text):
        for piece in HAN.split(word):
            if HAN.fullmatch(piece) and len(piece) > 1:
                out.extend(a + b for a, b in itertools.pairwise(piece))
            elif piece:
                out.append(piece)
    return out


def jieba_words(text: str) -> list[str]:
    return [w for w in jieba.lcut(fold(text)) if WORD.fullmatch(w)]


def jieba_search(text: str) -> list[str]:
    return [w for w in jieba.lcut_for_search(fold(text)) if WORD.fullmatch(w)]


WAYS = {"runs (before)": runs, "bigrams": bigrams, "characters + bigrams (Electa)": tokens,
        "jieba": jieba_words, "jieba, search mode": jieba_search}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--split", default="test")
    args = parser.parse_args()
    jieba.setLogLevel(60)
    beir = load_beir(args.data, args.split)
    ids = [d.ext_id for d in beir.corpus]
    texts = [f"{d.title.replace('_', ' ')} {d.text}" for d in beir.corpus]
    print(f"{beir.name}: {len(ids)} sentences, {len(beir.queries)} questions\n")
    print("| terms | nDCG@10 | Recall@10 | seconds to cut the corpus |")
    print("|---|---|---|---|")
    for name, cut in WAYS.items():
        start = time.perf_counter()
        corpus = [cut(t) for t in texts]
        seconds = time.perf_counter() - start
        index = bm25s.BM25()
        index.index(corpus, show_progress=False)
        ndcg, recall = [], []
        for qid, question in beir.queries.items():
            words = [w for w in cut(question) if w in index.vocab_dict]
            ranked: list[str] = []
            if words:
                found, _ = index.retrieve([words], k=10, show_progress=False)
                ranked = [ids[i] for i in found[0]]
            ndcg.append(ndcg_at(ranked, beir.qrels[qid], 10))
            recall.append(recall_at(ranked, beir.qrels[qid], 10))
        print(f"| {name} | {statistics.fmean(ndcg):.4f} | {statistics.fmean(recall):.4f} | {seconds:.1f} |")


if __name__ == "__main__":
    main()
