"""Judges (SPEC D1-D3, D6): optional stages after fusion that refine the order, each within its
own time budget, each failing soft, each reporting a :class:`~electa.types.Stage`.

``build_funnel(settings, models)`` makes the funnel of every judge the settings turn on: the
reranker once you provide a model (``ELECTA_RERANK``; an agent with a reranker of its own,
``electa train-rerank``, is reranked by that one; ``agent``: only those); learning to rank (``ELECTA_LTR``, on by
default) for every agent that has a trained ranker, ``models`` giving each caller's;
personalisation (``ELECTA_PERSONALISE``, on by default) for every search that names a person
with a history.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from electa.config import Settings
from electa.errors import ElectaError
from electa.judges.agent_rerank import AGENTS
from electa.judges.funnel import Funnel
from electa.judges.ltr import (
    AgentModels,
    ContextOf,
    FileModel,
    LtrJudge,
    LtrModel,
    ModelSource,
    StemsOf,
    fixed_model,
    load_model_file,
)
from electa.judges.personalise import PersonaliseJudge, anonymous
from electa.judges.protocol import Judge, Progress, UnavailableJudge, order_by_score
from electa.judges.rerank import PairScorer, RerankJudge

__all__ = ["Funnel", "Judge", "LtrJudge", "LtrModel", "PairScorer", "PersonaliseJudge", "Progress", "RerankJudge",
           "UnavailableJudge", "build_funnel", "order_by_score"]

log = logging.getLogger(__name__)


def _rerank(settings: Settings, models: ModelSource | None, stems: StemsOf | None,
            context: ContextOf | None) -> Judge | None:
    if not settings.rerank:
        return None
    if settings.rerank == AGENTS:  # each agent's own (Engine binds it per search); the rest have none
        return UnavailableJudge("rerank", "ELECTA_RERANK=agent reranks with an agent's own reranker, and this"
                                          " search's agent has none (`electa train-rerank --agent ORG/AGENT`)")
    from electa.judges.scorers import open_scorer

    return RerankJudge(open_scorer(settings.rerank, settings), settings.rerank_depth, settings.rerank_chars,
                       settings.rerank_batch, settings.rerank_blend)


def _ltr(settings: Settings, models: ModelSource | None, stems: StemsOf | None, context: ContextOf | None) -> Judge | None:
    if settings.ltr == "agent":  # each agent's own ranker, where it has one
        return LtrJudge(models, settings.ltr_depth, stems, context) if models is not None else None
    if not settings.ltr:
        return None
    model = load_model_file(settings.ltr)
    # A file serves every caller, checked per search like an agent's ranker (FileModel).
    source = FileModel(model, models.serving, models.model_of) if isinstance(models, AgentModels) else fixed_model(model)
    return LtrJudge(source, settings.ltr_depth, stems, context)


def _personalise(settings: Settings, models: ModelSource | None, stems: StemsOf | None,
                 context: ContextOf | None) -> Judge | None:
    # A search that names a person gets their own judge (Engine.search); this one stands for the rest.
    return anonymous() if settings.personalise else None


# In the order they run: each refines the order the one before left.
JUDGES: dict[str, Callable[[Settings, ModelSource | None, StemsOf | None, ContextOf | None], Judge | None]] = {
    "rerank": _rerank, "ltr": _ltr, "personalise": _personalise}


def build_funnel(settings: Settings, models: ModelSource | None = None, stems: StemsOf | None = None,
                 context: ContextOf | None = None) -> Funnel:
    """The funnel of the judges ``settings`` turn on, in the order of :data:`JUDGES`; ``models``
    gives each caller's ranker (:class:`electa.judges.ltr.AgentModels`), ``stems`` a hit's stems
    from the engine's cache, ``context`` the hits' engagement and recency from the store. A judge that cannot be
    made is logged and reported as unavailable by every search; the engine opens."""
    judges: list[Judge] = []
    for name, make in JUDGES.items():
        try:
            judge = make(settings, models, stems, context)
        except ElectaError as exc:
            log.warning("judge %s is unavailable: %s", name, exc)
            judge = UnavailableJudge(name, str(exc))
        if judge is not None:
            judges.append(judge)
    return Funnel(judges, settings.judge_budgets_ms)
