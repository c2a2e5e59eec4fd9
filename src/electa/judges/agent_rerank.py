"""Each agent's own reranker (SPEC D1), trained on its organisation's labelled questions by
``electa train-rerank`` (:mod:`electa.eval.rerank_training`).

An agent's settings name its reranker by id (``reranker``: format, id, what it was trained on,
its held-out figures); the model lives in the store's folder under
``rerankers/<digest of org and agent>/<id>/``. A search of that agent, when a reranker runs
at all (``ELECTA_RERANK`` set: ``agent`` for agents' own only, or a scorer every other agent
uses), is reranked by it; no other organisation's or agent's search ever reads it: the folder
is derived from the caller's own organisation and agent, and the id is checked to be a digest,
never a path. A model that cannot be loaded leaves the order and says why, like any judge.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path

from electa.config import Settings
from electa.errors import ConfigError
from electa.judges.protocol import Judge, UnavailableJudge
from electa.judges.rerank import PairScorer, RerankJudge
from electa.types import Caller

FORMAT = "electa-reranker/1"
AGENTS = "agent"  # ELECTA_RERANK=agent: agents' own rerankers, no other
_ID = re.compile(r"[0-9a-f]{16}")
LOADED = 8  # models kept loaded (an int8 MiniLM holds ~25 MB)
RETRY_S = 60.0  # a model that failed to load is tried again after this long, not at every search
GONE = "its model folder {} is gone from the store; run `electa train-rerank` again"


def agent_folder(root: Path, org: str, agent: str) -> Path:
    """The folder holding ``org``/``agent``'s rerankers: named by a digest, so no name can reach
    outside ``root``."""
    return root / "rerankers" / hashlib.sha256(json.dumps([org, agent]).encode()).hexdigest()[:16]


def valid_id(model_id: object) -> bool:
    return isinstance(model_id, str) and _ID.fullmatch(model_id) is not None


def reranker_folder(root: Path, org: str, agent: str, stored: object) -> Path:
    """The folder of the reranker an agent's settings name (``reranker``), checked."""
    if not isinstance(stored, Mapping) or stored.get("format") != FORMAT:
        raise ConfigError("the agent's reranker setting is unreadable; run `electa train-rerank` again")
    if not valid_id(stored.get("id")):
        raise ConfigError("the agent's reranker names no valid model id; run `electa train-rerank` again")
    return agent_folder(root, org, agent) / str(stored["id"])


def rerank_identity(rerank: str, stored: Mapping[str, object] | None) -> str:
    """What reorders an agent's hits before its learned ranker: ``agent:<id>`` for its own
    reranker, the engine's scorer spec for the rest, '' for none. A ranker (SPEC D2) trained
    behind one is stale behind another (:func:`electa.judges.ltr.lineage_problem`)."""
    if not rerank:
        return ""
    own = stored.get("reranker") if isinstance(stored, Mapping) else None
    if isinstance(own, Mapping) and valid_id(own.get("id")):
        return f"agent:{own['id']}"
    return "" if rerank == AGENTS else rerank


def own_reranker_held_out(stored: Mapping[str, object] | None) -> set[str]:
    """The digests (:func:`electa.judges.ltr_features.question_digests`) of the questions an
    agent's own reranker held out: the only ones whose scores read as a new question's do (it
    learned from the rest, so its scores on them are overfit). Empty when it names none."""
    own = stored.get("reranker") if isinstance(stored, Mapping) else None
    about = own.get("trained") if isinstance(own, Mapping) else None
    held = about.get("held_out_questions") if isinstance(about, Mapping) else None
    return {str(d) for d in held} if isinstance(held, list | tuple) else set()


class AgentRerankers:
    """``judge(caller, stored)``: the rerank judge of an agent that has its own reranker, made
    from the settings this search read; None for one without. Loaded models are kept (the
    :data:`LOADED` most recently used)."""

    def __init__(self, root: Path, settings: Settings, load: Callable[[Path], PairScorer] | None = None) -> None:
        self.root, self.settings = root, settings
        self._load = load or _onnx
        self._loaded: OrderedDict[Path, PairScorer] = OrderedDict()
        self._failed: dict[Path, tuple[float, str]] = {}  # folder -> (when its load failed, why)
        self._loading: dict[Path, threading.Lock] = {}
        self._lock = threading.Lock()

    def judge(self, caller: Caller, stored: Mapping[str, object] | None) -> Judge | None:
        own = stored.get("reranker") if isinstance(stored, Mapping) and caller.agent is not None else None
        if not own:
            return None
        assert caller.agent is not None
        try:
            folder = reranker_folder(self.root, caller.org, caller.agent, own)
        except ConfigError as exc:
            return UnavailableJudge("rerank", f"agent {caller.org}/{caller.agent}'s own reranker: {exc}")
        failed = self._failed.get(folder)
        if failed is not None and time.monotonic() - failed[0] < RETRY_S:
            return UnavailableJudge("rerank", failed[1], failing=True)  # (not loaded again each search)
        try:
            scorer = self._scorer(folder)
        except ConfigError as exc:
            # Gone from this worker's data directory (another host trained it): a fact of this
            # worker, keyed apart (``out_here``). There but unloadable: a fault, not cached.
            why, there = f"agent {caller.org}/{caller.agent}'s own reranker: {exc}", folder.is_dir()
            if there:
                self._failed[folder] = (time.monotonic(), why)
            return UnavailableJudge("rerank", why, failing=there)
        self._failed.pop(folder, None)
        s = self.settings
        return RerankJudge(scorer, s.rerank_depth, s.rerank_chars, s.rerank_batch, s.rerank_blend)

    def out_here(self, caller: Caller, stored: Mapping[str, object] | None) -> bool:
        """Whether the agent's settings name its own reranker and this worker has no folder for
        it (result caches key such a worker apart: its searches are not reranked)."""
        own = stored.get("reranker") if isinstance(stored, Mapping) else None
        if not own or caller.agent is None or not self.settings.rerank:
            return False
        try:
            folder = reranker_folder(self.root, caller.org, caller.agent, own)
        except ConfigError:
            return True  # (unreadable settings: no worker reranks with them)
        return folder not in self._loaded and not folder.is_dir()  # (a model loaded before its folder went still serves)

    def problem(self, caller: Caller, own: object) -> str:
        """Why the reranker ``own`` (an agent's ``reranker`` setting) cannot serve ``caller``'s
        agent, or '' (the folder is there; whether the model inside loads is for a search to find)."""
        if caller.agent is None:
            return "an agent's own reranker serves that agent's searches only"
        if not self.settings.rerank:
            return "no reranker runs: set ELECTA_RERANK (`agent` for agents' own only)"
        try:
            folder = reranker_folder(self.root, caller.org, caller.agent, own)
        except ConfigError as exc:
            return str(exc)
        return "" if folder.is_dir() else GONE.format(folder.name)

    def _scorer(self, folder: Path) -> PairScorer:
        with self._lock:
            if folder in self._loaded:
                self._loaded.move_to_end(folder)
                return self._loaded[folder]
            loading = self._loading.setdefault(folder, threading.Lock())
        # One load per folder at a time (concurrent first searches wait for it, not load their
        # own copy); other folders' searches are not held up meanwhile.
        with loading:
            with self._lock:
                if folder in self._loaded:
                    return self._loaded[folder]
            try:
                if not folder.is_dir():
                    raise ConfigError(GONE.format(folder.name))
                scorer = self._load(folder)
            finally:
                with self._lock:
                    self._loading.pop(folder, None)
            with self._lock:
                self._loaded[folder] = scorer
                while len(self._loaded) > LOADED:
                    self._loaded.popitem(last=False)
        return scorer


def _onnx(folder: Path) -> PairScorer:
    from electa.judges.scorers import OnnxCrossEncoder

    scorer = OnnxCrossEncoder(folder)
    scorer.name = f"agent:{folder.name}"
    return scorer
