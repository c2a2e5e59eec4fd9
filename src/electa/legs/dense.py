"""The dense leg: ANN over embeddings (SPEC B2)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

from electa.embedders.chain import LanguageRouted, language_correction, score_map
from electa.embedders.protocol import Embedder
from electa.legs.crossing import CrossingScorer
from electa.stores.protocol import AllowedSet, VectorIndex
from electa.text.analysis import DEFAULT_LANGUAGE, map_language, question_language, script_language, written_in
from electa.types import Caller

log = logging.getLogger(__name__)


class DenseLeg:
    """Cosine HNSW search over parent, child, whole-document and Q&A vectors.

    With no embedder (none configured, or its package missing) the leg is unavailable and
    says why; there is no silent hash "embedding" in its place (SPEC B2).
    """

    name = "dense"

    def __init__(self, embedder: Embedder | None, index: VectorIndex | None, why: str = "",
                 languages: Callable[[Caller, int], tuple[str, ...]] | None = None,
                 own: Callable[[Caller, int, bool], tuple[Embedder, VectorIndex] | None] | None = None,
                 crossing: CrossingScorer | None = None,
                 languages_of: Callable[[Sequence[int]], Mapping[int, str]] | None = None) -> None:
        self.embedder = embedder
        self.index = index
        self._why = why
        # A chain's units of another language than the question's, scored by the model that
        # carries a question across languages (:mod:`electa.legs.crossing`).
        self._crossing = crossing
        self._crossing_failed = False
        # The languages of the caller's units at a store generation: a chain of models embeds
        # the question only with the models that read them.
        self._languages = languages
        # Each unit's language (the store's), read only for a question in a language whose
        # model has a map of its own for it.
        self._languages_of = languages_of
        self._languages_failed = False
        # The model and index of an organisation that reads with its own
        # (:mod:`electa.legs.dense_readings`), or None for the engine's.
        self._own = own

    def available(self) -> bool:
        return self.embedder is not None and self.index is not None

    @property
    def why(self) -> str:
        return self._why

    def search(self, query: str, caller: Caller, allowed: AllowedSet, depth: int) -> list[tuple[int, float]]:
        if self.embedder is None or self.index is None:
            return []
        languages = self._languages(caller, allowed.generation) if self._languages is not None else None
        own = self._own(caller, allowed.generation, elsewhere(query, languages)) if self._own is not None else None
        if own is not None or not isinstance(self.embedder, LanguageRouted):
            model, index = own if own is not None else (self.embedder, self.index)
            scale, shift = score_map(model)
            hits = {uid: scale * score + shift for uid, score in index.search(model.embed_query(query), depth, allowed)}
            return _ranked(self._in_own_language(model, query, languages, [hits])[0][0], depth)
        vec = self.embedder.embed_query(query) if languages is None else self.embedder.embed_query_in(query, languages)
        halves = []
        for part, (scale, shift) in self.embedder.halves(vec):
            # A unit of the other half scores exactly 0 here (its vector is zero in this half):
            # its score is the one of its own half, whatever this half's map makes of 0.
            halves.append({uid: scale * score + shift for uid, score in self.index.search(part, depth, allowed)
                           if score != 0.0})
        halves, unit_languages = self._in_own_language(self.embedder, query, languages, halves)
        if self._crossing is not None:
            try:
                halves = self._crossing.rescore(query, halves, languages, unit_languages)
            except Exception as exc:  # (the chain's own scores still answer)
                if not self._crossing_failed:
                    log.warning("scoring units in another language than the question's failed (%s): the chain's"
                                " scores stand (said once)", exc)
                    self._crossing_failed = True
        return _ranked({uid: score for half in halves for uid, score in half.items()}, depth)

    def _in_own_language(self, model: Embedder, query: str, languages: Sequence[str] | None,
                         halves: list[dict[int, float]]) -> tuple[list[dict[int, float]], Mapping[int, str] | None]:
        """``halves`` with the units written in the question's language scored by the map
        ``model`` has of its own for that language (:func:`electa.embedders.chain.language_correction`:
        e5 scores a Chinese question and an unrelated Chinese page as high as an English answer),
        and the units' languages when they had to be read (the caller's languages decide
        without them when the caller writes in the question's language alone, or not in it).

        The index cut its ``depth`` by the model's cosine, before this: a unit of another
        language just past the cut is not weighed against the Chinese units it would now
        outrank (those of another language are read again by the crossing model, which meets
        only what the cut kept, as before)."""
        asked = map_language(query, languages)
        correction = language_correction(model, asked)
        own = written_in(languages) if languages is not None else None
        if correction is None or not any(halves) or (own is not None and asked not in own):
            return halves, None
        a, b = correction
        if own == {asked}:
            return [{uid: a * score + b for uid, score in half.items()} for half in halves], None
        if self._languages_of is None:
            return halves, None
        try:
            unit_languages = self._languages_of(sorted({uid for half in halves for uid in half}))
        except Exception as exc:  # (a store that cannot say costs the map, not the leg)
            if not self._languages_failed:
                log.warning("reading units' languages failed (%s): the model's own map scores them (said once)", exc)
                self._languages_failed = True
            return halves, None
        return [{uid: a * score + b if unit_languages.get(uid) == asked else score for uid, score in half.items()}
                for half in halves], unit_languages


def elsewhere(query: str, languages: Sequence[str] | None) -> bool:
    """Whether ``query`` is written in a language none of ``languages`` (the caller's units') is,
    while some of them are English: what a ``by-question`` organisation searches with its
    multilingual model (:mod:`electa.legs.dense_readings`). Only a language read from the
    question, or named by its script, counts: a question too short to read ("Passwort" of a
    German and French help center) is searched by language. Unknown languages: not elsewhere.

    Why English: the chain reads English units with MiniLM, which reads no other language, so a
    German question meets them through nothing; e5 reads about a hundred, and the crossing
    model scores its best units again (:mod:`electa.legs.crossing`). Measured (``python
    bench/multilingual.py ../shared/data/xquad-r --pool-only --corpus …``, served nDCG@10 of
    the questions in other languages, by language against by question): an English help center
    German 0.4420 / 0.6664, Chinese 0.1003 / 0.6191; English and German, Spanish 0.5317 /
    0.6212, Chinese 0.3404 / 0.5388; German alone, Spanish 0.6358 / 0.6041, Chinese 0.5100 /
    0.5289 (all 0.6516 / 0.6483: no gain, so such a help center stays by language). A unit read
    as no language is English here (MiniLM reads it), as :func:`written_in` counts it.

    >>> elsewhere("Wie bekomme ich mein Geld zurück?", ["en"]), elsewhere("refund", ["en"])
    (True, False)
    >>> elsewhere("Wie bekomme ich mein Geld zurück?", ["de", "en"]), elsewhere("退款多久？", ["", "de"])
    (False, True)
    >>> elsewhere("Passwort", ["de", "fr"]), elsewhere("Apple ID 密码", ["en", "zh"])
    (False, False)
    >>> elsewhere("How do I get a refund?", ["de"]), elsewhere("¿Cómo obtengo un reembolso?", ["de", "zh"])
    (False, False)
    """
    if languages is None:
        return False
    written = written_in(languages)
    if DEFAULT_LANGUAGE not in written:
        return False
    read = question_language(query) or script_language(query)
    return bool(read) and read not in written


def _ranked(scores: Mapping[int, float], depth: int) -> list[tuple[int, float]]:
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:depth]
