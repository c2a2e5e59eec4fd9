"""An organisation's own dense reading (issue 14): which model reads its units and questions.

Under the default embedder chain (:mod:`electa.embedders.chain`) each unit is read by the model
of its document's language: MiniLM for English, multilingual-e5-small for the rest. That is the
``by-language`` reading, of every organisation that wrote before ``by-question`` became a new
one's default (``Settings.dense_reading``, stored with it before its first write:
:meth:`electa.engine.Engine.adopt_default_reading`). An organisation whose visitors ask in
many languages about pages in one, or whose pages mix languages, may choose ``multilingual``:
every unit of its own, English ones too, read by one model that carries a question across
languages (USE, the chain's ``crossing``), and its questions searched in that model's space
only. It trades each language's own accuracy for one space in which every language meets every
other (measured in the README's Languages section: XQuAD-R's cross-language pool, served 0.5470
with USE for all against the chain's 0.4312; SciFact train served 0.6369 with USE alone
against 0.7222).

``by-question`` keeps both: each unit read by its language's model and by USE, a question in a
language the organisation writes in searched by language (exactly as ``by-language``), one in
another language, where some of its pages are English, in USE's space
(:func:`electa.legs.dense.elsewhere`). An English help center asked in other languages needs it:
XQuAD-R's English sentences alone, asked in every language, served German questions 0.4420,
Chinese ones 0.1003 by language, 0.6664 and 0.6191 by question, English ones 0.8796 either way
(USE for all: 0.6693, 0.6216, 0.8740; ``bench/multilingual.py --corpus en``).

How it is kept: the multilingual model's vectors of that organisation's units are stored beside
the chain's, under the multilingual model's own id, in an index of their own (both kept by
reindex). The organisation's searches use that index; every other organisation's never read it,
and an index search is filtered by the caller's allowed set like any other. Switching is
:meth:`electa.engine.Engine.set_dense_reading`: the vectors are made first, then the setting
flips, then what other processes wrote meanwhile is embedded (until that pass ends, a page
written during the switch is missing from the organisation's dense leg); switching back is
instant (the vectors stay).

The reading is stored with the organisation (:meth:`electa.stores.protocol.Store.set_org_settings`,
which moves the store's generation, so every process and cache follows at its next search).
Anything fitted on an organisation's dense scores (calibration, learned rankers) records the
model they came from (:meth:`DenseReadings.model_id`), so a switch makes them stale, as a
change of model does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from types import MappingProxyType

from electa.embedders.chain import ChainEmbedder
from electa.embedders.protocol import Embedder
from electa.errors import ConfigError
from electa.stores.protocol import Store, VectorIndex
from electa.types import Caller

BY_LANGUAGE = "by-language"
MULTILINGUAL = "multilingual"
BY_QUESTION = "by-question"
READINGS = {BY_LANGUAGE: "each unit read by the model of its document's language",
            MULTILINGUAL: "every unit and question read by one model that crosses languages (USE)",
            BY_QUESTION: "each unit read both ways; a question in a language the organisation writes in is"
                         " searched by-language, one in another language (pages partly English) multilingual"
                         " (a new organisation's default)"}
# The readings that keep the multilingual model's vectors of the organisation's units.
KEEPING = frozenset({MULTILINGUAL, BY_QUESTION})


def check_reading(reading: str) -> str:
    if reading not in READINGS:
        raise ConfigError(f"unknown dense reading {reading!r}; valid: "
                          + "; ".join(f"{name} ({what})" for name, what in READINGS.items()))
    return reading


class DenseReadings:
    """The organisations that read with the multilingual model, and that model's index.

    ``open_index(embedder)`` opens a store's dense index for a model (the engine's own)."""

    def __init__(self, store: Store, embedder: Embedder | None, open_index: Callable[[Embedder], VectorIndex]) -> None:
        self.store = store
        self.chain = embedder if isinstance(embedder, ChainEmbedder) else None
        self._open_index = open_index
        self._index: VectorIndex | None = None
        self._lock = threading.Lock()
        self._read: tuple[int, Mapping[str, str]] = (-1, MappingProxyType({}))

    def readings(self, generation: int | None = None) -> Mapping[str, str]:
        """Organisation -> its stored reading, as of the store's ``generation`` (its current one
        when not given; one read of the settings per generation, which a switch moves)."""
        generation = self.store.generation if generation is None else generation
        read = self._read  # (one tuple, replaced whole: never a generation with another's set)
        if read[0] != generation:
            read = (generation, MappingProxyType({org: s["dense"] for org, s in self.store.org_settings().items()
                                                  if isinstance(s.get("dense"), str) and s["dense"] in READINGS}))
            self._read = read
        return read[1]

    def multilingual(self, generation: int | None = None) -> frozenset[str]:
        """The organisations whose units keep the multilingual model's vectors (reading
        ``multilingual`` or ``by-question``)."""
        return frozenset(org for org, reading in self.readings(generation).items() if reading in KEEPING)

    def reading(self, org: str, generation: int | None = None) -> str:
        """``org``'s reading (``by-language`` where none is stored)."""
        return self.readings(generation).get(org, BY_LANGUAGE)

    @property
    def model(self) -> Embedder | None:
        """The model of organisations that read every unit with one (the chain's ``crossing``:
        USE), when the engine's embedder is a chain (else no organisation can read otherwise
        than the engine)."""
        return self.chain.crossing if self.chain is not None else None

    def model_id(self, org: str, engine_model: str | None) -> str | None:
        """The model whose scores ``org``'s dense leg gives: what a calibration or a learned
        ranker fitted on them must record (``by-question``: the engine's, marked with the
        model that reads the questions in other languages)."""
        if self.model is None:  # (no organisation reads otherwise: the settings are not read)
            return engine_model
        reading = self.reading(org)
        if reading == MULTILINGUAL:
            return self.model.model_id
        if reading == BY_QUESTION and engine_model is not None:
            return f"{engine_model}+{BY_QUESTION}:{self.model.model_id}"
        return engine_model

    def index(self) -> VectorIndex:
        """The multilingual model's index (of the units of organisations that read with it)."""
        assert self.model is not None
        with self._lock:
            if self._index is None:
                self._index = self._open_index(self.model)
            return self._index

    def own(self, caller: Caller, generation: int | None = None,
            elsewhere: bool = True) -> tuple[Embedder, VectorIndex] | None:
        """The model and index that ``caller``'s organisation searches with, when not the engine's
        (``generation``: the search's, read with its allowed set; ``elsewhere``: the question is
        in a language none of the caller's units is written in, which a ``by-question``
        organisation searches with the multilingual model)."""
        if not self.reads_own(caller, generation, elsewhere):
            return None
        assert self.model is not None
        return self.model, self.index()

    def reads_own(self, caller: Caller, generation: int | None = None, elsewhere: bool = True) -> bool:
        """Whether ``caller``'s question is read by the multilingual model (see :meth:`own`)."""
        if self.model is None:
            return False
        reading = self.reading(caller.org, generation)
        return reading == MULTILINGUAL or (reading == BY_QUESTION and elsewhere)

    def save(self) -> None:
        if self._index is not None:
            self._index.save()
