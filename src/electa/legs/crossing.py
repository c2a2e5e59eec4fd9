"""Crossing: a unit written in another language than the question's is scored by the model that
carries a question across languages (issue 14, fifth part).

The embedder chain reads each unit with the model that reads its language best (MiniLM for
English, multilingual-e5-small for the rest), and a question meets a unit through that model.
Within one language that is the best reading measured; across two it is not. On XQuAD-R
(``bench/crossing_scores.py``) e5 scores an English question's answer sentence a median 0.59
on the common scale in English, 0.17 in German and -0.18 in Chinese, so a right page ranked
first still falls under the 0.4 floor; and MiniLM, an English model, barely reads a German
question. The Universal Sentence Encoder multilingual was trained to put a question and its
answer near each other across languages: it scores those 0.40 and 0.38 (an unrelated sentence
0.29 and 0.31), and in XQuAD-R's pool of four languages it serves 0.547 against e5's 0.461.

So in each half of the chain, the :data:`CROSSING_DEPTH` best units of another language than
the question's are scored again by the chain's ``crossing`` model (USE): the cosine of the
question and the unit's title trail and text (its first :data:`MAX_CHARS` characters), on the
common scale through its ``score_map`` (USE's is the identity). The half's other units of
another language keep their model's score, held under the lowest of those read again; units
of the question's language keep their model's score (through its map for that language, where
it has one: :func:`electa.embedders.chain.language_correction`). Where the answer is in the question's
language and the other languages hold sentences on the same subject (XQuAD-R's pool with the
answer's translations left out), scoring every one of them by USE would put one before the
answer for many questions (``bench/crossing_scores.py``: nDCG@10 0.744 against e5's 0.844 for
German questions), but the engine does not pay that: it serves 0.8580 against 0.8562 without
this scorer (``bench/multilingual.py``; the lexical legs and the served order hold the answer,
and only 20 units a half are read again). Holding them under the question's own pages that
pass the floor was tried and dropped: MiniLM passes an unrelated English page so often that an
English question's German answer would almost always be held back. A question too short or
unclear to read
is read as in the caller's only language, else as English (as the chain reads it). Unit
vectors are kept in memory by unit id, :data:`KEEP` of them (a unit's text never changes under
its id: a changed page gets new units, and ids are never handed out again).

Not used by the chain with USE, whose other half is USE already, nor by an organisation that
reads every unit with USE. The engine loads the crossing model when it opens a store with pages
in any language but English, or after the write that brings the first (5-10 s: inside a search
it would spend the dense leg's budget); :class:`WhenLoaded` loads it inside a search only for a
caller with such pages that this process did not see written. A store of English pages only
never crosses: a question in another language meets its pages through MiniLM, as before,
whatever a process has loaded. A failure inside (the store, the model) is logged and leaves the
chain's scores (:class:`electa.legs.dense.DenseLeg`).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from electa.embedders.chain import ENGLISH, LazyEmbedder, score_map
from electa.embedders.protocol import Embedder
from electa.ingest.chunker import embed_text
from electa.stores.protocol import StoredUnit
from electa.text.analysis import DEFAULT_LANGUAGE, asked_language, written_in
from electa.types import Chunk

log = logging.getLogger(__name__)

# Units of another language than the question's scored again, per half; those ranked lower
# keep their model's score, held under the lowest read again (never above a unit USE read).
CROSSING_DEPTH = 20
# What USE reads of a unit: its title trail and text up to here (the reranker's 2,000
# characters; a whole-document unit can be a whole file).
MAX_CHARS = 2000
# Unit vectors kept (2 KB each for USE's 512 dimensions).
KEEP = 20_000


def _language(lang: str) -> str:
    return DEFAULT_LANGUAGE if lang in ENGLISH else lang


class WhenLoaded:
    """Whether a crossing model may be used: it is loaded, or the caller's units are written in
    a language but English and it can be loaded now (once: inside that search, over the dense
    leg's budget, for a process that did not see those pages written); a failed load is logged
    once and the chain's scores stand from then on."""

    def __init__(self, model: Embedder) -> None:
        self.model, self._failed = model, False
        self._lock = threading.Lock()

    def __call__(self, languages: Sequence[str]) -> bool:
        # A caller with English pages only never crosses, in whichever process it asks: its
        # scores do not depend on which process loaded the model.
        if all(lang in ENGLISH for lang in languages):
            return False
        if not isinstance(self.model, LazyEmbedder) or self.model.loaded:
            return True
        with self._lock:
            if self._failed:
                return False
            try:
                self.model.load()
            except Exception as exc:  # (a damaged or missing model must not cost the dense leg)
                self._failed = True
                log.warning("the crossing model %s could not be loaded (%s): questions that cross languages are"
                            " scored by the chain's own models", self.model.model_id, exc)
                return False
        return True


class CrossingScorer:
    """Scores units of another language than the question's with ``model``."""

    def __init__(self, model: Embedder, languages_of: Callable[[Sequence[int]], Mapping[int, str]],
                 units: Callable[[Sequence[int]], Mapping[int, StoredUnit]],
                 ready: Callable[[Sequence[str]], bool] = lambda languages: True) -> None:
        self.model, self._languages_of, self._units, self.ready = model, languages_of, units, ready
        self._vectors: OrderedDict[int, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def rescore(self, question: str, halves: Sequence[Mapping[int, float]],
                languages: Sequence[str] | None = None,
                unit_languages: Mapping[int, str] | None = None) -> list[dict[int, float]]:
        """Each half's scores (unit id -> score on the common scale) with its best
        :data:`CROSSING_DEPTH` units of another language than ``question``'s scored by the
        crossing model instead, and its other units of another language held under them.
        ``languages``: those the caller's units are written in, when known: a question in the
        only one of them crosses nothing and costs nothing more, and a question too short or
        unclear to read is read as in that one (else as English, as the chain reads it;
        :func:`electa.text.analysis.asked_language`). ``unit_languages``: the halves' units'
        languages, when the caller has read them already."""
        out = [dict(scores) for scores in halves]
        asked = _language(asked_language(question, languages))
        if (not any(halves) or (languages is not None and written_in(languages) <= {asked})
                or not self.ready(languages if languages is not None else ("und",))):  # (unknown: not English only)
            return out
        langs = (unit_languages if unit_languages is not None
                 else self._languages_of(sorted({uid for scores in halves for uid in scores})))
        query: np.ndarray | None = None
        scale, shift = score_map(self.model)
        for scores in out:
            ranked = [uid for uid in sorted(scores, key=lambda u: (-scores[u], u))
                      if uid in langs and _language(langs[uid]) != asked]
            read, held = ranked[:CROSSING_DEPTH], ranked[CROSSING_DEPTH:]
            if not read:
                continue
            query = self.model.embed_query(question) if query is None else query
            cosines = self._vectors_of(read) @ query
            scores.update((uid, scale * float(c) + shift) for uid, c in zip(read, cosines, strict=True))
            below = float(np.nextafter(min(scores[uid] for uid in read), -np.inf))  # (ties go by id)
            scores.update((uid, min(scores[uid], below)) for uid in held)
        return out

    def _vectors_of(self, ids: list[int]) -> np.ndarray:
        with self._lock:
            known = {uid: self._vectors[uid] for uid in ids if uid in self._vectors}
            for uid in known:
                self._vectors.move_to_end(uid)
        missing = [uid for uid in ids if uid not in known]
        if missing:
            units = self._units(missing)
            gone = [uid for uid in missing if uid not in units]  # (deleted since the search)
            texts = [embed_text(Chunk(units[uid].kind, 0, units[uid].title, units[uid].text[:MAX_CHARS]))[:MAX_CHARS]
                     for uid in missing if uid in units]
            made = iter(self.model.embed(texts) if texts else np.zeros((0, self.model.dim), dtype=np.float32))
            with self._lock:
                for uid in missing:
                    vec = np.zeros(self.model.dim, dtype=np.float32) if uid in gone else next(made)
                    known[uid] = np.asarray(vec, dtype=np.float32)
                    if uid not in gone:
                        self._vectors[uid] = known[uid]
                while len(self._vectors) > KEEP:
                    self._vectors.popitem(last=False)
        return np.stack([known[uid] for uid in ids])
