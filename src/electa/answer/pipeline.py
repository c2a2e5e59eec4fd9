"""The one ask pipeline (SPEC E, G; ARCHITECTURE.md): the HTTP API, ``electa ask`` and
``Engine.ask`` all walk these steps, and none re-implements one.

small talk → curated answer → follow-up rewrite → business name → retrieval (the engine's
search) → threshold and top K → guarded prompt → answerer (extractive fallback after a
``reset``) → citations and checks → ``done`` → bookkeeping (gap, usage, turn) and the result
cache, for cached and uncached asks alike.

The events (the SSE contract, :data:`SSE_CONTRACT`):

- ``token`` ``{"token": str}``: the next piece of the answer; append it.
- ``reset`` ``{"reason": "answerer_failed", "incident": str}``: the answerer failed part-way;
  discard every token shown so far. The extractive answer's tokens follow. Citations, checks,
  the stored turn and usage count only the text after the reset.
- ``citations`` ``{"citations": [{"id", "title", "url"}]}``: the sources the answer cites (in the
  multimodal mode, a cited passage's images too: ``"images": [{"src", "alt", "caption"}]``).
- ``done``: confidence (the best calibrated probability, else absolute score, of the passages the
  answer read), flags (``low_confidence``: fewer than two hits pass among the first
  :data:`electa.answer.passages.ANSWER_WINDOW`; ``strict``: none does), the search query, checks, timings;
  ``cached`` says whether the
  events were replayed from the result cache, and ``cache: "unavailable"`` that a shared cache
  (Redis) was down and skipped. Always the last event of a complete answer.
- ``error`` (HTTP only) ``{"error": str, "incident": str}``: the answer could not be completed;
  nothing follows. Details are in the server log under the incident id, never in the stream.

Example::

    pipeline = AskPipeline(engine, engine.store)
    for event in pipeline.run(AskRequest("Can I get my money back?", Caller("acme", "default"))):
        print(event.kind, event.data)
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from electa.answer.answerers import Answerer, ExtractiveAnswerer
from electa.answer.checks import citations, cite_stream, unsupported
from electa.answer.passages import answer_window, cut_passages
from electa.answer.prompt import AgentProfile, Prompt, Turn, build_prompt
from electa.answer.rewrite import LlmRewriter, business_name, standalone_query, with_business_name
from electa.answer.smalltalk import REPLIES as SMALL_TALK_REPLIES
from electa.answer.smalltalk import small_talk
from electa.engine import worth_caching
from electa.errors import new_incident
from electa.ingest.injection import quarantine
from electa.legs.dense import elsewhere
from electa.text.analysis import map_language
from electa.types import AnswerEvent, Caller, Person, stage_json

if TYPE_CHECKING:
    from electa.api.cache import Cache
    from electa.engine import Engine
    from electa.stores.protocol import OperationalStore, Store

log = logging.getLogger("electa.ask")

Rewrite = Callable[[Sequence[Turn], str], "str | None"]
FALLBACK_NOTE = "the answerer failed; answered extractively"
DEFAULT_AGENT = "default"

SSE_CONTRACT = """Server-Sent Events, in this order:

- `token` `{"token": "…"}`: the next piece of the answer; append it.
- `reset` `{"reason": "answerer_failed", "incident": "…"}`: the language model failed part-way;
  discard every token shown so far. The extractive answer's tokens follow; citations, checks,
  the stored turn and usage count only the text after the reset.
- `citations` `{"citations": [{"id": 1, "title": "…", "url": "…"}]}` (the multimodal mode adds a cited
  passage's `images`: `[{"src", "alt", "caption"}]`).
- `done` `{"confidence", "low_confidence", "strict", "cached", "conversation_id", "search_query",
  "unsupported", "answerer", "fallback", "incident", "legs", "timings_ms", "stages"}` (`stages`: what
  each judge after fusion did, with `ran`, `changed`, `ms`, `scored`, `considered`, `note`; small talk and curated
  answers send fewer fields; `"cache": "unavailable"` is added when a shared cache was down and
  skipped): the last event of a complete answer. `conversation_id` is the one
  to send with the next question of this conversation (issued by the server to a search key or
  visitor token).
- `error` `{"error": "…", "incident": "…"}`: the answer could not be completed and nothing follows;
  the details are in the server log under the incident id.
"""


def settings_digest(stored: Mapping[str, object] | None) -> str:
    """A short digest of an agent's stored settings: part of every cache key that depends on them."""
    if not stored:
        return ""
    return hashlib.sha256(json.dumps(stored, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class AgentConfig:
    """What ``PUT /v1/agents/{agent}`` stored for an agent (persona and retrieval settings).

    ``threshold`` is a floor on the **absolute** relevance score (``hit.score``, 0–1, the
    scale of ``ELECTA_FLOOR``). An agent tuned with ``electa tune --agent`` is also
    calibrated; its hits then pass on the calibrated probability, against
    ``calibrated_floor`` (or the tuned one), and a ``threshold`` set as well still applies.
    """

    profile: AgentProfile = field(default_factory=AgentProfile)
    threshold: float | None = None
    calibrated_floor: float | None = None
    top_k: int | None = None
    weights: Mapping[str, float] | None = None
    digest: str = ""
    stored: Mapping[str, object] = field(default_factory=dict)  # as read: the search uses these, not a second read

    @classmethod
    def load(cls, store: OperationalStore, org: str, agent: str | None) -> AgentConfig:
        stored = store.agent_settings(org, agent) if agent is not None else None
        if not stored:
            return cls()
        known = {f.name for f in fields(AgentProfile)}
        raw: dict[str, Any] = {k: v for k, v in dict(stored.get("profile") or {}).items() if k in known}  # type: ignore[call-overload]
        if "avoid_topics" in raw:
            raw["avoid_topics"] = tuple(raw["avoid_topics"] or ())
        retrieval: dict[str, Any] = dict(stored.get("retrieval") or {})  # type: ignore[call-overload]
        return cls(AgentProfile(**raw), retrieval.get("threshold"), retrieval.get("calibrated_floor"),
                   retrieval.get("top_k"), retrieval.get("weights"), settings_digest(stored), stored)


@dataclass(frozen=True)
class AskRequest:
    """One question. ``caller.agent`` names the agent (its stored settings, and where gaps,
    usage and turns are recorded); ``history`` given wins over the conversation's stored turns.
    ``profile``, ``floor``, ``calibrated_floor``, ``top_k`` and ``weights`` override the
    agent's stored settings for this request (the keyword arguments of ``Engine.ask``)."""

    question: str
    caller: Caller
    page_url: str | None = None
    conversation_id: str | None = None
    history: tuple[Turn, ...] | None = None
    profile: AgentProfile | None = None
    floor: float | None = None
    calibrated_floor: float | None = None
    top_k: int | None = None
    weights: Mapping[str, float] | None = None
    rewrite: Rewrite | None = None
    # Whose feedback personalises the order (SPEC D3): a name is read once per request, and the
    # result cache's key holds what was read.
    person: Person | str | None = None

    @property
    def agent(self) -> str:
        return self.caller.agent or DEFAULT_AGENT


@dataclass(frozen=True)
class Transcript:
    """What an ask said, as a client that honours ``reset`` shows it."""

    text: str
    citations: list[object]
    done: dict[str, object]
    fell_back: bool


def transcript(events: Sequence[AnswerEvent]) -> Transcript:
    """The answer text after the last ``reset``, its citations and the ``done`` data."""
    pieces: list[str] = []
    cites: list[object] = []
    done: dict[str, object] = {}
    fell_back = False
    for ev in events:
        if ev.kind == "token":
            pieces.append(str(ev.data.get("token", "")))
        elif ev.kind == "reset":
            pieces, fell_back = [], True
        elif ev.kind == "citations":
            cites = list(ev.data.get("citations", []))  # type: ignore[call-overload]
        elif ev.kind == "done":
            done = dict(ev.data)
    return Transcript("".join(pieces), cites, done, fell_back)


def _spoken(text: str) -> Iterator[AnswerEvent]:
    return (AnswerEvent("token", {"token": t}) for t in re.findall(r"\S+\s*", text))


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)


class AskPipeline:
    """The ask pipeline over the engine's parts: the engine (retrieval), the operational store,
    an optional result cache, an optional answerer (default: extractive) and an optional
    follow-up rewriter. ``record=False`` skips the bookkeeping (the Python API's default).
    ``on_prompt`` sees each prompt before the answerer does: the answer evaluation reads the
    passages an answer cites from it (they are not part of the API's events)."""

    def __init__(self, engine: Engine, store: Store, *, cache: Cache | None = None,
                 answerer: Answerer | None = None, rewriter: LlmRewriter | Rewrite | None = None,
                 provider: str | None = None, record: bool = True,
                 on_prompt: Callable[[Prompt], None] | None = None) -> None:
        self.engine, self.store, self.cache = engine, store, cache
        self.answerer, self.rewriter, self.record = answerer, rewriter, record
        self.on_prompt = on_prompt
        self.provider = provider or (answerer.name if answerer is not None else "extractive")
        self.extractive = ExtractiveAnswerer(engine.embedder if engine.index is not None else None)
        self._own_extractive: ExtractiveAnswerer | None = None
        self._lock = threading.Lock()

    # -- the flow ----------------------------------------------------------------------------
    def run(self, req: AskRequest) -> Iterator[AnswerEvent]:
        """The events of one ask; bookkeeping and caching happen once the ``done`` is sent."""
        start = time.perf_counter()
        if isinstance(req.person, str):
            req = replace(req, person=self.engine.person(req.caller, req.person))
        config = AgentConfig.load(self.store, req.caller.org, req.caller.agent)
        history = req.history if req.history is not None else self._stored_history(req)
        # A follow-up depends on its history, so only a conversation's first question is cached.
        key = self._cache_key(self.cache, req, config) if self.cache is not None and not history else None
        cached: list[AnswerEvent] | None = self.cache.get(key) if self.cache is not None and key is not None else None
        # A shared cache that is down was skipped: the answer says so (and is computed afresh).
        skipped = {"cache": "unavailable"} if self.cache is not None and key is not None and self.cache.status != "ok" else {}
        events = iter(cached) if cached is not None else self._answer(req, config, history, start)
        recorded: list[AnswerEvent] = []
        for ev in events:
            recorded.append(ev)
            if ev.kind == "done":
                conversation = {"conversation_id": req.conversation_id} if req.conversation_id else {}
                ev = AnswerEvent("done", {**ev.data, "cached": cached is not None, **skipped, **conversation})
            yield ev
        said = transcript(recorded)
        if self.record:
            self._bookkeep(req, said)
        # A fallback answer, or one whose judge or leg failed or ran late, is not worth keeping
        # for the next visitor: a calmer moment gives a better one.
        whole = all(worth_caching(ev.data) for ev in recorded if ev.kind == "done")
        if self.cache is not None and key is not None and cached is None and not said.fell_back and said.done \
                and whole:
            self.cache.put(key, recorded)

    def _answer(self, req: AskRequest, config: AgentConfig, history: Sequence[Turn],
                start: float) -> Iterator[AnswerEvent]:
        kind = small_talk(req.question)
        if kind is not None:
            yield from _spoken(SMALL_TALK_REPLIES[kind])
            yield AnswerEvent("done", {"confidence": 1.0, "low_confidence": False, "small_talk": kind.value,
                                       "legs": [], "timings_ms": {"total": _ms(start)}})
            return
        caller = req.caller
        curated = self.store.curated_answer(req.question, caller.org, self.store.allowed(caller).ids)
        if curated is not None:  # E2: a curated trigger short-circuits the pipeline
            trigger, canned, url = curated
            # An organisation's own canned answer, yet still never a carrier of a planted
            # instruction (a curated file is data too; `electa sources flagged` lists it).
            yield from _spoken(quarantine(canned))
            yield AnswerEvent("citations", {"citations": [{"id": 1, "title": "curated answer", "url": url}] if url else []})
            yield AnswerEvent("done", {"confidence": 1.0, "low_confidence": False, "strict": False, "curated": trigger,
                                       "legs": [], "timings_ms": {"total": _ms(start)}})
            return
        profile = req.profile or config.profile
        query = standalone_query(req.question, history, req.rewrite or self._rewriter(req))
        query = with_business_name(query, business_name(profile.business or profile.name), self._mentioned(caller))
        s = self.engine.settings
        wanted = req.top_k or config.top_k or s.top_passages
        result = self.engine.search(
            query, caller, top=answer_window(wanted), page_url=req.page_url,
            floor=req.floor if req.floor is not None else config.threshold,
            calibrated_floor=req.calibrated_floor if req.calibrated_floor is not None else config.calibrated_floor,
            weights=req.weights if req.weights is not None else config.weights, agent_settings=config.stored,
            person=req.person)
        passing = result.passing
        passages = cut_passages(passing[:wanted], s.passage_chars, s.context_chars, query)
        asked, other_language = self._read_as(query, caller)
        prompt = replace(build_prompt(profile, req.question, passages, history, req.page_url), asked=asked)
        if self.on_prompt is not None:
            self.on_prompt(prompt)
        text, incident = yield from self._generate(prompt, req.question, self._extractive_for(req.caller, other_language))
        cited = [passages[i - 1] for i in citations(text, len(passages))]
        yield AnswerEvent("citations", {"citations": [
            {"id": passages.index(p) + 1, "title": quarantine(p.hit.title), "url": p.hit.url,
             # (the multimodal mode's: the cited passage's images, those the question describes first)
             **({"images": [{"src": f.src, "alt": quarantine(f.alt), "caption": quarantine(f.caption)}
                            for f in p.hit.images]} if p.hit.images else {})} for p in cited]})
        # The confidence of what the answer read: a passing hit below the passages (there can be
        # up to ANSWER_WINDOW) did not inform it.
        best = max(((p.hit.probability if p.hit.probability is not None else p.hit.score) for p in passages),
                   default=0.3)
        yield AnswerEvent("done", {
            "confidence": round(best, 4), "low_confidence": len(passing) < 2, "strict": not passages,
            "search_query": query, "unsupported": unsupported(text, cited or passages),
            "answerer": (self.answerer or self.extractive).name, "fallback": FALLBACK_NOTE if incident else "",
            **({"incident": incident} if incident else {}),
            "legs": [{"leg": r.leg, "status": r.status.value, "ms": round(r.elapsed_ms, 2)} for r in result.legs],
            "timings_ms": {**{k: round(v, 2) for k, v in result.timings_ms.items()}, "total": _ms(start)},
            # (a failure's text can name server hosts and files: its kind only, as for the legs)
            "stages": [stage_json(st, detail=False) for st in result.stages]})

    def _read_as(self, query: str, caller: Caller) -> tuple[str, bool]:
        """How the dense leg read ``query``: the language whose score map read it, and whether
        it is in a language none of the caller's units is (which a ``by-question``
        organisation reads with its multilingual model), from the caller's languages as the
        leg read them (``("", False)`` when the store cannot say: the answerer then decides
        from the question and its sources, by the organisation's main reading)."""
        try:
            languages = self.engine.fulltext.languages(caller, self.engine.store.generation)
            return map_language(query, languages), elsewhere(query, languages)
        except Exception:  # (an answer is not lost for it)
            log.warning("the caller's languages could not be read: the answer reads its sources' languages",
                        exc_info=True)
            return "", False

    def _extractive_for(self, caller: Caller, elsewhere: bool = False) -> ExtractiveAnswerer:
        """The extractive answerer that reads with the caller's organisation's model: one that
        reads with the multilingual model alone (:mod:`electa.legs.dense_readings`) compares a
        German question with English sentences in that model's space, not MiniLM's; one that
        reads ``by-question`` does so for a question in a language it does not write in
        (``elsewhere``), as its dense leg does."""
        readings = self.engine.readings
        model = readings.model
        if model is None or not readings.reads_own(caller, elsewhere=elsewhere):
            return self.extractive
        with self._lock:
            if self._own_extractive is None or self._own_extractive.embedder is not model:
                self._own_extractive = ExtractiveAnswerer(model)
            return self._own_extractive

    def _generate(self, prompt: Prompt, question: str,
                  extractive: ExtractiveAnswerer) -> Generator[AnswerEvent, None, tuple[str, str]]:
        """Stream the answerer; if it fails, ``reset`` and stream the extractive answer.
        Returns the answer text a client shows and the incident id ("" when nothing failed)."""
        chosen = self.answerer or extractive
        pieces: list[str] = []
        try:
            # A model that left a sentence uncited gets the [n] of the source it matches (small
            # models often cite nothing); the extractive answer cites every sentence itself.
            stream = chosen.stream(prompt, question)
            for piece in stream if chosen is extractive else cite_stream(stream, prompt.sources):
                pieces.append(piece)
                yield AnswerEvent("token", {"token": piece})
            return "".join(pieces), ""
        except Exception:
            if chosen is extractive:
                raise
            incident = new_incident()
            log.exception("answerer %r failed after %d pieces (incident %s); answering extractively",
                          chosen.name, len(pieces), incident)
        yield AnswerEvent("reset", {"reason": "answerer_failed", "incident": incident})
        pieces = []
        for piece in extractive.stream(prompt, question):
            pieces.append(piece)
            yield AnswerEvent("token", {"token": piece})
        return "".join(pieces), incident

    # -- the parts around it -----------------------------------------------------------------
    def _stored_history(self, req: AskRequest) -> tuple[Turn, ...]:
        if not req.conversation_id:
            return ()
        return tuple(Turn(q, a) for q, a in self.store.recent_turns(req.caller.org, req.agent, req.conversation_id))

    def _rewriter(self, req: AskRequest) -> Rewrite | None:
        """E3: an LLM rewriter caches per conversation, so it is used only inside one."""
        if isinstance(self.rewriter, LlmRewriter):
            if not req.conversation_id:
                return None
            return self.rewriter.for_conversation(json.dumps([req.caller.org, req.agent, req.conversation_id]))
        return self.rewriter

    def _mentioned(self, caller: Caller) -> Callable[[str], bool]:
        return lambda name: self.engine.mentions(name, caller)

    def _cache_key(self, cache: Cache, req: AskRequest, config: AgentConfig) -> tuple[object, ...]:
        overrides = json.dumps([self.engine.cache_recipe(req.caller, config.stored), repr(req.profile), req.floor,
                                req.calibrated_floor,
                                req.top_k, sorted((req.weights or {}).items()), config.digest,
                                req.person.digest if isinstance(req.person, Person) else None], default=str)
        return cache.key("ask", req.caller, self.provider, req.question, req.page_url, self.store.version, overrides)

    def _bookkeep(self, req: AskRequest, said: Transcript) -> None:
        """After the stream (G6, G7): a content gap, usage and the conversation's turn."""
        done = said.done
        if not done:
            return
        org, agent = req.caller.org, req.agent
        confidence = float(done.get("confidence", 0.0))  # type: ignore[arg-type]
        if done.get("strict") or (done.get("low_confidence") and not done.get("small_talk")):
            self.store.add_gap(org, agent, req.question, confidence,
                               "nothing passed the floor" if done.get("strict") else "low confidence")
        self.store.count_usage(org, agent, len(said.text))
        if req.conversation_id:
            self.store.add_turn(org, agent, req.conversation_id, req.question, said.text, said.citations, confidence)
