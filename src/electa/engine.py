"""The engine: the one module that knows the flow (ingest -> legs -> fusion -> score -> context).
It opens the store, the models, the legs and the judges and owns their lifecycle; its write path
is :mod:`electa.engine_writes`, its search path :mod:`electa.engine_search`.

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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from electa import code_mark, engine_search, served_order
from electa.agent_profile import AgentProfiles
from electa.answer import passages
from electa.config import Settings
from electa.embedders.chain import ENGLISH, ChainEmbedder, language_correction, language_maps
from electa.embedders.protocol import Embedder
from electa.embedders.registry import create_embedder, create_sparse_encoder, kept_model
from electa.engine_search import EngineSearch
from electa.engine_writes import EngineWrites
from electa.errors import ConfigError, EmbedderUnavailable
from electa.graph.extract import create_extractor
from electa.ingest.chunker import CHUNKER_VERSION
from electa.ingest.unit_vectors import Recipe
from electa.judges import UnavailableJudge, build_funnel, ltr
from electa.judges.agent_rerank import AgentRerankers
from electa.judges.ltr import AgentModels, Serving
from electa.legs.crossing import CrossingScorer, WhenLoaded
from electa.legs.dense import DenseLeg
from electa.legs.dense_readings import BY_QUESTION, MULTILINGUAL, DenseReadings
from electa.legs.fulltext import FullTextLeg, QaLeg
from electa.legs.graph import GraphLeg
from electa.legs.protocol import Leg
from electa.legs.runner import LegRunner
from electa.legs.sparse import SparseLeg
from electa.model_files import ModelFilesMark, by_content
from electa.modes import corrective, multimodal
from electa.modes import graph as graph_mode
from electa.modes import protocol as mode_protocol
from electa.modes.llm import LlmSteps
from electa.served_order import ServedOrder
from electa.stores.protocol import GraphStore, SparseTermStore, Store, VectorIndex
from electa.stores.sparse_index import SparseIndex
from electa.text import language
from electa.text.analysis import ANALYSIS
from electa.title_rescue import TitleRescue
from electa.types import (
    AnswerEvent,
    Caller,
    LegStatus,
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


class Engine(EngineWrites, EngineSearch):
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


def _digest(maps: dict[str, tuple[float, float]]) -> str:
    """Eight hex digits naming ``maps`` (language -> correction), as their lineage mark."""
    return hashlib.sha256(repr(sorted(maps.items())).encode()).hexdigest()[:8]


def serving_recipe(settings: Settings) -> str:
    """What a cached search or answer was computed with beyond its request, the agent's settings
    and the store's version, where an upgrade or a restart changes it: the served order's version
    (:data:`electa.judges.ltr.ORDER`), the constants that order by value (the C4 lift and its k, the
    meaning gap's weight and margin, the page boost, the modes' merge lift, k and depth, the graph
    mode's entity weight, the corrective mode's graded count and keep grade, the image lifts), the version of the ordering rules
    (:data:`RANK_RULES`) and of the analysis (the terms lexical coverage reads), the answer's
    window and the engine's ``settings`` (:meth:`Settings.result_digest`: the floor, weights,
    depths, judges, answerer...). Result
    caches put it in their keys because a shared cache (Redis) outlives an upgrade or a restart
    with other settings, and serves workers that may run with different ones: without it, an
    entry made by the code or settings before would be replayed for up to its TTL. Each constant
    is read, at each call, in the module that orders or cuts by it (the served order's, the search
    path's, the modes', the passages', the learned ranker's for the order's version), so the key
    names what is served, each at full precision. Beyond these (whose names in the key say what
    a patch or a setting changed), a digest of the package's code
    (:func:`electa.code_mark.code_digest`) keys apart whatever else a deploy changes: coverage's
    base and span, the Q&A and graph minimums, the modes' limits, the prompts, the code."""
    order, search, window = served_order, engine_search, passages.ANSWER_WINDOW
    figure = f"{multimodal.FIGURE_LIFT!r}x{multimodal.SHOWN_LIFT!r}"
    merge = f"{mode_protocol.MERGE_LIFT!r}@k={mode_protocol.MERGE_K!r}>{mode_protocol.MERGE_DEPTH!r}"
    modes = f"entity={graph_mode.ENTITY_WEIGHT!r}|graded={corrective.GRADED!r}>{corrective.KEEP!r}"
    return (f"code={code_mark.code_digest()}|{ltr.ORDER}|rules={order.RANK_RULES}|analysis={ANALYSIS}"
            f"|lift={search.LIFT!r}@k={search.AGREEMENT_K!r}"
            f"|gap={order.GAP_WEIGHT!r}>{order.GAP_MARGIN!r}@{order.MATCHED_RANK!r}|page={order.PAGE_BOOST!r}"
            f"|merge={merge}|{modes}|figure={figure}|window={window!r}|settings={settings.result_digest()}")
