"""How a question meets a page in its own language and in another, model by model (issue 14):

    python bench/crossing_scores.py ../shared/data/xquad-r [--langs en,de,es,zh] [--cache DIR]

XQuAD-R is parallel: every question and every answer sentence exists in each language. For each
ordered pair of languages (the question's, the corpus's; the same one included), the answer
sentence's score and the best score of a sentence from another article (an unrelated page) on
the common scale (MiniLM's, the floor's): the median of each, and the share at or above the
engine's default floor (0.4). MiniLM's own shares on the English pairs are the reference row.
Two models: multilingual-e5-small through its ``SCORE_MAP``, or a pair in one language
through that language's own map where it has one (``LANGUAGE_MAPS``; ``--english-map``: every
pair through ``SCORE_MAP``, as before they were fitted; ``--map de=8.4994,-7.0029``: a fitted
map tried) (the chain's model for every language but English) and the Universal Sentence
Encoder multilingual as it is (the chain's ``crossing`` model: :mod:`electa.legs.crossing`).

Then the ranking in one list of every language's sentences (the answer's sentence in each
language relevant), nDCG@10 per language of the question, for e5 alone, USE alone, e5 within
the question's language with USE across, and the same with every sentence of another language
held under each sentence of the question's own that passes the floor (a rule tried for the
crossing scorer, :mod:`electa.legs.crossing`, and dropped: with MiniLM reading English, which
passes an unrelated sentence 36% of the time here, it would hold back nearly every answer in
another language to an English question). The last two bound the engine, they are not it: every
sentence of another language is scored by USE (the engine reads the best 20 of each half
again), each language is known (the engine reads the question's), and English questions meet
English sentences through e5 (the chain's MiniLM; ``bench/multilingual.py`` measures the
engine itself). Last, the same with the answer in the question's language only and every other
language a distractor (their translations of the answer left out): what scoring across
languages costs a help center whose answer is in the visitor's own language.

Sentences are read without their titles (XQuAD-R's titles are the English article's name in
every language: they would carry a question across languages by themselves). Embeddings are
cached in ``--cache`` (e5: about 6 minutes on 2 cores the first time; USE: about one).
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
from collections.abc import Callable
from pathlib import Path

import numpy as np

from electa.embedders.e5_multilingual import LANGUAGE_MAPS, SCORE_MAP, E5MultilingualEmbedder
from electa.embedders.minilm import MiniLmOnnxEmbedder
from electa.embedders.protocol import Embedder
from electa.embedders.use_multilingual import UseMultilingualEmbedder
from electa.eval.beir import load_beir

FLOOR = 0.4
MODELS: dict[str, Callable[[], Embedder]] = {"e5": E5MultilingualEmbedder, "minilm": MiniLmOnnxEmbedder,
                                             "use": UseMultilingualEmbedder}


def _embedded(cache: Path, name: str, texts: list[str], query: bool, model: str) -> np.ndarray:
    key = hashlib.sha256(("\x00".join(texts) + str(query)).encode()).hexdigest()[:16]
    path = cache / f"{model}-{name}-{key}.npy"
    if path.exists():
        return np.load(path)
    embedder = MODELS[model]()
    vecs = np.stack([embedder.embed_query(t) for t in texts]) if query else embedder.embed(texts)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, vecs)
    return vecs


def _cell(scores: np.ndarray) -> str:
    return f"{statistics.median(scores.tolist()):6.3f} {float((scores >= FLOOR).mean()):6.1%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--langs", default="en,de,es,zh")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "electa" / "bench")
    parser.add_argument("--english-map", action="store_true", help="every e5 pair by SCORE_MAP, as before")
    parser.add_argument("--map", action="append", default=[], metavar="LANG=SCALE,SHIFT",
                        help="read that language's own pairs through this map (a fit of bench/e5_language_maps.py)")
    args = parser.parse_args()
    langs = args.langs.split(",")
    texts: dict[str, list[str]] = {}
    vecs: dict[tuple[str, str], np.ndarray] = {}  # (model, lang) -> sentence vectors
    qvecs: dict[tuple[str, str], np.ndarray] = {}  # (model, lang) -> question vectors, by xquad id order
    relevant: dict[str, dict[str, int]] = {}  # lang -> xquad id -> row of its answer sentence
    article: dict[str, np.ndarray] = {}  # lang -> each sentence's article (XQuAD's title)
    order: dict[str, list[int]] = {}
    for lang in langs:
        beir = load_beir(args.data / lang, "test")
        texts[lang] = [d.text for d in beir.corpus]
        article[lang] = np.array([d.title for d in beir.corpus])
        qids = sorted(beir.qrels)
        row = {d.ext_id: i for i, d in enumerate(beir.corpus)}
        relevant[lang] = {q.split("-", 1)[1]: row[next(iter(beir.qrels[q]))] for q in qids}
        for model in ("e5", "use"):
            vecs[(model, lang)] = _embedded(args.cache, f"{lang}-corpus", texts[lang], False, model)
            qvecs[(model, lang)] = _embedded(args.cache, f"{lang}-queries", [beir.queries[q] for q in qids], True, model)
    shared = sorted(set.intersection(*(set(relevant[lang]) for lang in langs)))
    for lang in langs:
        by_id = {q.split("-", 1)[1]: i for i, q in enumerate(sorted(f"{lang}-{x}" for x in relevant[lang]))}
        order[lang] = [by_id[x] for x in shared]
    print(f"{args.data}: {len(shared)} questions in each of {', '.join(langs)}; corpora "
          + ", ".join(f"{lang} {len(texts[lang])}" for lang in langs) + f"; floor {FLOOR}")

    def rel_and_unrelated(scores: np.ndarray, lang: str) -> tuple[np.ndarray, np.ndarray]:
        rows = [relevant[lang][x] for x in shared]
        other = article[lang][:, None] != article[lang][rows][None, :]
        return scores[rows, np.arange(len(shared))], np.where(other, scores, -np.inf).max(axis=0)

    own_maps = {} if args.english_map else dict(LANGUAGE_MAPS)
    for tried in args.map:
        lang, figures = tried.split("=")
        scale, shift = (float(x) for x in figures.split(","))
        own_maps[lang] = (scale, shift)

    def e5_map(a: str, b: str) -> tuple[float, float]:
        """A pair in one language with a map of its own is read by it, as the engine reads it."""
        return own_maps.get(a, SCORE_MAP) if a == b else SCORE_MAP

    maps = {"e5": e5_map, "use": lambda a, b: (1.0, 0.0)}
    scores: dict[tuple[str, str, str], np.ndarray] = {}  # (model, question's, corpus's) -> sentences x questions
    for model in maps:
        for a in langs:
            for b in langs:
                scale, shift = maps[model](a, b)
                scores[(model, a, b)] = scale * (vecs[(model, b)] @ qvecs[(model, a)][order[a]].T) + shift
    print(f"\nmedian and share >= {FLOOR}, question -> corpus")
    print(f"{'pair':>8}" + "".join(f" | {m + ': answer':>15} {'unrelated':>14}" for m in maps))
    if "en" in langs:
        beir = load_beir(args.data / "en", "test")
        m_docs = _embedded(args.cache, "en-corpus", texts["en"], False, "minilm")
        m_q = _embedded(args.cache, "en-queries", [beir.queries[q] for q in sorted(beir.qrels)], True, "minilm")
        rel, unrel = rel_and_unrelated(m_docs @ m_q[order["en"]].T, "en")
        print(f"{'MiniLM':>8} | {_cell(rel):>15} {_cell(unrel):>14}")
    for a in langs:
        for b in langs:
            cells = "".join(f" | {_cell(r):>15} {_cell(u):>14}" for r, u in (
                rel_and_unrelated(scores[(m, a, b)], b) for m in maps))
            print(f"{a + '->' + b:>8}{cells}")
    print("\nOne list of every language's sentences, nDCG@10 by the question's language:")
    offsets = np.cumsum([0] + [len(texts[b]) for b in langs])[:-1]
    # each question's lowest score of a sentence in its own language that passes the floor
    passing = {a: np.where(scores[("e5", a, a)] >= FLOOR, scores[("e5", a, a)], np.inf).min(axis=0) for a in langs}

    def own_first(a: str, b: str) -> np.ndarray:
        """USE across, held under every sentence in the question's language that passes the floor."""
        if a == b:
            return scores[("e5", a, a)]
        return np.minimum(scores[("use", a, b)], np.nextafter(passing[a], -np.inf)[None, :])

    readings = {"e5": lambda a, b: scores[("e5", a, b)], "USE": lambda a, b: scores[("use", a, b)],
                "e5 within, USE across": lambda a, b: scores[("e5" if a == b else "use", a, b)],
                "the same, own language first": own_first}
    for a in langs:
        line = []
        for name, read in readings.items():
            pool = np.concatenate([read(a, b) for b in langs])
            gains = []
            for j, x in enumerate(shared):
                answers = {int(off) + relevant[b][x] for off, b in zip(offsets, langs, strict=True)}
                top = np.argsort(-pool[:, j], kind="stable")[:10]
                dcg = sum(1 / np.log2(r + 2) for r, d in enumerate(top) if int(d) in answers)
                gains.append(dcg / sum(1 / np.log2(r + 2) for r in range(min(10, len(answers)))))
            line.append(f"{name} {float(np.mean(gains)):.4f}")
        print(f"  {a}: " + ", ".join(line))
    print("\nThe answer in the question's language only, every other language's sentences distractors (their"
          "\ntranslations of the answer left out): nDCG@10, and the share of questions whose first sentence is"
          f"\nin another language and scores at or above the floor ({FLOOR}):")
    for a in langs:
        line = []
        for name in ("e5", "e5 within, USE across", "the same, own language first"):
            read = readings[name]
            own = read(a, a)
            others = []
            for b in langs:
                if b != a:
                    block = read(a, b).copy()
                    block[[relevant[b][x] for x in shared], np.arange(len(shared))] = -np.inf
                    others.append(block)
            pool = np.concatenate([own, *others])
            gains, crossed = [], []
            for j, x in enumerate(shared):
                top = np.argsort(-pool[:, j], kind="stable")[:10]
                rank = next((r for r, d in enumerate(top) if int(d) == relevant[a][x]), None)
                gains.append(0.0 if rank is None else 1 / np.log2(rank + 2))
                crossed.append(int(top[0]) >= len(own) and pool[top[0], j] >= FLOOR)
            line.append(f"{name} {float(np.mean(gains)):.4f} ({float(np.mean(crossed)):.1%})")
        print(f"  {a}: " + ", ".join(line))


if __name__ == "__main__":
    main()
