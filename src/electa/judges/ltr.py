"""The learning-to-rank judge (SPEC D2): a gradient-boosted ranker, trained on one
organisation's labelled questions (``electa train-ltr``), reorders the top hits from the
features a search already knows (:mod:`electa.judges.ltr_features`).

A model is stored per agent, in its settings under ``ltr`` (:meth:`LtrModel.to_dict`): the
trees (:mod:`electa.judges.trees`), the features they read, how deep it judges, and what it was
trained on (data, embedding model, chunker, cross-validated figures). The judge reads the
model of the caller's own organisation and agent, never another's; with none, or one trained
for another embedding model or chunker, it is unavailable and the order stands (the reference:
"if the LightGBM model file is missing, the rerank order stands").
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from typing import Any

from electa.errors import ConfigError
from electa.judges.agent_rerank import rerank_identity
from electa.judges.ltr_features import CONTEXT_FEATURES, FEATURES, HitContext, features
from electa.judges.protocol import Progress, order_by_score
from electa.judges.trees import TreeEnsemble
from electa.types import Caller, Hit

log = logging.getLogger(__name__)

FORMAT = "electa-ltr/1"
# Below this many labelled questions an agent gets no ranker of its own (the reference: "a
# minimum sample floor before a team gets its own model"); the calibration floor is the same.
MIN_QUERIES = 50


@dataclass(frozen=True)
class LtrModel:
    """A trained ranker: ``trees`` read ``features`` (names from :data:`FEATURES`) of the first
    ``depth`` hits. ``trained`` says on what (data set or golden set, query count, embedding
    model, chunker); ``report`` holds the cross-validated figures and feature importances."""

    trees: TreeEnsemble
    features: tuple[str, ...]
    depth: int
    trained: Mapping[str, Any] = field(default_factory=dict)
    report: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = [f for f in self.features if f not in FEATURES]
        if len(set(self.features)) != len(self.features):
            raise ConfigError("the ranker names a feature twice; run `electa train-ltr` again")
        if unknown:
            raise ConfigError(f"the ranker reads feature {unknown[0]!r}, which this version does not compute;"
                              " run `electa train-ltr` again")
        if len(self.features) != self.trees.n_features:
            raise ConfigError(f"the ranker lists {len(self.features)} features but its trees read"
                              f" {self.trees.n_features}; run `electa train-ltr` again")

    @property
    def id(self) -> str:
        """A content hash of the trees, their features and depth: which model ranked a result."""
        return content_id(self.trees.to_dict(), self.features, self.depth)

    def predict(self, query: str, hits: Sequence[Hit], passage_stems: StemsOf | None = None,
                context: HitContext | None = None) -> list[float]:
        columns = [FEATURES.index(f) for f in self.features]
        return [float(v) for v in self.trees.predict(features(query, hits, passage_stems, context)[:, columns])]

    @property
    def reads_context(self) -> bool:
        """Whether it reads engagement or recency, which a search looks up (:class:`HitContext`)."""
        return not CONTEXT_FEATURES.isdisjoint(self.features)

    def to_dict(self) -> dict[str, object]:
        trees = self.trees.to_dict()  # (encoded once: the id hashes the same arrays)
        return {"format": FORMAT, "id": content_id(trees, self.features, self.depth), "features": list(self.features),
                "depth": self.depth, "trees": trees, "trained": dict(self.trained), "report": dict(self.report)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LtrModel:
        """A stored ranker, checked: any defect raises :class:`ConfigError`, never another error."""
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise ConfigError(f"not an Electa ranker (format {FORMAT} expected); run `electa train-ltr`")
        try:
            depth = int(data["depth"])
            names = tuple(str(f) for f in data["features"])
            trained, report = data.get("trained") or {}, data.get("report") or {}
            if not isinstance(trained, Mapping) or not isinstance(report, Mapping) or not isinstance(data["trees"], Mapping):
                raise TypeError("trees, trained and report must be objects")
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise ConfigError(f"stored ranker is unreadable ({type(exc).__name__}: {exc}); run `electa train-ltr` again") from exc
        if not 2 <= depth <= 1000:
            raise ConfigError(f"stored ranker depth {depth} is outside 2..1000; run `electa train-ltr` again")
        return cls(TreeEnsemble.from_dict(data["trees"]), names, depth, dict(trained), dict(report))



# The served order a ranker's features (``served_rr``, ``fused_rr``) were read from. c4-2: the
# lift's scale counts only the legs that found something (c4-1 counted every leg that ran).
# c4-4: the lift is 0.25 (it was 0.1; c4-3 named 0.3, served for one commit; electa.scoring says why).
# c4-5: the lift is 0.4 and reads agreement at RRF k = 10 (electa.scoring.AGREEMENT_K; it read it at 60).
# c4-6: a Q&A pair the Q&A leg alone ranks first no longer earns the 0.85 minimum where the
# dense leg ran (electa.scoring.qa_earns_minimum): a curated pair's ``absolute`` and ``served_rr`` move.
# c4-7: that second opinion is the dense leg's first place (or its first three with the pair's page
# first), no longer its first three alone.
# c4-8: the unit standing for a document holds the most of the question's words of the legs'
# first units of it (it was the best-contributing leg's): ``absolute`` and ``served_rr`` move.
# c4-9: of units holding as many of the question's words, the one holding the rarer stands
# (RANK_RULES 7): no score moves, but the features read from the shown passage (its title,
# length, coverage of the question) can.
# c4-10: a question's pairs a page writes as one word are searched by full text and credited to
# coverage (RANK_RULES 9): full text's raw scores and ranks and ``absolute`` move.
# c4-11: the order holds a candidate back by its meaning gap (RANK_RULES 10): ``served_rr`` moves.
# c4-12: a question's contractions add no clitic to its words (RANK_RULES 11): full text's raw scores
# and ranks, ``absolute`` and the coverage features move for a question that writes one.
ORDER = "c4-12"


@dataclass(frozen=True)
class Serving:
    """What a ranker's features depend on in the engine that serves it: the embedding model's
    scores, the chunker's units, which legs run, and the reranker that orders the hits before it."""

    model_id: str | None
    chunker: str
    legs: tuple[str, ...] | None = None
    rerank: str = ""


def lineage_problem(trained: Mapping[str, Any], serving: Serving, fusion: str | None = None) -> str:
    """Why a ranker trained as ``trained`` says cannot judge hits served as ``serving`` (and, for
    an agent's ranker, under the agent's tuned ``fusion``), or ''."""
    again = "; run `electa train-ltr` again"
    if trained.get("model_id") not in (None, serving.model_id):
        return (f"the ranker was trained on {trained.get('model_id')} scores, this search's dense leg gives"
                f" {serving.model_id} scores{again}")
    if trained.get("chunker") not in (None, serving.chunker):
        return f"the ranker was trained on units of another chunker{again}"
    legs = trained.get("legs")
    if serving.legs is not None and isinstance(legs, list | tuple) and sorted(legs) != sorted(serving.legs):
        return (f"the ranker was trained with legs {', '.join(sorted(map(str, legs)))}, this engine runs"
                f" {', '.join(sorted(serving.legs))}{again}")
    if trained.get("order", "c4-1") != ORDER:
        return f"the ranker was trained on an earlier served order ({trained.get('order', 'c4-1')}, now {ORDER}){again}"
    if "rerank" in trained and str(trained.get("rerank") or "") != serving.rerank:
        was = "a reranked" if trained.get("rerank") else "an unreranked"
        return f"the ranker was trained on {was} order, this engine serves another{again}"
    if fusion is not None and trained.get("fusion", fusion) != fusion:
        return f"the agent's fusion was tuned again after the ranker was trained{again}"
    return ""


def content_id(trees: Mapping[str, Any], features: Sequence[str], depth: object) -> str:
    """The digest of a ranker's content (stored or in memory alike)."""
    blob = json.dumps([trees, list(features), depth], sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def fusion_digest(stored: Mapping[str, object] | None) -> str:
    """The digest of an agent's tuned fusion (``electa tune --agent``): a ranker trained under
    one is not served under another. None and ``{}`` (a tune that kept the default) are the
    same: both are served the server's own fusion.

    >>> fusion_digest({"fusion": {}}) == fusion_digest({}) != fusion_digest({"fusion": {"k": 5}})
    True
    """
    fusion = (stored or {}).get("fusion") or None
    return hashlib.sha256(json.dumps(fusion, sort_keys=True, default=str).encode()).hexdigest()[:16]


# What a judge asks for the model of a caller: the model, or the reason there is none.
ModelSource = Callable[[Caller], "LtrModel | str"]
# A hit's stems (title and text), from the engine's cache.
StemsOf = Callable[[Hit], Set[str]]
# The engagement and recency of a caller's hits (visitors' votes counted or not), from the store.
ContextOf = Callable[[Caller, Sequence[Hit], bool], HitContext]


class AgentModels:
    """The ranker of each agent, from its stored settings (``ltr``), checked against the
    engine's embedding model and chunker (a ranker reads their scores); a model is parsed once
    per content. ``resolve(stored, caller)`` reads settings already read (a search resolves
    from the very settings its cache key was made from); called with a caller alone it reads
    them from the store."""

    def __init__(self, settings_of: Callable[[str, str], Mapping[str, object] | None], serving: Serving,
                 model_of: Callable[[str], str | None] | None = None) -> None:
        self.settings_of, self.serving = settings_of, serving
        # The model whose dense scores an organisation's searches give (its own reading's).
        self.model_of = model_of
        self._parsed: dict[int, LtrModel] = {}
        self._lock = threading.Lock()

    def __call__(self, caller: Caller) -> LtrModel | str:
        if caller.agent is None:
            return self.resolve(None, caller)
        return self.resolve(self.settings_of(caller.org, caller.agent), caller)

    def resolve(self, stored: Mapping[str, object] | None, caller: Caller) -> LtrModel | str:
        """The ranker in ``stored`` (the agent's settings), or why there is none usable. Never
        raises: stored settings are data, and a bad one must not fail the search."""
        if caller.agent is None:
            return "learning to rank is trained per agent; this search names none"
        org, agent = caller.org, caller.agent
        try:
            found = stored.get("ltr") if isinstance(stored, Mapping) else None
            if not found:
                return f"agent {org}/{agent} has no ranker yet (`electa train-ltr --agent {org}/{agent}`)"
            if not isinstance(found, Mapping) or not isinstance(found.get("trees"), Mapping):
                raise ConfigError("the stored ranker is unreadable; run `electa train-ltr` again")
            # Keyed by what is stored, not by a stored id: an edited or copied ranker is parsed
            # (and checked) afresh, and no two agents' differing rankers share an entry. Python's
            # own (seeded, per-process) string hash: 0.06 ms a search where SHA-256 over the
            # JSON took 1.3 ms; only the operator writes rankers, so collisions need not be
            # adversarial-proof, only improbable.
            key = hash((tuple(sorted((str(k), v if isinstance(v, str | int) else repr(v))
                                     for k, v in found["trees"].items())),
                        tuple(str(f) for f in found.get("features") or ()), repr(found.get("depth"))))
            with self._lock:
                model = self._parsed.get(key)
            if model is None:
                model = LtrModel.from_dict(found)
                with self._lock:
                    if len(self._parsed) > 256:
                        self._parsed.clear()
                    self._parsed[key] = model
        except ConfigError as exc:
            return str(exc)
        except Exception as exc:  # a defect from_dict did not foresee: the order stands all the same
            log.warning("agent %s/%s: stored ranker unreadable", org, agent, exc_info=True)
            return f"the stored ranker is unreadable ({type(exc).__name__}); run `electa train-ltr` again"
        # Checked against what is stored with it (two stored copies of the same trees may differ
        # there), and served with it: how it reads its features (whose votes count) is in it.
        trained = found.get("trained")
        trained = trained if isinstance(trained, Mapping) else {}
        # Behind the agent's own reranker, when it has one, not the engine's.
        serving = replace(self.serving, rerank=rerank_identity(self.serving.rerank, stored),
                          model_id=self.model_of(org) if self.model_of is not None else self.serving.model_id)
        problem = lineage_problem(trained, serving, fusion_digest(stored))
        return problem or (model if model.trained == trained else replace(model, trained=dict(trained)))


class FileModel:
    """An operator's ranker file (``ELECTA_LTR=<path>``) for every caller, checked per search
    like an agent's against what serves it: the engine's model and chunker, and the reranker
    before it (an agent's own where the search's settings name one)."""

    def __init__(self, model: LtrModel, serving: Serving, model_of: Callable[[str], str | None] | None = None) -> None:
        self.model, self.serving, self.model_of = model, serving, model_of

    def __call__(self, caller: Caller) -> LtrModel | str:
        return self.resolve(None, caller)

    def resolve(self, stored: Mapping[str, object] | None, caller: Caller) -> LtrModel | str:
        behind = rerank_identity(self.serving.rerank, stored if caller.agent is not None else None)
        serving = replace(self.serving, rerank=behind,
                          model_id=self.model_of(caller.org) if self.model_of is not None else self.serving.model_id)
        return lineage_problem(self.model.trained, serving) or self.model


class LtrJudge:
    """``LtrJudge(source)``: reorders the first ``model.depth`` hits (at most ``depth``) by the
    caller's ranker. ``source`` gives the model for a caller (:class:`AgentModels`, or one model
    for every caller when an operator serves a file); ``context`` looks up the hits' engagement
    and recency, for a ranker that reads them (without it they read as none)."""

    name = "ltr"

    def __init__(self, source: ModelSource, depth: int = 50, passage_stems: StemsOf | None = None,
                 context: ContextOf | None = None) -> None:
        self.source, self.depth, self.passage_stems, self.context = source, depth, passage_stems, context
        self._why = threading.local()

    def available(self, caller: Caller) -> bool:
        found = self.source(caller)
        self._why.text = found if isinstance(found, str) else ""
        return not isinstance(found, str)

    @property
    def why(self) -> str:
        return getattr(self._why, "text", "")

    def score(self, query: str, caller: Caller, hits: Sequence[Hit], progress: Progress, deadline: float) -> None:
        model = self.source(caller)
        if isinstance(model, str):
            raise ConfigError(model)
        # Features are relative to the hits given (ranks, gaps to the best): the model was
        # trained on its own depth, so it judges that many, not what another judge asked for.
        judged = hits[: min(self.depth, model.depth)]
        # Votes are counted as the ranker was trained to read them: visitors' only if its
        # training counted them (a public key's thumbs must not steer it otherwise).
        context = (self.context(caller, judged, bool(model.trained.get("visitors")))
                   if self.context is not None and model.reads_context else None)
        progress.add(model.predict(query, judged, self.passage_stems, context))

    def order(self, hits: Sequence[Hit], scores: Sequence[float]) -> list[int]:
        return order_by_score(scores)


def fixed_model(model: LtrModel | str) -> ModelSource:
    """One model (or the reason there is none) for every caller: an operator's file
    (``ELECTA_LTR=<path>``), the evaluation, a model a search has already resolved."""
    return lambda caller: model


def load_model_file(path: str) -> LtrModel:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read the ranker file {path}: {exc.strerror}") from exc
    except ValueError as exc:
        raise ConfigError(f"{path} is not JSON ({exc}); write it with `electa train-ltr --out`") from exc
    return LtrModel.from_dict(data)
