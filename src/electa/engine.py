"""The engine: the one module that knows the flow (ingest -> legs -> fusion -> score -> context).

Example::

    from electa import Access, Caller, Engine
    engine = Engine.open("electa-data")
    engine.ingest(["help-center/"], Access(org="acme"))
    result = engine.search("Can I get my money back?", Caller(org="acme"))
    for hit in result.passing:
        print(hit.score, hit.title, [v.leg for v in hit.votes])
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from electa import served_order
from electa.agent_profile import AgentProfiles
from electa.answer import passages
from electa.answer.passages import answer_window, cut_passages
from electa.calibration import calibrated_score
from electa.config import Settings
from electa.embedders.chain import ENGLISH, ChainEmbedder, language_correction, language_maps
from electa.embedders.protocol import Embedder
from electa.embedders.registry import create_embedder, create_sparse_encoder, kept_model
from electa.errors import ConfigError, EmbedderUnavailable, ModelMismatchError, NotFoundError
from electa.graph.extract import create_extractor
from electa.ingest.chunker import CHUNKER_VERSION
from electa.ingest.page import Loaded
from electa.ingest.pipeline import Ingestor, IngestReport, same_source
from electa.ingest.unit_vectors import Recipe
from electa.ingest.vector_fill import adopt_vectors, embed_missing, nothing_missing, title_vectors
from electa.judges import UnavailableJudge, build_funnel
from electa.judges.agent_rerank import AgentRerankers, rerank_identity
from electa.judges.ltr import ORDER, AgentModels, FileModel, LtrJudge, Serving, fixed_model
from electa.judges.ltr_features import HitContext, url_votes
from electa.judges.personalise import PersonaliseJudge
from electa.judges.protocol import Judge
from electa.judges.rerank_cut import RerankCut, recut
from electa.legs.crossing import CrossingScorer, WhenLoaded
from electa.legs.dense import DenseLeg
from electa.legs.dense_readings import BY_LANGUAGE, BY_QUESTION, KEEPING, MULTILINGUAL, DenseReadings, check_reading
from electa.legs.fulltext import FullTextLeg, QaLeg
from electa.legs.graph import GraphLeg
from electa.legs.protocol import Leg
from electa.legs.runner import LegRunner
from electa.legs.sparse import SparseLeg
from electa.model_files import ModelFilesMark, by_content
from electa.modes import MODES, ModeContext, resolve_mode
from electa.modes.llm import LlmSteps
from electa.modes.multimodal import FIGURE_LIFT, SHOWN_LIFT
from electa.modes.protocol import MERGE_LIFT
from electa.scoring import (
    AGREEMENT_K,
    LIFT,
)
from electa.served_order import Order, ServedOrder, hit_of
from electa.stores.protocol import GraphStore, SourceOutcome, SourceRecord, SparseTermStore, Store, VectorIndex
from electa.stores.sparse_index import SparseIndex
from electa.stores.sqlite_ops import check_org_name
from electa.text import language
from electa.text.analysis import ANALYSIS
from electa.title_rescue import TitleRescue
from electa.types import (
    Access,
    AnswerEvent,
    Caller,
    Hit,
    LegResult,
    LegStatus,
    Passage,
    Person,
    SearchResult,
    Stage,
)

if TYPE_CHECKING:
    from electa.answer.answerers import Answerer
    from electa.answer.prompt import AgentProfile, Turn

log = logging.getLogger(__name__)
# Leg statuses a later request may not meet: results they shaped are not cached (a leg out on a
# worker, "unavailable", is a fact of that worker, in its cache key instead: Engine.cache_recipe).
TRANSIENT = frozenset({LegStatus.ERROR.value, LegStatus.TIMEOUT.value})


def worth_caching(reported: Mapping[str, object]) -> bool:
    """Whether a search or answer, as reported (its ``stages`` and ``legs`` as JSON), may be
    cached: not when a judge or a leg failed or ran late, since the next request, or another
    worker sharing the cache, may do better.

    >>> worth_caching({"stages": [{"failed": False}], "legs": [{"status": "ok"}, {"status": "unavailable"}]})
    True
    >>> worth_caching({"stages": [], "legs": [{"status": "timeout"}]})
    False
    """
    stages: Iterable[Mapping[str, object]] = reported.get("stages") or ()  # type: ignore[assignment]
    legs: Iterable[Mapping[str, object]] = reported.get("legs") or ()  # type: ignore[assignment]
    return not any(st.get("failed") for st in stages) and not any(leg.get("status") in TRANSIENT for leg in legs)


@dataclass(frozen=True)
class ReindexReport:
    model_id: str
    embedded: int
    seconds: float
    scanned: int = 0  # units stored before the current injection rules, scanned now
    adopted: int = 0  # English units given their vectors of a chain's English model (no model run)


class Engine:
    """Hybrid retrieval over one data directory. Open with :meth:`open`; pass it around."""

    def __init__(self, store: Store, settings: Settings, embedder: Embedder | None, why: str,
                 warm: bool = True) -> None:
        self.store = store
        self.settings = settings
        self.embedder = embedder
        # Every question is read for its language (its stop words): loaded here, not inside the
        # first search's legs, whose budgets it would spend (found by the CLI test: a one-shot
        # search timed out its full-text and Q&A legs).
        language.warm()
        self._runner = LegRunner()
        self.fulltext = FullTextLeg(store)
        self.qa = QaLeg(store)
        self.index: VectorIndex | None = None
        stored_model = store.meta("model_id")
        if embedder is not None and stored_model in (None, embedder.model_id):
            self.index = self._open_index(embedder)
        elif embedder is not None:
            why = (f"this index was built with {stored_model}, but the engine uses {embedder.model_id}:"
                   " run `electa reindex` to re-embed it")
        self.readings = DenseReadings(store, embedder if self.index is not None else None, self._open_index)
        self.dense = self._dense_leg(why)
        self._warm = warm  # (and again after each write: a write that brought a new language)
        if warm and self.index is not None and isinstance(embedder, ChainEmbedder) and self._warm_chain():
            self.readings.index()  # (opened here, not inside an organisation's first search)
        self._mismatch = why if (embedder is not None and self.index is None) else ""
        self._registered: set[str] = set()  # organisations this engine saw recorded (see _register)
        self.sparse = self._sparse_leg()
        self.legs: dict[str, Leg] = {leg.name: leg for leg in (self.fulltext, self.dense, self.qa)}
        if settings.sparse:
            self.legs["sparse"] = self.sparse
        # Units above this id had their term weights made by _written; older ones by reindex.
        self._sparse_checked = store.last_unit_id()
        # The modes' LLM steps (SPEC E5-E7): set by whoever configures an LLM answerer (the server,
        # the CLI); without one every mode runs its heuristics.
        self.mode_llm: LlmSteps | None = None
        # The knowledge graph's leg: the graph, corrective and agentic modes', not one of ``legs``.
        self.extractor = create_extractor(settings.graph or "patterns")
        self.graph = self._graph_leg()
        self._graph_checked = self._sparse_checked
        try:
            self.recipe = Recipe(settings.unit_vectors)
        except ValueError:
            raise ConfigError(f"unknown unit_vectors {settings.unit_vectors!r}; valid: "
                              f"{', '.join(r.value for r in Recipe)}") from None
        self.ordering = ServedOrder(store)  # (C1-C6, and the terms it keeps per unit)
        self.rescue = TitleRescue(store)  # (B6)
        self._vectors_checked = 0  # every unit up to this id had a vector at the last check (_written)
        self._own_checked = 0  # the same for the multilingual vectors of organisations that read with them
        self.profiles = AgentProfiles(settings, self.recipe, self.dense_model_id)
        self._stale_tunings = self.profiles.said  # (what was said of an agent's tuning, once each)
        # Stat-ed before the judges load the files (electa.model_files says why).
        self._model_files = ModelFilesMark(settings)
        self.ltr_models = AgentModels(store.agent_settings, Serving(
            embedder.model_id if embedder else None, CHUNKER_VERSION,
            tuple(sorted(n for n, leg in self.legs.items() if leg.available())), settings.rerank), self.dense_model_id)
        self.funnel = build_funnel(settings, self.ltr_models, self.ordering.hit_stems, self.hit_context)
        self.agent_rerankers = AgentRerankers(store.directory, settings)

    @classmethod
    def open(cls, path: str | Path | None = None, settings: Settings | None = None,
             embedder: Embedder | str | None = None, *, moving: bool = False, warm: bool = True) -> Engine:
        """Open (or create) the store in ``path``. ``embedder`` is an instance, a registry name,
        or None for ``settings.embedder``. A missing model leaves the dense leg out, and says so.
        ``moving``: the embedder named is the one to move the store to (``electa reindex``), even
        when the store keeps an earlier default's model. ``warm=False``: the chain's models load
        when first used, not here (they take seconds to load, and hold the first search's dense
        leg past its budget when lazy: for a caller that does not search, ``electa stats``,
        ``electa sources list``)."""
        from electa.stores.registry import open_store

        settings = settings or Settings()
        store = open_store(settings, path)
        why = ""
        instance: Embedder | None
        kept = kept_model(store.meta("model_id"))
        if moving and (embedder or settings.embedder) in ("chain", "mpnet"):
            # Moving to the chain means the chain with e5: never a silent move back to USE on a
            # machine that cannot run e5 (review).
            from electa.embedders.e5_multilingual import check_installed

            check_installed()
        if embedder is None and "embedder" not in settings.model_fields_set:
            # The default (the chain) on a store of an earlier default: keep its model.
            embedder = kept
        elif kept == "chain-use" and (embedder or settings.embedder) == "chain" and not moving:
            # "chain" named the chain with USE when this store was made: a deployment that
            # pinned it (ELECTA_EMBEDDER=chain) keeps searching, rather than every search
            # refused until a reindex that takes hours with e5 (review).
            log.warning("this store was embedded by the embedder chain with USE; it keeps that model until"
                        " `electa reindex --embedder chain` moves it to the chain with e5")
            embedder = kept
        if embedder is None or isinstance(embedder, str):
            try:
                instance = create_embedder(embedder or settings.embedder, settings.models_dir)
            except EmbedderUnavailable as exc:
                instance, why = None, str(exc)
        else:
            instance = embedder
        return cls(store, settings, instance, why, warm)

    def _sparse_leg(self) -> SparseLeg:
        """The learned-sparse leg (SPEC B3), or the reason it cannot run."""
        name = self.settings.sparse
        if not name:
            return SparseLeg(None, None, "the learned-sparse leg is off (ELECTA_SPARSE='')")
        store = self.store
        if not isinstance(store, SparseTermStore):
            return SparseLeg(None, None, "this store keeps no learned term weights")
        try:
            encoder = create_sparse_encoder(name)
        except EmbedderUnavailable as exc:
            return SparseLeg(None, None, str(exc))
        # The image is built by the first search (a command that only writes never needs it).
        index = SparseIndex(lambda seq: store.sparse_rows_after(encoder.model_id, seq), encoder.vocab)
        leg = SparseLeg(encoder, index)
        leg.recount(store)
        if leg.missing:
            log.warning("learned-sparse leg: %s", leg.why)
        return leg

    def _graph_leg(self) -> GraphLeg:
        """The knowledge-graph leg (SPEC B5), or the reason it cannot run."""
        name = self.settings.graph
        if not name:
            return GraphLeg(None, "", "the knowledge graph is off (ELECTA_GRAPH='')")
        if not isinstance(self.store, GraphStore):
            return GraphLeg(None, "", "this store keeps no knowledge graph")
        leg = GraphLeg(self.store, self.extractor.name)
        leg.recount()
        return leg

    @property
    def all_legs(self) -> dict[str, Leg]:
        """Every leg a search may name: the default ones (:attr:`legs`) and the graph's."""
        return {**self.legs, "graph": self.graph}

    def cache_recipe(self, caller: Caller | None = None, stored: Mapping[str, object] | None = None) -> str:
        """:func:`serving_recipe` of this engine's settings, which legs and judges can run on this
        worker (a worker whose leg or judge is out, its model missing or unloadable, keys its
        cached results apart, so it neither fills the cache healthy workers read nor goes
        uncached itself; with ``caller`` and the agent's ``stored`` settings as the search reads
        them, an agent's own reranker missing here too), and a mark of the
        model files its settings name (:mod:`electa.model_files`: their contents, so a ranker,
        reranker or GGUF model replaced at the same path keys its results apart)."""
        own_out = caller is not None and self.agent_rerankers.out_here(caller, stored)
        out = ",".join([*sorted(name for name, leg in self.all_legs.items() if not leg.available()),
                        *sorted(f"judge:{name}" for name, judge in self.funnel.judges.items()
                                if isinstance(judge, UnavailableJudge)), *(["judge:own-rerank"] if own_out else [])])
        return f"{serving_recipe(by_content(self.settings))}|out={out}|files={self._model_files.mark()}"

    def read_graph_missing(self, batch: int = 64, after_id: int = 0, progress: bool = False,
                           max_batches: int | None = None, recount: bool = True) -> int:
        """Read every unit above ``after_id`` the extractor has not read into the knowledge graph,
        in committed batches (resumable). Returns how many were read. ``recount=False`` (after a
        write, when none was missing: the new units are read now, and a deletion makes none
        missing) spares the counts over every unit."""
        store = self.graph.store  # (a GraphStore: the leg has none otherwise)
        if store is None:
            return 0
        done = batches = 0
        while max_batches is None or batches < max_batches:
            rows = store.units_missing_graph(self.extractor.name, batch, after_id)
            if not rows:
                break
            store.put_graph(self.extractor.name, [(uid, self.extractor.extract(title, text)) for uid, title, text in rows])
            done, batches, after_id = done + len(rows), batches + 1, rows[-1][0]
            if progress:
                print(f"reindex: {done} units read into the knowledge graph", flush=True)
        if recount:
            self.graph.recount()
        return done

    def encode_sparse_missing(self, batch: int = 64, after_id: int = 0, progress: bool = False,
                               max_batches: int | None = None) -> int:
        """Term weights for every parent unit above ``after_id`` that lacks this model's, in
        committed batches (resumable). Returns how many were made."""
        encoder, store = self.sparse.encoder, self.store
        if encoder is None or not isinstance(store, SparseTermStore):
            return 0
        done = batches = 0
        while max_batches is None or batches < max_batches:
            rows = store.chunks_missing_sparse(encoder.model_id, batch, after_id)
            if not rows:
                break
            vectors = encoder.encode([f"{title}\n{text}" if title else text for _, title, text in rows])
            store.put_sparse(encoder.model_id, [(uid, t, w) for (uid, _, _), (t, w) in zip(rows, vectors, strict=True)])
            done, batches, after_id = done + len(rows), batches + 1, rows[-1][0]
            if progress:
                print(f"reindex: {done} units given learned term weights", flush=True)
        self.sparse.recount(store)  # (after a deletion too: _written calls this on every write)
        return done

    def _open_index(self, embedder: Embedder) -> VectorIndex:
        return self.store.dense_index(embedder.model_id, embedder.dim, self.settings)

    def close(self) -> None:
        self._runner.close()
        self.funnel.close()
        self.fulltext.close()
        self.qa.close()
        if self.index is not None:
            self.index.save()
        self.readings.save()
        self.store.shutdown()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- ingest ------------------------------------------------------------------------------
    def _ingestor(self, org: str) -> Ingestor:
        if self._mismatch:
            raise ModelMismatchError(self._mismatch)
        # Writing pages under a name makes it an organisation (the store's write records it), so
        # keys, secrets and the console can name it next: `electa ingest --org npm` then `electa
        # keys create --org npm` said "create it first". A name that cannot be one is refused
        # here, before any file is read.
        check_org_name(org)
        self.adopt_default_reading(org)
        s = self.settings
        return Ingestor(self.store, self.embedder if self.index is not None else None, s.parent_chars,
                        s.child_chars, s.child_overlap, int(s.max_file_mb * 2**20), self.recipe, s.language)

    @property
    def new_reading(self) -> str:
        """The dense reading a new organisation gets at its first write: ``settings.dense_reading``
        under the chain with a crossing model of its own (USE), else ``by-language`` (without
        USE, e5 would read every unit twice; without the chain, there is no other)."""
        if self.readings.model is None or self.crossing is None:
            return BY_LANGUAGE
        return self.settings.dense_reading

    def adopt_default_reading(self, org: str) -> str:
        """Store :attr:`new_reading` with an organisation that has no reading stored and no
        source (before its first write, so that its units are read that way from the first:
        ``by-question``'s USE vectors made after each write, with the chain's). One that wrote
        before keeps ``by-language`` (its units lack USE's vectors, which ``electa orgs dense
        ORG by-question`` makes); one whose every source was deleted starts again as new.
        Returns the organisation's reading. (Two first writes store the same; an `electa orgs
        dense` made by another process between this read and write is overwritten.)"""
        if self.readings.model is None:
            return BY_LANGUAGE  # (no chain: no other reading, nothing read)
        stored = self.readings.readings().get(org)  # (read once per generation)
        if stored is not None:
            return stored
        reading = self.new_reading
        if reading == BY_LANGUAGE or self.store.has_sources(org):
            return BY_LANGUAGE
        self.store.set_org_settings(org, {**(self.store.org_settings().get(org) or {}), "dense": reading})
        return reading

    def read_as(self, org: str, reading: str | None = None, progress: bool = False) -> int:
        """Make ``org`` read with ``reading``, by default :attr:`new_reading` (an evaluation's
        organisation measures what a new one gets, whatever its cached store ran before), storing
        it only where needed (not ``by-language`` where none is stored and none is to come).
        Returns how many units were embedded (:meth:`set_dense_reading`)."""
        wanted = check_reading(reading or self.new_reading)
        if self.readings.model is None:
            return 0  # (no chain: no other reading)
        stored = self.readings.readings().get(org)
        if stored == wanted or (stored is None and wanted == BY_LANGUAGE == self.new_reading):
            return 0
        return self.set_dense_reading(org, wanted, progress)

    def _warm_chain(self) -> bool:
        """Load the chain's models that the stored languages need, and its crossing model where
        any page is not in English (:mod:`electa.legs.crossing`: it meets questions that cross)
        or an organisation reads with it; a lazy model would load inside a search, over the
        dense leg's budget. Whether an organisation reads with the crossing model."""
        assert isinstance(self.embedder, ChainEmbedder)
        multilingual = bool(self.readings.multilingual())
        stored = self.store.stored_languages()
        self.embedder.warm(stored, crossing=multilingual)
        if not multilingual and self.crossing is not None:
            self.crossing.ready(stored)  # (a failure is logged, and the chain's scores stand)
        return multilingual

    def _register(self, org: str, report: IngestReport) -> None:
        """Record ``org`` as an organisation once a write of it stored or found a source. A
        store's write records it with the pages; this covers a store whose pages were written
        before that (an `electa sync` finding every file unchanged), once per engine."""
        if org in self._registered or not report.outcomes:
            return
        if org not in self.store.organisations():
            self.store.add_organisation(org)
        self._registered.add(org)

    def _written(self) -> None:
        """After a batch of writes: chunks still without a vector of this model (stored while
        no model was available) are embedded, vectors go into the graph (saved once per batch,
        not per file), the full-text images are rebuilt in the background."""
        if self.index is not None and self.embedder is not None:
            # Units up to the last check all had a vector (ids only grow, vectors go only with
            # their units or a model switch, which reindexes): look above it only. A full scan
            # here cost 0.6-3.4 s per write at 1M units (warm/cold; bench/scale.py's 1M store).
            top = self.store.last_unit_id()  # read first: a unit committed meanwhile lies above it
            if not self._vectors_checked and nothing_missing(self.store, self.embedder.model_id):
                self._vectors_checked = top
            embed_missing(self.store, self.embedder, self.recipe, 256, after_id=self._vectors_checked)
            self._vectors_checked = top
            self.index.sync()
            self.index.save(force=False)  # the store is the truth: the graph's file may lag it
        self.fulltext.refresh()
        if self._warm and self.index is not None and isinstance(self.embedder, ChainEmbedder):
            try:  # (a write that brought the first page in another language: searches that cross follow)
                self._warm_chain()
            except Exception as exc:  # the write stands; the model is loaded inside a search, or said missing there
                log.warning("loading the chain's models after a write failed (%s)", exc)
        self.qa.refresh()
        if self.index is not None and self.readings.multilingual():
            # As the learned term weights below: a failure costs the new units their second
            # vectors until the next write (its watermark stays), never the write.
            try:
                self._embed_own_readings()
            except Exception:
                log.warning("the multilingual vectors of the units just written could not be made", exc_info=True)
        if self.sparse.encoder is not None and isinstance(self.store, SparseTermStore):
            # After the data is committed and the other images refreshed: a failure here costs the
            # new units their learned term weights (the leg then says how many lack them), never
            # the write. The image catches up at the next search.
            top = self.store.last_unit_id()
            try:
                self.encode_sparse_missing(after_id=self._sparse_checked)
                self._sparse_checked = top
            except Exception:
                log.warning("learned term weights of the units just written could not be made", exc_info=True)
                self.sparse.recount(self.store)
        if self.graph.store is not None:
            # As the term weights: a failure costs the new units their place in the graph (the leg
            # says how many lack one), never the write.
            top = self.store.last_unit_id()
            try:
                self.read_graph_missing(after_id=self._graph_checked, recount=bool(self.graph.missing))
                self._graph_checked = top
            except Exception:
                log.warning("the units just written could not be read into the knowledge graph", exc_info=True)
                self.graph.recount()

    def _embed_own_readings(self, max_batches: int | None = None, progress: bool = False) -> int:
        """The multilingual model's vectors of the units of organisations that read with it and
        lack one (after a write: its new units; read after the write committed, so a switch
        made meanwhile is seen). Returns how many were made."""
        orgs, model = self.readings.multilingual(), self.readings.model
        if not orgs or model is None:
            return 0
        top = self.store.last_unit_id()
        done, _ = embed_missing(self.store, model, self.recipe, 256, max_batches, progress,
                                after_id=self._own_checked, orgs=sorted(orgs))
        if max_batches is None:
            self._own_checked = top
        index = self.readings.index()
        index.sync()
        index.save(force=False)
        return done

    def _dense_leg(self, why: str = "") -> DenseLeg:
        """The dense leg over this engine's index and readings, with (as ``self.crossing``) a
        chain's scorer of units in another language than the question's
        (:mod:`electa.legs.crossing`), unless its model for other languages is the crossing one."""
        embedder = self.embedder
        self.crossing: CrossingScorer | None = None
        if isinstance(embedder, ChainEmbedder) and embedder.crossing.model_id != embedder.other.model_id:
            self.crossing = CrossingScorer(embedder.crossing, self.store.unit_languages, self.store.units,
                                           WhenLoaded(embedder.crossing))
        return DenseLeg(embedder if self.index is not None else None, self.index, why, self.fulltext.languages,
                        self.readings.own, self.crossing, self.store.unit_languages)

    def dense_model_id(self, org: str) -> str | None:
        """The model whose scores ``org``'s dense leg gives: its own reading's, else the engine's
        (what a calibration or learned ranker fitted on them records and is checked against)."""
        if self.embedder is None:
            return self.readings.model_id(org, None)
        # An organisation with pages in another language than English, under a chain that
        # scores them by its crossing model for a question in another language, gets other
        # scores than under the same chain without (a tuning fitted before is not read: tune
        # again); one with English pages only never crosses.
        # Likewise one with pages in a language whose model has a map of its own for it: the
        # mark names the maps it reads by, so new figures for a language mark its organisations.
        # The model the organisation reads with: its own reading's (a chain whose crossing model
        # is e5, where USE is missing, has e5's maps there too), else the engine's.
        own = self.readings.model_id(org, None)
        model = self.readings.model if own is not None and self.readings.model is not None else self.embedder
        crossing = own is None and self.crossing is not None
        # (``by-question``: the engine's scores, marked with the model of the other questions)
        if not crossing and not language_maps(model.other if isinstance(model, ChainEmbedder) else model):
            return own if own is not None else self.readings.model_id(org, self.embedder.model_id)
        languages = self.fulltext.languages(Caller(org), self.store.generation)  # (read once per generation)
        crosses = crossing and any(lang not in ENGLISH for lang in languages)
        maps = {lang: correction for lang in sorted(set(languages))
                if (correction := language_correction(model, lang)) is not None}
        marks = ("+crossing" if crosses else "") + (f"+maps-{_digest(maps)}" if maps else "")
        return own + marks if own is not None else self.readings.model_id(org, self.embedder.model_id + marks)

    def set_dense_reading(self, org: str, reading: str, progress: bool = False) -> int:
        """Make ``org`` read with ``reading`` (:mod:`electa.legs.dense_readings`). For
        ``multilingual`` and ``by-question``, every unit of the organisation is first given the multilingual model's
        vector (committed in batches: interrupt and run again, it resumes), then the setting
        flips, then units another process wrote meanwhile are embedded too. Returns how many
        units were embedded; the organisation's searches read the new way from its next one."""
        check_reading(reading)
        model = self.readings.model
        if model is None or self.index is None:
            raise ConfigError(f"an organisation's own dense reading needs the embedder chain (ELECTA_EMBEDDER=chain);"
                              f" this engine embeds with {self.embedder.model_id if self.embedder else 'none'}"
                              + (f" ({self._mismatch})" if self._mismatch else ""))
        current = dict(self.store.org_settings().get(org) or {})
        done = 0
        if reading in KEEPING:
            done, _ = embed_missing(self.store, model, self.recipe, 256, None, progress, orgs=[org])
        if current.get("dense") != reading:  # (by-language too: else a first write would store the default)
            self.store.set_org_settings(org, {**current, "dense": reading})
        if reading in KEEPING:
            self._own_checked = 0  # what another process wrote before it saw the switch
            done += self._embed_own_readings(progress=progress)
        return done

    def ingest(self, paths: Iterable[str | Path], access: Access, base_url: str = "",
               progress: bool = False, as_name: str | None = None, url_suffix: str | None = None,
               read_noindex: bool = False) -> IngestReport:
        """Ingest files and folders; bad files are reported by name and skipped (SPEC A8).
        Sources are named under each folder's name, or ``as_name`` for a single path; each
        file's address is :func:`electa.ingest.pipeline.page_address` of ``base_url``. A
        folder's HTML page asking not to be indexed is not stored (``report.unindexed``) unless
        ``read_noindex``, or an earlier reading stored it (it is kept up to date, never deleted
        for it: ``report.unindexed_stored``); a page named alone is read whatever it asks."""
        report = self._ingestor(access.org).ingest_paths([Path(p) for p in paths], access, base_url, progress, as_name,
                                                         url_suffix, read_noindex)
        self._register(access.org, report)
        self._written()
        return report

    def sync(self, folders: Iterable[str | Path], access: Access, base_url: str = "",
             progress: bool = False, as_name: str | None = None, url_suffix: str | None = None,
             read_noindex: bool = False) -> IngestReport:
        """Mirror folders: new files are added, changed ones updated (a file whose documents
        read the same, or that another release's reader reads the same, stays unchanged:
        :func:`electa.stores.protocol.same_documents`), and the sources of files that are gone
        from a folder are deleted from every leg (``report.deleted``). Only the
        sources of that folder (same organisation and agent, named under the folder's recorded
        name; see :mod:`electa.ingest.naming`) are ever deleted: never uploads, other folders,
        a file that could not be read, nor anything when a folder could not be listed whole,
        nor a stored page that now asks not to be indexed (``report.unindexed_stored``: kept up
        to date). A stored page that now only sends its visitor to another (a stub's meta
        refresh: :mod:`electa.text.refresh`) is deleted as a file that is gone is
        (``report.moved_stored``): its text is no longer in the folder; so is one that now reads as
        only a table of contents of other pages (``report.contents_stored``: a toctree alone)."""
        roots = [Path(f) for f in folders]
        for root in roots:
            if not root.is_dir():
                raise NotFoundError(f"{root} is not a folder; `electa sync` mirrors folders (use `electa ingest` for files)")
        report = self._ingestor(access.org).ingest_paths(roots, access, base_url, progress, as_name, url_suffix,
                                                         read_noindex)
        self._register(access.org, report)
        listed = {root: name for root, name in report.roots.items() if root not in report.unlisted}
        prefixes = tuple(f"{name}/" for name in listed.values())
        # Sources an older Electa named by absolute path, whose file is gone (those still there were renamed).
        legacy = tuple(f"{root.resolve()}/" for root in listed)
        for source in self.store.list_sources(access.org):
            uri = str(source["uri"])
            if (source["agent"] == access.agent and source["kind"] != "api" and uri not in report.seen
                    and (uri.startswith(prefixes) or (uri.startswith(legacy) and not Path(uri).exists()))):
                self.store.delete_source(access.org, access.agent, uri)
                report.deleted.append(uri)
        self._written()
        return report

    def ingest_loaded(self, uri: str, loaded: Loaded, access: Access, kind: str = "api",
                      url: str = "", content_hash: str = "", progress: bool = False) -> SourceOutcome:
        """Ingest already-loaded documents and Q&A pairs as one source (API uploads, eval)."""
        if not content_hash:
            h = hashlib.sha256()
            for d in loaded.documents:
                h.update(f"{d.ext_id}\x00{d.title}\x00{d.text}\x00{d.url}\x01".encode())
            for q in loaded.qa_pairs:
                h.update(f"{q.ext_id}\x00{q.question}\x00{q.answer}\x00{q.url}\x01".encode())
            for c in loaded.curated:
                triggers = "\x02".join(c.triggers)
                h.update(f"{c.ext_id}\x00{triggers}\x00{c.answer}\x00{c.url}\x01".encode())
            h.update(f"\x03{url}".encode())
            content_hash = h.hexdigest()
        record = SourceRecord(access.org, access.agent, uri, kind, url, content_hash, access)
        existing = self.store.source(access.org, access.agent, uri)
        if existing is not None and existing["kind"] != kind and "api" in (kind, existing["kind"]):
            raise ConfigError(f"{uri!r} is a file ingested from a folder; an upload never replaces it (upload it under"
                              " another name, or remove the file and sync the folder)")
        if same_source(existing, record):
            assert existing is not None
            return SourceOutcome(uri, "unchanged", existing["version"], existing["documents"])
        outcome = self._ingestor(access.org).store_loaded(record, loaded, progress)
        self._written()
        return outcome

    def delete_source(self, org: str, agent: str, uri: str) -> int:
        """Delete a source from every leg. Raises NotFoundError for an unknown source."""
        removed = self.store.delete_source(org, agent, uri)
        if removed < 0:
            raise NotFoundError(f"no source {uri!r} for organisation {org!r}, agent {agent!r}; "
                                "`electa sources list` shows what is stored")
        self._written()
        return removed

    def reindex(self, batch: int = 256, progress: bool = False,
                max_batches: int | None = None) -> ReindexReport:
        """Re-embed every chunk with this engine's model, in committed batches (resumable).

        The old model's vectors keep serving until every chunk has a new one; then the store
        switches model in one transaction and the old vectors are dropped (SPEC A4).

        First, units stored before the current injection rules (an older store) are scanned
        for injected instructions (:meth:`IndexStore.rescan_injections`); that needs no model."""
        start = time.perf_counter()
        scanned = 0
        while max_batches is None or scanned < batch * max_batches:
            step, left = self.store.rescan_injections(batch)
            scanned += step
            if not left:
                break
        if progress and scanned:
            print(f"reindex: {scanned} units scanned for injected instructions", flush=True)
        terms = self.store
        if self.sparse.index is not None and self.sparse.encoder is not None and isinstance(terms, SparseTermStore):
            # Learned term weights for every parent that lacks this model's; once none does, the
            # other models' are dropped and the image read afresh (it frees deleted units too).
            model = self.sparse.encoder.model_id
            self.encode_sparse_missing(batch, progress=progress, max_batches=max_batches)
            if not self.sparse.missing:
                terms.drop_sparse_except(model)
                self.sparse.index.rebuild()
        if self.graph.store is not None:
            # Every unit the extractor has not read (an older store, another extractor's reading);
            # then the other extractors' readings go.
            self.read_graph_missing(batch, progress=progress, max_batches=max_batches)
            if not self.graph.missing:  # (this extractor's reading of every unit: the others' can go)
                self.graph.store.drop_graph_except(self.extractor.name)
        if self.embedder is None:
            raise EmbedderUnavailable(self.dense.why or "no embedder is configured")
        model_id = self.embedder.model_id
        adopted = adopt_vectors(self.store, self.embedder)
        if progress and adopted:
            print(f"reindex: {adopted} English units keep their {self.embedder.english.model_id} vectors"  # type: ignore[attr-defined]
                  " in the chain", flush=True)
        done, batches = embed_missing(self.store, self.embedder, self.recipe, batch, max_batches, progress)
        # Organisations that read with one model get its vectors before the switch drops the
        # other models' (a chain whose model for them changed: their dense leg would find nothing
        # until the pass after the switch ended; review).
        own_orgs = sorted(self.readings.multilingual()) if isinstance(self.embedder, ChainEmbedder) else []
        own = (self.embedder.crossing.model_id,) if own_orgs else ()  # type: ignore[attr-defined]
        if own and not self.store.chunks_missing_vectors(model_id, 1):
            more, more_batches = embed_missing(self.store, self.embedder.crossing, self.recipe, batch,  # type: ignore[attr-defined]
                                                     None if max_batches is None else max(0, max_batches - batches),
                                                     progress, orgs=own_orgs)
            done, batches = done + more, batches + more_batches
        if not self.store.chunks_missing_vectors(model_id, 1) and not (
                own and self.store.chunks_missing_vectors(own[0], 1, orgs=own_orgs)):
            self.store.drop_vectors_except(model_id, also=own)
            if self.index is not None:
                self.index.save()  # (and its deferred save cancelled: it must not write over the new one)
            self.index = self._open_index(self.embedder)
            self.readings.save()
            self.readings = DenseReadings(self.store, self.embedder, self._open_index)
            self.dense = self._dense_leg()
            self.legs["dense"] = self.dense
            if isinstance(self.embedder, ChainEmbedder):
                self._warm_chain()
            self._mismatch = ""
            # Indexes chunked before title units (hp-1) get them now; the rest stays as it is.
            while max_batches is None or batches < max_batches:
                missing = self.store.documents_missing_title_units(batch)
                if not missing:
                    break
                self.store.add_title_units(model_id, missing, title_vectors(self.store, self.embedder, missing))
                done += len(missing)
                batches += 1
                if progress:
                    print(f"reindex: {done} chunks embedded (title units)", flush=True)
            if self.index is not None:
                self.index.sync()
                self.index.save()
            # Organisations that read with the multilingual model: its vectors of their units
            # that lack one (title units just added; all of them after a store left the chain).
            self._own_checked = 0
            done += self._embed_own_readings(max_batches, progress)
        return ReindexReport(model_id, done, time.perf_counter() - start, scanned, adopted)

    # -- search ------------------------------------------------------------------------------
    def mentions(self, text: str, caller: Caller) -> bool:
        """Whether a page the caller may see holds a content word of ``text`` in its title or
        body: from the full-text leg's segments when they are built (no text search in the
        store), else from the store's index (never waiting for a build). A failure is logged
        and answers ``False``: it only decides whether a name is added to the question."""
        try:
            found = self.fulltext.mentions(text, caller, self.store.allowed(caller))
            return found if found is not None else self.store.mentions(text, caller)
        except Exception:
            log.warning("could not tell whether the knowledge mentions %r; taken as not", text, exc_info=True)
            return False

    def search(self, text: str, caller: Caller, *, top: int = 10,
               weights: Mapping[str, float] | None = None, k: float | None = None,
               depths: Mapping[str, int] | None = None, floor: float | None = None,
               legs: Sequence[str] | None = None, order: Order = Order.SCORED,
               page_url: str | None = None, calibrated_floor: float | None = None,
               agent_settings: Mapping[str, object] | None = None,
               judges: Sequence[str] | None = None, person: Person | str | None = None,
               mode: str | None = None) -> SearchResult:
        """Search as the retrieval mode says (SPEC F, :mod:`electa.modes`): ``mode``, else the
        agent's, else ``ELECTA_MODE``, else hybrid (the default legs, fused); ``result.mode`` says
        which ran and why. ``legs`` named run as they are,
        with no mode. The other arguments are those of one search (:meth:`search_legs`)."""
        options: dict[str, Any] = {"weights": weights, "k": k, "depths": depths, "floor": floor, "order": order,
                                   "page_url": page_url, "calibrated_floor": calibrated_floor, "person": person}
        if legs is not None:
            return self.search_legs(text, caller, top=top, legs=legs, agent_settings=agent_settings, judges=judges,
                                    **options)
        if self._mismatch:
            raise ModelMismatchError(self._mismatch)
        if agent_settings is None and caller.agent is not None:
            agent_settings = self.store.agent_settings(caller.org, caller.agent) or {}
        s = self.settings
        report = resolve_mode(mode, agent_settings, s.mode if "mode" in s.model_fields_set else None)
        plan = MODES[report.name]
        run_judges = bool(self.funnel.chosen(judges))
        bound = self._bound_judges(caller, agent_settings, person, judges) if run_judges else {}
        # The cut was fitted on one search of the default legs: only the hybrid mode's search is
        # decided by it (the other modes' own rules decide theirs: electa.judges.rerank_cut).
        cut = self._rerank_cut(self._agent_profile(caller, agent_settings), agent_settings, calibrated_floor,
                               floor) if run_judges and report.name == "hybrid" else None
        shown = max(top, self.funnel.depth(judges, caller, bound))  # (as one search shows its judges)
        judged_ms = [0.0]

        def one(query: str, chosen: Sequence[str] | None, factor: float, count: int, trust_graph: bool = False) -> SearchResult:
            return self.search_legs(query, caller, top=count, legs=chosen,
                                    agent_settings=agent_settings, judges=[], trust_graph=trust_graph,
                                    depth_factor=factor, **options)

        def judge(query: str, hits: Sequence[Hit]) -> tuple[list[Hit], list[Stage]]:
            if not run_judges:
                return list(hits), []
            t = time.perf_counter()
            try:
                return self.judge(query, caller, hits, judges, bound=bound, cut=cut)
            finally:
                judged_ms[0] += (time.perf_counter() - t) * 1000.0

        ctx = ModeContext(one, judge, lambda query: self.graph.linked_names(query, caller, self.store.allowed(caller)),
                          tuple(self.legs), self.graph.available(), self.mode_llm,
                          top, shown, s.mode_budget_ms, s.mode_rounds)
        t0 = time.perf_counter()
        result, done = plan.run(ctx, text)
        timings = {**result.timings_ms, **({"judges": judged_ms[0]} if run_judges else {}),
                   "total": (time.perf_counter() - t0) * 1000.0}
        # (each hit keeps the graph's summary of the search it came from: search_legs gave it)
        return replace(result, timings_ms=timings,
                       mode=replace(done, asked=report.asked, source=report.source, fallback=report.fallback))

    def search_legs(self, text: str, caller: Caller, *, top: int = 10,
                    weights: Mapping[str, float] | None = None, k: float | None = None,
                    depths: Mapping[str, int] | None = None, floor: float | None = None,
                    legs: Sequence[str] | None = None, order: Order = Order.SCORED,
                    page_url: str | None = None, calibrated_floor: float | None = None,
                    agent_settings: Mapping[str, object] | None = None,
                    judges: Sequence[str] | None = None, person: Person | str | None = None,
                    trust_graph: bool = False, depth_factor: float = 1.0) -> SearchResult:
        """One search: run the legs in parallel, fuse by weighted RRF, score, order (SPEC B, C).

        ``trust_graph`` (the graph mode's): the graph leg's first three that name what was asked
        earn the 0.9 minimum without another leg's second opinion (:func:`graph_earns_minimum`).
        ``depth_factor`` multiplies each leg's depth, once the agent's tuned depths and the
        request's are applied (the corrective mode searches wider each round).

        ``weights``, ``k``, ``depths`` and ``floor`` override the settings for this request.
        Every hit keeps each leg's rank, raw score and contribution (``hit.votes``).

        Two scales, two floors: ``floor`` is on the absolute score (``hit.score``, default
        ``settings.floor``); ``calibrated_floor`` is on the calibrated probability
        (``hit.probability``) of an agent tuned by ``electa tune --agent`` (default: its tuned
        floor). A calibrated agent's hits pass on the probability, and on ``floor`` too when
        one is given.

        ``judges`` names the judges to run after fusion (SPEC D1-D3; default every one the
        settings turn on, ``[]`` none); each may reorder the top hits it looks at, never which
        hits pass (except the reranker's score where the agent's tune calibrated it:
        :mod:`electa.judges.rerank_cut`), and leaves a stage in ``SearchResult.stages`` (D6). ``person`` is whose
        feedback personalises the order (D3; a name, or :meth:`person` already read); nobody's
        by default."""
        if self._mismatch:
            raise ModelMismatchError(self._mismatch)
        s = self.settings
        run_judges = bool(self.funnel.chosen(judges))  # (an unknown judge is refused before any work)
        chosen = list(legs) if legs is not None else list(self.legs)
        every = self.all_legs
        unknown = [name for name in chosen if name not in every]
        if unknown:
            raise ConfigError(f"unknown leg {unknown[0]!r}; valid legs: {', '.join(every)}")
        check_weights(weights, every)
        if agent_settings is None and caller.agent is not None:
            agent_settings = self.store.agent_settings(caller.org, caller.agent) or {}
        profile = self._agent_profile(caller, agent_settings)
        bound = self._bound_judges(caller, agent_settings, person, judges) if run_judges else {}
        judge_depth = self.funnel.depth(judges, caller, bound)
        tuned = profile.get("fusion") or {}
        depth_map = {leg: max(1, int(d * depth_factor))
                     for leg, d in {**s.depths, **tuned.get("depths", {}), **(depths or {})}.items()}
        weights = {**tuned.get("weights", {}), **(weights or {})}
        k = k if k is not None else tuned.get("k")
        # (a tuned lift of 0 orders by the absolute score less its meaning gap; None is the plain RRF order)
        lift = LIFT if tuned.get("lift") is None else float(tuned["lift"])
        if "lift" in tuned and tuned["lift"] is None and order is Order.SCORED:
            order = Order.FUSED  # the agent's tuned order is plain RRF
        t0 = time.perf_counter()
        results, timings = self.retrieve(text, caller, legs=chosen, depths=depth_map)
        t1 = time.perf_counter()
        rows = self.ordering.rows(text, results, {**s.weights, **weights}, self._k(k, order), order, page_url,
                                 lift, trust_graph)
        # Pass or fail, calibration and the title rescue are decided over every candidate, as
        # when every candidate was a Hit: a hit passes alike whatever ``top`` asks for.
        calibration = profile.get("calibrators")
        probability: list[float | None] = [None] * len(rows)
        if calibration:
            cut = float(profile.get("calibrated_floor", 0.5)) if calibrated_floor is None else calibrated_floor
            probability = [calibrated_score(calibration, {v[0]: v[2] for v in row[2]}) for row in rows]
            passes = [p >= cut and (floor is None or row[4] >= floor)  # type: ignore[operator]
                      for p, row in zip(probability, rows, strict=True)]
        else:
            limit = s.floor if floor is None else floor
            passes = [row[4] >= limit for row in rows]
        # The judges may bring any hit they look at into the top: those are the ones shown.
        shown = max(top, judge_depth)
        rescued = self.rescue.rescued(text, [(row[3].id, row[3].title) for row, ok in zip(rows, passes, strict=True)
                                            if not ok], caller, {row[3].id for row in rows[:shown]})
        hits = [hit_of(row, passes[i] or row[3].id in rescued, probability[i], rescued.get(row[3].id, ""))
                for i, row in enumerate(rows[:shown])]
        t2 = time.perf_counter()
        timings["fusion"] = (t2 - t1) * 1000.0
        stages: list[Stage] = []
        if run_judges:  # a judge that cannot run for this caller still says why (D6)
            # The cut was fitted on the default legs: a search of other legs keeps the legs' cut.
            rerank_cut = self._rerank_cut(profile, agent_settings, calibrated_floor, floor) \
                if legs is None or sorted(legs) == sorted(self.legs) else None
            hits, stages = self.judge(text, caller, hits, judges, bound=bound, cut=rerank_cut)
            timings["judges"] = (time.perf_counter() - t2) * 1000.0
        timings["total"] = (time.perf_counter() - t0) * 1000.0
        return SearchResult(text, tuple(self._with_graph_summaries(hits[:top], results)), tuple(results), timings,
                            tuple(stages))

    def _with_graph_summaries(self, hits: Sequence[Hit], results: Sequence[LegResult]) -> list[Hit]:
        """Each hit the graph leg found, with its summary of how it connects to the question (the
        graph's best-ranked unit of the hit's document)."""
        notes = {h.unit_id: h.note for r in results if r.leg == "graph" and r.status is LegStatus.OK
                 for h in r.hits if h.note}
        if not notes:
            return list(hits)
        units = self.store.units(list(notes))
        by_document: dict[int, str] = {}
        for unit_id, note in notes.items():  # (in the leg's rank order: a document's best unit first)
            if unit_id in units:
                by_document.setdefault(units[unit_id].document_id, note)
        return [replace(h, graph=by_document[h.document_id]) if h.document_id in by_document else h for h in hits]

    def judge(self, text: str, caller: Caller, hits: Sequence[Hit], judges: Sequence[str] | None = None,
              budgets_ms: Mapping[str, float] | None = None, bound: Mapping[str, Judge] | None = None,
              cut: tuple[RerankCut, float | None] | None = None) -> tuple[list[Hit], list[Stage]]:
        """The judges' order of ``hits`` (already fused and scored, e.g. by :meth:`rank`) and
        their stages: what :meth:`search` does after fusion (and the evaluation's rows).
        ``bound``: judges bound to this caller's settings (:meth:`_bound_judges`). ``cut``: the
        agent's calibration of the reranker's score (:meth:`_rerank_cut`), which decides what
        passes once the reranker has run; otherwise judges never change what passes."""
        # The cut reads the reranker's score of the first hits of the fused order, as fitted.
        within = {h.unit_id for h in hits[:cut[0].depth]} if cut is not None else set()
        judged, stages = self.funnel.run(text, caller, hits, judges, budgets_ms, bound)
        if any(st.ran for st in stages):
            # Passing hits stay ahead of failing ones, each in the judges' order: a judge must not
            # push a passing hit out of the top (and the answer out of its context). When none
            # ran, the order is exactly the one without judges.
            judged = [h for h in judged if h.passes] + [h for h in judged if not h.passes]
            if cut is not None:
                judged = recut(judged, *cut, within=within) or judged
        return judged, stages

    def _rerank_cut(self, profile: Mapping[str, Any], stored: Mapping[str, object] | None,
                    calibrated_floor: float | None = None, floor: float | None = None) -> tuple[RerankCut, float | None] | None:
        """The agent's calibration of the reranker's score (:mod:`electa.judges.rerank_cut`),
        when it was fitted behind the reranker its searches run now, with the floors this search
        asks for: ``calibrated_floor`` (on the probability) replaces the fitted one, ``floor``
        (on the absolute score) must be met too."""
        cut: RerankCut | None = profile.get("rerank_cut")
        if cut is None or cut.reranker != rerank_identity(self.settings.rerank, stored):
            return None
        return (cut if calibrated_floor is None else replace(cut, floor=calibrated_floor)), floor

    def hit_context(self, caller: Caller, hits: Sequence[Hit], visitors: bool = False) -> HitContext:
        """The engagement and recency of ``hits`` (SPEC D2): the votes on their URLs in the
        caller's agent's feedback (visitors' too with ``visitors``; none without an agent:
        feedback is per agent), and when their sources last changed."""
        feedback = (self.store.feedback(caller.org, caller.agent, visitors, urls=[h.url for h in hits if h.url])
                    if caller.agent else [])
        return HitContext(url_votes(feedback), self.store.source_updated(caller.org, {h.source_id for h in hits}))

    def person(self, caller: Caller, name: str) -> Person:
        """``name``'s signals in the caller's organisation (and agent, when it names one)."""
        signals = self.store.person_signals(caller.org, caller.agent, name)
        return Person(name, None if signals is None else tuple(signals))

    def _bound_judges(self, caller: Caller, stored: Mapping[str, object] | None, person: Person | str | None,
                      names: Sequence[str] | None) -> dict[str, Judge]:
        """Judges bound to this search: the agent's ranker (SPEC D2) is the one in the settings
        this search read, whatever another worker stores meanwhile (the result cache's key is
        made from the same read); the person's judge (D3) holds their own signals."""
        s, bound = self.settings, dict[str, Judge]()
        chosen = set(self.funnel.judges if names is None else names)
        if "rerank" in self.funnel.judges and "rerank" in chosen:
            own = self.agent_rerankers.judge(caller, stored)  # the agent's own reranker, where it has one
            if own is not None:
                bound["rerank"] = own
        ltr = self.funnel.judges.get("ltr")
        if "ltr" in chosen and isinstance(ltr, LtrJudge) and isinstance(ltr.source, AgentModels | FileModel):
            # Resolved from the settings this search read: which ranker, and behind which reranker.
            bound["ltr"] = LtrJudge(fixed_model(ltr.source.resolve(stored, caller)), s.ltr_depth, self.ordering.hit_stems,
                                    self.hit_context)
        if person and "personalise" in self.funnel.judges and "personalise" in chosen:
            known = self.person(caller, person) if isinstance(person, str) else person
            bound["personalise"] = PersonaliseJudge(known.signals, s.personalise_depth, s.personalise_blend)
        return bound

    def _agent_profile(self, caller: Caller, stored: Mapping[str, object] | None) -> dict[str, Any]:
        """:meth:`electa.agent_profile.AgentProfiles.read` of the agent's stored settings."""
        return self.profiles.read(caller, stored)

    def retrieve(self, text: str, caller: Caller, legs: Sequence[str] | None = None,
                 depths: Mapping[str, int] | None = None) -> tuple[list[LegResult], dict[str, float]]:
        """Run the legs only: per-leg results inside the caller's access filter, and timings."""
        if self._mismatch:
            raise ModelMismatchError(self._mismatch)
        chosen = list(legs) if legs is not None else list(self.legs)
        t0 = time.perf_counter()
        allowed = self.store.allowed(caller)
        t1 = time.perf_counter()
        every = self.all_legs
        results = self._runner.run([every[n] for n in chosen], text, caller, allowed,
                                   {**self.settings.depths, **(depths or {})}, self.settings.budgets_ms)
        return results, {"acl": (t1 - t0) * 1000.0, "legs": (time.perf_counter() - t1) * 1000.0}

    def rank(self, text: str, results: Sequence[LegResult], *, weights: Mapping[str, float] | None = None,
             k: float | None = None, floor: float | None = None, order: Order = Order.SCORED,
             page_url: str | None = None, lift: float | None = None, top: int | None = None) -> list[Hit]:
        """Fuse leg results (C1, C2, C6), score them (C3) and order them (C4); the first ``top``
        hits (default: all; the others are scored and ordered all the same, but not built)."""
        s = self.settings
        rows = self.ordering.rows(text, results, {**s.weights, **(weights or {})}, self._k(k, order),
                                 order, page_url, LIFT if lift is None else lift)
        limit = s.floor if floor is None else floor
        return [hit_of(row, row[4] >= limit) for row in rows[:top]]

    def _k(self, k: float | None, order: Order) -> float:
        """The RRF k a search fuses with: the one it names (a request's, an agent's tuned), else
        the plain fusion's (``rrf_k``, 60) for the RRF order and :data:`AGREEMENT_K` for the C4
        order, whose lift reads agreement in the fused value (``electa.scoring`` says why), and
        for the absolute order, whose ties follow the fused order. The fused value and each
        vote's contribution a hit reports are read at this k (SPEC C1 names 60: the served
        order reports 10)."""
        if k is not None:
            return k
        return self.settings.rrf_k if order is Order.FUSED else AGREEMENT_K

    def context(self, text: str, caller: Caller, n: int | None = None, **kwargs: object) -> list[Passage]:
        """The passages for a prompt: the first ``n`` passing hits (default 4) among the first
        :data:`ANSWER_WINDOW` (unless ``top`` says otherwise), each cut to ``passage_chars``
        within a shared ``context_chars`` budget (SPEC C7)."""
        s = self.settings
        n = s.top_passages if n is None else n
        kwargs.setdefault("top", answer_window(n))
        result = self.search(text, caller, **kwargs)  # type: ignore[arg-type]
        return cut_passages(result.passing[:n], s.passage_chars, s.context_chars, text)

    def ask(self, question: str, caller: Caller, *, history: Sequence[Turn] = (), page_url: str | None = None,
            agent: AgentProfile | None = None, answerer: Answerer | None = None, floor: float | None = None,
            top_k: int | None = None, weights: Mapping[str, float] | None = None,
            rewriter: Callable[[Sequence[Turn], str], str | None] | None = None,
            calibrated_floor: float | None = None, conversation_id: str | None = None,
            record: bool = False) -> Iterator[AnswerEvent]:
        """Answer with citations, as a stream of events (SPEC E1, D5, G1–G5, G8): the ask
        pipeline (:mod:`electa.answer.pipeline`) over this engine. Keyword arguments override
        the agent's stored settings; ``record=True`` also stores gaps, usage and the turn, as
        the CLI and the HTTP API do."""
        from electa.answer.pipeline import AskPipeline, AskRequest

        request = AskRequest(question, caller, page_url, conversation_id,
                             tuple(history) if history or conversation_id is None else None, agent, floor,
                             calibrated_floor, top_k, weights, rewriter)
        return AskPipeline(self, self.store, answerer=answerer, record=record).run(request)

    def stats(self) -> dict[str, object]:
        out = self.store.stats()
        out["embedder"] = self.embedder.model_id if self.embedder is not None else None
        if self.embedder is not None:
            # Chunks that should carry a vector of this model and do not (`electa reindex` embeds them).
            out["chunks_without_vector"] = self.store.count_vector_chunks() - self.store.count_vectors(self.embedder.model_id)
        out["legs"] = {name: (leg.available(), leg.why) for name, leg in self.all_legs.items()}
        if isinstance(self.store, GraphStore):
            out["graph"] = self.store.count_graph()
        # Organisations that read with the multilingual model (`electa orgs dense`), for all
        # their questions or for those in a language they do not write in.
        readings = self.readings.readings()
        out["dense_multilingual"] = sorted(o for o, r in readings.items() if r == MULTILINGUAL)
        out["dense_by_question"] = sorted(o for o, r in readings.items() if r == BY_QUESTION)
        return out


def check_weights(weights: Mapping[str, float] | None, legs: Iterable[str]) -> None:
    """Refuse a weight for a leg that does not exist, and a negative or non-finite one.

    >>> check_weights({"dense": 2.0}, ["fulltext", "dense", "qa"])
    >>> check_weights({"bm25": 1.0}, ["fulltext", "dense", "qa"])
    Traceback (most recent call last):
    electa.errors.ConfigError: unknown leg 'bm25' in weights; valid legs: fulltext, dense, qa
    """
    valid = list(legs)
    for leg, weight in (weights or {}).items():
        if leg not in valid:
            raise ConfigError(f"unknown leg {leg!r} in weights; valid legs: {', '.join(valid)}")
        if not isinstance(weight, int | float) or not math.isfinite(weight) or weight < 0:
            raise ConfigError(f"weight of leg {leg!r} must be a finite number >= 0, not {weight!r}")


def _digest(maps: dict[str, tuple[float, float]]) -> str:
    """Eight hex digits naming ``maps`` (language -> correction), as their lineage mark."""
    return hashlib.sha256(repr(sorted(maps.items())).encode()).hexdigest()[:8]


def serving_recipe(settings: Settings) -> str:
    """What a cached search or answer was computed with beyond its request, the agent's settings
    and the store's version, where an upgrade or a restart changes it: the served order's version
    (:data:`electa.judges.ltr.ORDER`), the constants that order by value (the C4 lift and its k, the
    meaning gap's weight and margin, the page boost, the modes' merge and image lifts), the version of the ordering rules
    (:data:`RANK_RULES`) and of the analysis (the terms lexical coverage reads), the answer's
    window and the engine's ``settings`` (:meth:`Settings.result_digest`: the floor, weights,
    depths, judges, answerer...). Result
    caches put it in their keys because a shared cache (Redis) outlives an upgrade or a restart
    with other settings, and serves workers that may run with different ones: without it, an
    entry made by the code or settings before would be replayed for up to its TTL. Each constant
    is read, at each call, in the module that orders or cuts by it (the served order's, the
    passages'), so the key names what is served."""
    order, window = served_order, passages.ANSWER_WINDOW
    return (f"{ORDER}|rules={order.RANK_RULES}|analysis={ANALYSIS}|lift={LIFT:g}@k={AGREEMENT_K:g}"
            f"|gap={order.GAP_WEIGHT:g}>{order.GAP_MARGIN:g}@{order.MATCHED_RANK}|page={order.PAGE_BOOST:g}"
            f"|merge={MERGE_LIFT:g}|figure={FIGURE_LIFT:g}x{SHOWN_LIFT:g}|window={window}|settings={settings.result_digest()}")
