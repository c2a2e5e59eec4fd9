"""The engine's search path (a half of :class:`electa.engine.Engine`, :mod:`electa.engine_parts`
says what it reads of it): modes, legs, fusion, the served order, the judges, the passages.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from electa.answer.passages import answer_window, cut_passages
from electa.calibration import calibrated_score
from electa.engine_parts import EngineParts
from electa.errors import ConfigError, ModelMismatchError
from electa.judges.agent_rerank import rerank_identity
from electa.judges.ltr import AgentModels, FileModel, LtrJudge, fixed_model
from electa.judges.ltr_features import HitContext, url_votes
from electa.judges.personalise import PersonaliseJudge
from electa.judges.protocol import Judge
from electa.judges.rerank_cut import RerankCut, recut
from electa.modes import MODES, ModeContext, resolve_mode
from electa.scoring import AGREEMENT_K, LIFT
from electa.served_order import Order, hit_of
from electa.types import (
    Caller,
    Hit,
    LegResult,
    LegStatus,
    Passage,
    Person,
    SearchResult,
    Stage,
)

log = logging.getLogger("electa.engine")  # (the engine's logger)


class EngineSearch(EngineParts):
    """The engine's search path: a search as its mode plans it, one search of the legs fused and
    ordered (SPEC B, C), the judges after it (D1-D3, D6), and a prompt's passages (C7)."""

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
