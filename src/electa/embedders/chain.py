"""An embedder chain (issue 14): the English model for English text, a multilingual model for
every other language, in one vector space of their two spaces side by side.

A unit's vector is its model's vector in that model's half and zeros in the other half: English
units ``[e(u); 0]``, the rest ``[0; m(u)]``. A question's vector is both models' vectors side by
side, ``[e(q); m(q)]``, so its inner product with a unit is the cosine of the one model that
read the unit: English pages are compared by the English model (MiniLM: StackFAQ dev:tune
dense nDCG@10 0.973 against multilingual-e5-small's 0.900, USE's 0.814), every other page by
the multilingual one (e5; XQuAD-R served de 0.857 and zh 0.852 against 0.735 and 0.374 with
MiniLM and English analysis), and
an English-only help center gets exactly the English model's vectors and scores. One index,
one leg, one lineage (``model_id`` names both models), reindex as for any model.

The question's vector is not of unit length (its two halves are): every store scores by inner
product, never by a cosine that would normalise it. The two models' cosines are not on one
scale (e5 gives an unrelated pair about 0.75, MiniLM about 0.1), so each half's score is put on
MiniLM's by the multilingual model's ``score_map`` (:func:`score_map`) before the two halves'
results meet in one list (:meth:`ChainEmbedder.halves`, :meth:`ChainEmbedder.scores`), or, for a
question and a unit both in a language where the model's scale is another (Chinese, for e5), by
the map it has for that language (:func:`language_correction`). A
question in one language finds pages in another through the multilingual half (an English
question, a German page) or the English one (a German question, an English page), but neither
model scores a page in another language as it would the same page in the question's: the dense
leg scores the best of those again with the chain's ``crossing`` model
(:mod:`electa.legs.crossing`; measured on XQuAD-R's cross-language pool by
``bench/multilingual.py``).

Which model reads a text: its language as the ingest pipeline read it for the whole document
(:class:`LanguageRouted`), or read from the text itself (titles added by reindex, the
extractive answerer's sentences); English, and a text too short to read, go to the English
model, as :mod:`electa.text.analysis` analyses them as English.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from electa.embedders.protocol import Embedder
from electa.text.language import detect

ENGLISH = ("en", "")
# (scale, shift): a model's cosines as they are.
IDENTITY: tuple[float, float] = (1.0, 0.0)
# A half's part of a question's vector, with the map that puts its scores on the common scale.
Half = tuple[np.ndarray, tuple[float, float]]


def score_map(model: object) -> tuple[float, float]:
    """The ``(scale, shift)`` that puts ``model``'s cosines on the common scale, MiniLM's: an
    embedder's optional ``score_map`` attribute (:class:`electa.embedders.e5_multilingual.E5MultilingualEmbedder`
    has one), else the identity. Every dense score Electa reports, ranks or thresholds is
    ``scale * cosine + shift`` (monotone: one model's order is unchanged)."""
    scale, shift = getattr(model, "score_map", IDENTITY)
    return float(scale), float(shift)


def language_maps(model: object) -> dict[str, tuple[float, float]]:
    """The maps ``model`` has of its own for a question and a text both written in one language
    (ISO 639-1 -> ``(scale, shift)``), where its cosines there sit on another scale than in
    English: an embedder's optional ``language_maps`` attribute, else none."""
    return {lang: (float(scale), float(shift)) for lang, (scale, shift) in getattr(model, "language_maps", {}).items()}


def language_correction(embedder: object, lang: str) -> tuple[float, float] | None:
    """``(a, b)``: a score on the common scale of a question and a unit both written in
    ``lang`` becomes ``a * score + b``, the map ``embedder``'s model for ``lang`` has of its own
    (:func:`language_maps`) instead of its :func:`score_map`; None where it has none (English
    always: the common scale is English's). A chain's model for ``lang`` is its ``other``."""
    if lang in ENGLISH:
        return None
    model = embedder.other if isinstance(embedder, ChainEmbedder) else embedder
    own = language_maps(model).get(lang)
    if own is None:
        return None
    (scale, shift), (own_scale, own_shift) = score_map(model), own
    return own_scale / scale, own_shift - own_scale * shift / scale


def similarities(embedder: Embedder, vecs: np.ndarray, query: np.ndarray, langs: Sequence[str] | None = None,
                 asked: str = "") -> np.ndarray:
    """The scores of ``vecs`` (made by ``embedder``) for a question's vector, on the common scale;
    ``langs`` (each text's language) and ``asked`` (the question's): texts in the question's
    language scored by their model's map for it (:func:`language_correction`)."""
    if isinstance(embedder, ChainEmbedder):
        out = embedder.scores(vecs, query)
    else:
        scale, shift = score_map(embedder)
        out = (scale * (vecs @ query) + shift).astype(np.float32)
    correction = language_correction(embedder, asked)
    if correction is not None and langs is not None:
        own = np.fromiter((lang == asked for lang in langs), dtype=np.bool_, count=len(langs))
        out = np.where(own, correction[0] * out + correction[1], out).astype(np.float32)
    return out


@runtime_checkable
class LanguageRouted(Protocol):
    """An embedder that reads a text by its language when the caller knows it.

    ``embed_in(texts, langs)`` is :meth:`Embedder.embed` with each text's language (ISO 639-1,
    '' when unknown) given instead of read from the text; same shape, order and determinism.
    """

    def embed_in(self, texts: Sequence[str], langs: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def embed_query_in(self, text: str, langs: Sequence[str]) -> np.ndarray:
        """:meth:`Embedder.embed_query` for a question asked of units written in ``langs``
        only: the same inner product with each of them, computed with less."""
        ...

    def halves(self, query: np.ndarray) -> list[Half]:
        """A question's vector as the parts an index must search apart, each with the map that
        puts its scores on the common scale; a unit scores in one part only (0 in the others),
        and the parts' results merge by mapped score."""
        ...


def embed_routed(embedder: Embedder, texts: Sequence[str], langs: Sequence[str]) -> np.ndarray:
    """``texts`` embedded by ``embedder``, each by its language's model when it reads by language."""
    if isinstance(embedder, LanguageRouted):
        return embedder.embed_in(texts, langs)
    return embedder.embed(texts)


class ChainEmbedder:
    """``english`` for English text, ``other`` for the rest (see the module docstring)."""

    def __init__(self, english: Embedder, other: Embedder, crossing: Embedder | None = None) -> None:
        self.english, self.other = english, other
        # The model that carries a question across languages (USE: in XQuAD-R's pool it serves
        # 0.5470 against e5's 0.4612, though e5 reads each language's own pages better): it
        # scores the units a question crosses to (:mod:`electa.legs.crossing`), and reads every
        # unit of an organisation that reads with one model (:mod:`electa.legs.dense_readings`).
        # Not part of the chain's own vectors, nor of its id.
        self.crossing = crossing if crossing is not None else other
        self.model_id = f"chain({english.model_id}|{other.model_id})"
        self.dim = english.dim + other.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_in(texts, [detect(t) for t in texts])

    def embed_in(self, texts: Sequence[str], langs: Sequence[str]) -> np.ndarray:
        if len(texts) != len(langs):
            raise ValueError(f"{len(texts)} texts but {len(langs)} languages")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        english = [i for i, lang in enumerate(langs) if lang in ENGLISH]
        other = [i for i, lang in enumerate(langs) if lang not in ENGLISH]
        if english:
            out[english, :self.english.dim] = self.english.embed([texts[i] for i in english])
        if other:
            out[other, self.english.dim:] = self.other.embed([texts[i] for i in other])
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self._query(text, english=True, other=True)

    def embed_query_in(self, text: str, langs: Sequence[str]) -> np.ndarray:
        """The question's vector for units written in ``langs``: a half no such unit fills is
        left at zero, not computed (an English-only help center never runs the multilingual
        model on a question, nor a Chinese-only one the English model)."""
        return self._query(text, english=any(lang in ENGLISH for lang in langs),
                           other=any(lang not in ENGLISH for lang in langs))

    def warm(self, langs: Sequence[str], crossing: bool = False) -> None:
        """Load now the models that units written in ``langs`` need (``crossing``: the crossing
        model too): a lazy one would otherwise load inside the
        first search that needs it, and spend that leg's budget (seconds for USE; a one-shot
        ``electa search`` in German lost its dense leg every time)."""
        if any(lang not in ENGLISH for lang in langs) and isinstance(self.other, LazyEmbedder):
            self.other.load()
        if crossing and isinstance(self.crossing, LazyEmbedder):
            self.crossing.load()

    def halves(self, query: np.ndarray) -> list[Half]:
        """A question's vector as one vector per half it fills, the other half zeroed, each with
        its model's :func:`score_map`. An ANN graph over the chain's units is two clusters that
        no edge of inner product joins (an English and a German unit score 0 together): a
        search with both halves walks one of them and misses the other (review: recall@10 0.72
        against exact on a synthetic 9,000 + 1,000 split). Searched half by half, each unit
        scores exactly as with the whole vector in its own half (and exactly 0 in the other),
        so the two lists merge by mapped score."""
        parts = []
        for (start, end), model in (((0, self.english.dim), self.english), ((self.english.dim, self.dim), self.other)):
            if query[start:end].any():
                part = np.zeros_like(query)
                part[start:end] = query[start:end]
                parts.append((part, score_map(model)))
        return parts or [(query, score_map(self.english))]

    def scores(self, vecs: np.ndarray, query: np.ndarray) -> np.ndarray:
        """Each unit vector's score for a question's vector, by its own half's model, on the
        common scale (:func:`score_map`)."""
        raw = vecs @ query
        other = vecs[:, self.english.dim:].any(axis=1)
        (es, eb), (os, ob) = score_map(self.english), score_map(self.other)
        return np.where(other, os * raw + ob, es * raw + eb).astype(np.float32)

    def _query(self, text: str, english: bool, other: bool) -> np.ndarray:
        out = np.zeros(self.dim, dtype=np.float32)
        if english:
            out[:self.english.dim] = self.english.embed_query(text)
        if other:
            out[self.english.dim:] = self.other.embed_query(text)
        return out


class LazyEmbedder:
    """An embedder made on its first use: a chain whose help center is all English never loads
    e5 (its engine maps its 72 MB file), nor USE unless an organisation reads with it (a new
    one's default, ``by-question``: its session takes about 0.35 s to build and 130 MB to hold,
    measured alone)."""

    def __init__(self, factory: Callable[[], Embedder], model_id: str, dim: int,
                 map_: tuple[float, float] = IDENTITY, maps: dict[str, tuple[float, float]] | None = None) -> None:
        self._factory = factory
        self.model_id, self.dim, self.score_map = model_id, dim, map_
        self.language_maps = maps or {}
        self._made: Embedder | None = None
        self._lock = threading.Lock()

    def load(self) -> None:
        self._embedder()

    def _embedder(self) -> Embedder:
        if self._made is None:
            with self._lock:
                if self._made is None:
                    made = self._factory()
                    if ((made.model_id, made.dim, score_map(made), language_maps(made))
                            != (self.model_id, self.dim, score_map(self), language_maps(self))):
                        raise ValueError(f"{made.model_id} ({made.dim}-d, map {score_map(made)}, {language_maps(made)})"
                                         f" is not the announced {self.model_id} ({self.dim}-d, map {score_map(self)},"
                                         f" {language_maps(self)})")
                    self._made = made
        return self._made

    @property
    def loaded(self) -> bool:
        return self._made is not None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._embedder().embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embedder().embed_query(text)
