"""What the engine's halves (:class:`~electa.engine_writes.EngineWrites`, the write path, and
:class:`~electa.engine_search.EngineSearch`, the search path) read of the engine they are mixed
into: :class:`electa.engine.Engine` opens the store, the legs and the judges, and provides each
part named here. Kept apart as :mod:`electa.stores.sqlite_tables` is for the store's tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from electa.agent_profile import AgentProfiles
    from electa.config import Settings
    from electa.embedders.protocol import Embedder
    from electa.graph.extract import EntityExtractor
    from electa.ingest.unit_vectors import Recipe
    from electa.judges.agent_rerank import AgentRerankers
    from electa.judges.funnel import Funnel
    from electa.legs.crossing import CrossingScorer
    from electa.legs.dense import DenseLeg
    from electa.legs.dense_readings import DenseReadings
    from electa.legs.fulltext import FullTextLeg, QaLeg
    from electa.legs.graph import GraphLeg
    from electa.legs.protocol import Leg
    from electa.legs.runner import LegRunner
    from electa.legs.sparse import SparseLeg
    from electa.modes.llm import LlmSteps
    from electa.served_order import ServedOrder
    from electa.stores.protocol import Store, VectorIndex
    from electa.title_rescue import TitleRescue


class EngineParts:
    """The parts of an engine its halves share (see the module's docstring)."""

    store: Store
    settings: Settings
    embedder: Embedder | None
    index: VectorIndex | None
    readings: DenseReadings
    recipe: Recipe
    fulltext: FullTextLeg
    qa: QaLeg
    dense: DenseLeg
    sparse: SparseLeg
    graph: GraphLeg
    extractor: EntityExtractor
    crossing: CrossingScorer | None
    legs: dict[str, Leg]
    funnel: Funnel
    ordering: ServedOrder
    rescue: TitleRescue
    profiles: AgentProfiles
    agent_rerankers: AgentRerankers
    mode_llm: LlmSteps | None
    _runner: LegRunner
    _mismatch: str  # why the dense index cannot be searched (another model's), or ""
    _warm: bool
    _registered: set[str]
    # Watermarks of the write path: every unit up to these ids had, at the last check, its vector,
    # its multilingual vector, its learned term weights and its place in the graph.
    _vectors_checked: int
    _own_checked: int
    _sparse_checked: int
    _graph_checked: int

    @property
    def all_legs(self) -> dict[str, Leg]:
        raise NotImplementedError

    def _open_index(self, embedder: Embedder) -> VectorIndex:
        raise NotImplementedError

    def _dense_leg(self, why: str = "") -> DenseLeg:
        raise NotImplementedError

    def _warm_chain(self) -> bool:
        raise NotImplementedError

    def dense_model_id(self, org: str) -> str | None:
        raise NotImplementedError
