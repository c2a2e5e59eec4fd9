"""``electa serve``: organisations, API keys, sources, search, probe, ask (SSE), feedback, gaps, usage.

Every organisation-scoped route takes ``Authorization: Bearer <api key or visitor token>``; the
credential decides the organisation, never the request body, so a key of organisation A can
neither read nor search B. Each route names the scope it needs (``admin`` ⊃ ``ingest`` ⊃
``search``); :mod:`electa.auth` resolves the header into an ``Identity`` and holds the rules.
``POST /v1/orgs`` takes the admin token from ``ELECTA_ADMIN_TOKEN``; an organisation's keys and
signing secret take that token or one of the organisation's admin keys.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastapi import Depends, FastAPI, Header, HTTPException, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator

from electa.answer.answerers import create_answerer
from electa.answer.pipeline import SSE_CONTRACT, AskPipeline, AskRequest, settings_digest
from electa.answer.prompt import VISITORS_LANGUAGE, Turn
from electa.answer.rewrite import LlmRewriter
from electa.api.cache import Cache, ResultCache
from electa.api.console import add_console_routes
from electa.api.contract import (
    AUTHED,
    SSE_EVENT,
    SSE_STREAM,
    UPLOAD_NAME,
    AllowEveryMethod,
    EventStreamResponse,
    JsonInt,
    LegWeights,
    PageUrl,
    errors,
    json_errors,
    json_safe,
    sse_frames,
)
from electa.api.cors import BrowserCors, allowed_origins
from electa.api.web import add_pages
from electa.auth import Authenticator, Identity, RateLimiter, Scope
from electa.auth.conversations import ConversationIds
from electa.auth.identity import Credential
from electa.config import ModeName
from electa.engine import Engine, worth_caching
from electa.errors import AuthError, ElectaError, IngestError, NotFoundError, RateLimited, ScopeError, new_incident
from electa.ingest.loaders import loader_for
from electa.modes.llm import LlmSteps
from electa.types import Access, Caller, LegStatus, Person, hit_json, stage_json

if TYPE_CHECKING:
    from electa.redis_link import RedisLink

log = logging.getLogger("electa.api")


class OrgIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")


class KeyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scope: Scope = Field(description="admin (manage keys), ingest (the org's backend) or search (safe in a browser).")
    name: str = Field("", max_length=100, description="A label for listings: 'website widget'.")
    expires_in_s: float | None = Field(None, gt=0, le=10 * 365 * 86400, strict=True, description="Lifetime in seconds.")
    expires_at: float | None = Field(None, gt=0, strict=True, allow_inf_nan=False,
                                     description="Or an absolute expiry, Unix seconds.")


class SourceIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    # The schema states the pattern and the minimum; the validators say it in words a person can act on.
    name: str = Field(max_length=300, json_schema_extra={"pattern": UPLOAD_NAME},
                      description="File name; its extension picks the loader.")
    content: str = Field(max_length=70_000_000, json_schema_extra={"minLength": 1},
                         description="The file's text, or base64 with base64=true.")
    base64: bool = False
    agent: str = "default"
    url: str = ""
    public: bool | None = Field(None, description="Omit it: naming `principals` makes the source private, naming none"
                                " makes it public. `true` with principals, or `false` without, is refused (422).")
    principals: list[str] = Field([], description="Who may read it (team:support, member:u7); makes it private.")

    @field_validator("name")
    @classmethod
    def _readable(cls, name: str) -> str:
        try:
            loader_for(name)
        except IngestError as exc:
            raise ValueError(exc.reason) from None
        return name

    @field_validator("content")
    @classmethod
    def _not_empty(cls, content: str) -> str:
        if not content:
            raise ValueError("the file is empty: send its text, or its bytes as base64 with base64=true")
        return content


# A user's name: no control characters or line separators (PostgreSQL text cannot hold NUL; none
# belongs in a name).
USER_PATTERN = r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029]+$"


class SearchIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    query: str = Field(min_length=1, max_length=2000)
    agent: str | None = None
    principals: list[str] = []
    top: JsonInt = Field(10, ge=1, le=100)
    weights: LegWeights | None = None
    k: float | None = Field(None, gt=0, allow_inf_nan=False, description=(
        "RRF k, for the fused value and for the agreement the served order reads (default 10, the"
        " agent's tuned k when it has one; the plain RRF order's is 60)."))
    floor: float | None = Field(None, ge=0, le=1, description="Floor on the absolute score (`hit.score`).")
    calibrated_floor: float | None = Field(None, ge=0, le=1, description="Floor on the calibrated probability "
                                           "(`hit.probability`) of an agent tuned by `electa tune --agent`.")
    page_url: PageUrl = Field(None, description="The page the visitor is on (http or https; its query and "
                              "fragment are dropped).")
    judges: list[str] | None = Field(None, max_length=8, description="The judges to run after fusion (default: every"
                                     " one the server turns on; `[]`: none). Each reports a stage in `stages`.")
    user: str | None = Field(None, min_length=1, max_length=200, pattern=USER_PATTERN,
                             description="Whose feedback personalises the order (from the organisation's backend;"
                                         " a visitor token's subject is its user; a search key names none).")
    mode: ModeName | None = Field(None, description="The retrieval mode for this search (default: the agent's, else"
                                  " the server's ELECTA_MODE, else hybrid); `mode` in the response says which ran."
                                  " From the organisation's backend only: a browser-facing credential (a search key,"
                                  " a visitor token) gets the agent's, since the costly modes search several times and"
                                  " may call the LLM.")


class TurnIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    question: str
    answer: str


class AskIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    question: str = Field(min_length=1, max_length=2000)
    agent: str = "default"
    principals: list[str] = []
    page_url: PageUrl = Field(None, description="The page the visitor is on (http or https; its query and "
                              "fragment are dropped).")
    conversation_id: str | None = Field(None, max_length=200, description="Stored turns of this conversation are "
                                        "the history when `history` is not sent. With a search key or visitor token, "
                                        "omit it on the first question and send back the `conversation_id` of `done`"
                                        " (ids are issued by the server and bound to the credential; another is 403).")
    history: list[TurnIn] = []
    user: str | None = Field(None, min_length=1, max_length=200, pattern=USER_PATTERN,
                             description="Whose feedback personalises the order (from the organisation's backend;"
                                         " a visitor token's subject is its user; a search key names none).")


class FeedbackIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    query: str = Field(min_length=1, max_length=2000)
    url: str = Field(min_length=1, max_length=2000)
    agent: str = "default"
    positive: bool = True
    user: str | None = Field(None, min_length=1, max_length=200, pattern=USER_PATTERN, description="Whom the vote is about: it "
                             "personalises that user's later searches (see `user` in search).")


class PersonalisationIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    enabled: bool


class AgentIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    threshold: float | None = Field(None, ge=0, le=1, description=(
        "Floor on the ABSOLUTE relevance score (`hit.score`, 0-1, the scale of ELECTA_FLOOR, default 0.4) for "
        "this agent. Never compared with a calibrated probability: see `calibrated_floor`."))
    calibrated_floor: float | None = Field(None, ge=0, le=1, description=(
        "Floor on the calibrated probability (`hit.probability`), used once the agent is tuned by "
        "`electa tune --agent` (default: the floor tuning chose). A `threshold` set too applies as well."))
    top_k: JsonInt = Field(4, ge=1, le=20, description="Passages that reach the prompt.")
    weights: LegWeights | None = Field(None, description="Per-leg RRF weights for this agent.")
    mode: ModeName | None = Field(None, description="The agent's retrieval mode (default: the server's ELECTA_MODE, else"
                                  " hybrid): standard, hybrid, corrective, graph, agentic or multimodal.")
    name: str = "Assistant"
    business: str = ""
    tone: str = "friendly and concise"
    custom_prompt: str = Field("", max_length=4000)
    avoid_topics: list[str] = []
    max_chars: JsonInt = Field(1200, ge=100, le=8000)
    language: str = VISITORS_LANGUAGE


WORKER_NAME = secrets.token_hex(4)  # this process's name in the X-Electa-Worker header

def create_app(engine: Engine, admin_token: str | None, cache_ttl_s: float = 300.0,
               demo_key: str | None = None) -> FastAPI:
    """The HTTP API and the pages over ``engine``. ``demo_key`` (``electa demo --serve``
    alone) serves the sample help-center page ``/ui/demo`` with that search key in it."""
    app = FastAPI(title="Electa", version="0.1.0",
                  description="Hybrid retrieval and grounded answers over an organisation's own knowledge.")
    app.add_middleware(AllowEveryMethod, routes=app.router.routes)

    @app.middleware("http")
    async def name_the_worker(request: Request, call_next: Any) -> Any:
        # Which process answered (`electa serve --workers N`): a random name per process, so an
        # operator (and the tests) can tell workers apart without learning anything of the host.
        response = await call_next(request)
        response.headers["X-Electa-Worker"] = WORKER_NAME
        return response
    store = engine.store
    settings = engine.settings
    limits: RateLimiter
    cache: Cache
    link: RedisLink | None = None
    if settings.redis_url:
        # Shared by every worker; imported only here, so the core install needs no redis package.
        from electa.api.redis_cache import RedisCache
        from electa.auth.ratelimit_redis import RedisRateLimiter
        from electa.redis_link import RedisLink

        link = shared = RedisLink(settings.redis_url, secret=store.server_secret("redis"))
        cache = RedisCache(shared, cache_ttl_s)
        limits = RedisRateLimiter(shared, settings.rate_per_minute_key, settings.rate_per_minute_client)
    else:
        cache = ResultCache(cache_ttl_s)
        limits = RateLimiter(settings.rate_per_minute_key, settings.rate_per_minute_client)
    provider = engine.settings.answerer
    answerer = None if provider == "extractive" else create_answerer(provider, engine.settings)
    # E3: with an LLM configured, follow-ups are rewritten by it (timeout, per-conversation cache).
    rewriter = LlmRewriter(answerer) if answerer is not None else None
    # E5-E7: the modes' LLM steps go to the same model (without one, their heuristics run).
    engine.mode_llm = LlmSteps(answerer) if answerer is not None else None

    pipeline = AskPipeline(engine, store, cache=cache, answerer=answerer, rewriter=rewriter, provider=provider)
    engine.cache_recipe()  # (hashes the model files the settings name now, not in the first request)

    auth = Authenticator(store, admin_token, max_token_lifetime_s=engine.settings.visitor_token_max_s)

    def identity(request: Request, authorization: str | None = Header(None)) -> Identity:
        """Who calls (401 when no usable credential); browser-facing ones are rate-limited here (429)."""
        who = auth.resolve(authorization)
        if who.rate_key is not None:
            limits.check(who.rate_key, request.client.host if request.client else "-")
        return who

    def org_with(needed: Scope) -> Callable[..., str]:
        def org_of(who: Identity = Depends(identity)) -> str:
            return who.require(needed)
        return org_of

    org_of = org_with(Scope.INGEST)  # sources, agents, gaps, usage, probe

    conversations = ConversationIds(store.server_secret("conversations"))

    def conversation_for(who: Identity, asked: str | None) -> str | None:
        """A browser-facing credential continues only conversations issued to it, and gets a new
        one when it names none (see :mod:`electa.auth.conversations`)."""
        owner = who.conversation_owner
        if owner is None:
            return asked
        if asked is None:
            return conversations.issue(owner)
        if not conversations.valid(asked, owner):
            raise ScopeError("this conversation_id was not issued to this key or visitor: omit it to start a"
                             " conversation, then send back the conversation_id that `done` returns")
        return asked

    def searcher(who: Identity = Depends(identity)) -> Identity:  # search, ask, feedback
        who.require(Scope.SEARCH)
        return who

    def admin(who: Identity = Depends(identity)) -> None:
        who.require_admin_token()

    def org_admin(org: str, who: Identity = Depends(identity)) -> None:
        who.require_admin_of(org)

    @app.exception_handler(AuthError)
    def auth_error(_request: Any, exc: AuthError) -> Any:
        if isinstance(exc, RateLimited):
            return JSONResponse({"detail": str(exc)}, status_code=429,
                                headers={"Retry-After": str(max(1, math.ceil(exc.retry_after)))})
        if isinstance(exc, ScopeError):
            return JSONResponse({"detail": str(exc)}, status_code=403)
        return JSONResponse({"detail": str(exc)}, status_code=401, headers={"WWW-Authenticate": "Bearer"})

    @app.exception_handler(ElectaError)
    def electa_error(_request: Any, exc: ElectaError) -> Any:
        status = 404 if isinstance(exc, NotFoundError) else 422
        return JSONResponse({"detail": str(exc)}, status_code=status)

    @app.exception_handler(RequestValidationError)
    def invalid(_request: Any, exc: RequestValidationError) -> Any:
        """FastAPI's own 422, minus what JSON cannot carry (a NaN echoed back crashed it into a 500)."""
        return JSONResponse({"detail": [json_safe(e) for e in exc.errors()]}, status_code=422)

    @app.exception_handler(Exception)
    def unexpected(_request: Any, exc: Exception) -> Any:
        """A fixed description and an incident id; the exception itself goes to the server log."""
        incident = new_incident()
        log.error("unexpected error (incident %s)", incident, exc_info=exc)
        return JSONResponse({"detail": f"internal error; quote incident {incident}", "incident": incident},
                            status_code=500)

    # Outside AllowEveryMethod: a preflight of a browser route is answered, not refused as a 405.
    app.add_middleware(BrowserCors, origins=allowed_origins(engine.settings.widget_origins), on_error=unexpected)
    add_pages(app, demo_key)  # the pages people use (issue 13): /ui/search, /ui/admin, the widget

    @app.get("/healthz")
    def healthz() -> dict[str, object]:
        # Redis being down degrades (no shared cache, per-process limits) but fails nothing: still ok.
        # The reason names servers: it goes to the log, not to this unauthenticated route.
        backend = "memory" if link is None else "redis"
        state = "ok" if link is None or link.ping() == "ok" else "unavailable"
        return {"ok": True, "legs": {n: leg.available() for n, leg in engine.legs.items()},
                "cache": {"backend": backend, "status": state},
                "rate_limits": {"backend": backend, "status": state if state == "ok" else "in-process fallback"}}

    @app.post("/v1/orgs", status_code=201, dependencies=[Depends(admin)], responses=AUTHED)
    def create_org(body: OrgIn) -> dict[str, str]:
        store.add_organisation(body.name)
        return {"name": body.name}

    @app.post("/v1/orgs/{org}/keys", status_code=201, dependencies=[Depends(org_admin)], responses={**AUTHED, **errors(404)})
    def create_key(org: str, body: KeyIn) -> dict[str, object]:
        if body.expires_in_s is not None and body.expires_at is not None:
            raise HTTPException(422, "give expires_in_s or expires_at, not both")
        now = time.time()
        expires = now + body.expires_in_s if body.expires_in_s is not None else body.expires_at
        key, record = store.add_api_key(org, body.scope, body.name, expires)
        return {**record.public(now), "key": key, "note": "shown once; only its hash is stored"}

    @app.get("/v1/orgs/{org}/keys", dependencies=[Depends(org_admin)], responses={**AUTHED, **errors(404)})
    def list_keys(org: str) -> list[dict[str, object]]:
        now = time.time()
        return [record.public(now) for record in store.api_keys(org)]

    @app.delete("/v1/orgs/{org}/keys/{key_id}", dependencies=[Depends(org_admin)], responses={**AUTHED, **errors(404)})
    def revoke_key(org: str, key_id: int) -> dict[str, object]:
        return store.revoke_api_key(org, key_id).public(time.time())

    @app.post("/v1/orgs/{org}/signing-secret", status_code=201, dependencies=[Depends(org_admin)],
              responses={**AUTHED, **errors(404)})
    def rotate_signing_secret(org: str) -> dict[str, str]:
        return {"org": org, "secret": store.rotate_signing_secret(org),
                "note": "shown once; visitor tokens signed with the previous secret stop working"}

    @app.get("/v1/agents/{agent}", responses=AUTHED)
    def get_agent(agent: str, org: str = Depends(org_of)) -> dict[str, object]:
        """The agent's settings. Its ranker (`electa train-ltr`) is shown by what it is (id,
        features, depth, what it was trained on, its cross-validated figures and feature
        importances), not by its trees: a few hundred kilobytes of arrays no reader needs. Its
        reranker (`electa train-rerank`) likewise, and each says why searches do not use it
        when they do not (``problem``)."""
        stored = store.agent_settings(org, agent) or {}
        ranker = stored.get("ltr")
        if isinstance(ranker, dict):
            # Why searches do not use it (stale or corrupt), as each search's ltr stage says.
            found = engine.ltr_models.resolve(stored, Caller(org, agent))
            problem = {"problem": found} if isinstance(found, str) else {}
            stored = {**stored, "ltr": {**{k: v for k, v in ranker.items() if k != "trees"}, **problem}}
        own = stored.get("reranker")  # its own reranker (`electa train-rerank`): why it is not used, if it is not
        if own is not None:
            why = engine.agent_rerankers.problem(Caller(org, agent), own)
            stored = {**stored, "reranker": {**(own if isinstance(own, dict) else {}), **({"problem": why} if why else {})}}
        return stored

    @app.put("/v1/agents/{agent}", responses=AUTHED)
    def put_agent(agent: str, body: AgentIn, org: str = Depends(org_of)) -> dict[str, object]:
        current = store.agent_settings(org, agent) or {}
        current["profile"] = body.model_dump(exclude={"threshold", "calibrated_floor", "top_k", "weights", "mode"})
        current["retrieval"] = {"threshold": body.threshold, "calibrated_floor": body.calibrated_floor,
                                "top_k": body.top_k, "weights": body.weights.as_dict() if body.weights else None,
                                "mode": body.mode}
        store.set_agent_settings(org, agent, current)
        return current

    @app.post("/v1/sources", status_code=201, responses={**AUTHED, **errors(413)})
    def upload(body: SourceIn, org: str = Depends(org_of)) -> dict[str, object]:
        try:
            data = base64.b64decode(body.content, validate=True) if body.base64 else body.content.encode("utf-8")
        except (binascii.Error, ValueError) as exc:
            raise HTTPException(422, f"content is not valid base64: {exc}") from exc
        if len(data) > engine.settings.max_file_mb * 2**20:
            raise HTTPException(413, f"{body.name} is over the {engine.settings.max_file_mb:g} MB limit")
        try:
            loaded = loader_for(body.name)(body.name, data)
        except IngestError as exc:
            raise HTTPException(422, str(exc)) from exc
        access = Access(org, body.agent, public=body.public, principals=tuple(body.principals))
        outcome = engine.ingest_loaded(body.name, loaded, access, kind="api", url=body.url)
        return {"uri": outcome.uri, "status": outcome.status, "version": outcome.version,
                "documents": outcome.documents, "duplicates": outcome.duplicates}

    @app.get("/v1/sources", responses=AUTHED)
    def list_sources(org: str = Depends(org_of)) -> list[dict[str, object]]:
        return store.list_sources(org)

    @app.get("/v1/sources/flagged", responses=AUTHED)
    def flagged_sources(agent: str | None = Query(None), org: str = Depends(org_of)) -> list[dict[str, object]]:
        """The organisation's units holding instructions addressed to the assistant (see
        ``electa.ingest.injection``), for a person to look at: quarantined, never quoted."""
        return store.flagged(org, agent)

    @app.delete("/v1/sources", responses={**AUTHED, **errors(404)})
    def delete_source(uri: str = Query(...), agent: str = Query("default"), org: str = Depends(org_of)) -> dict[str, object]:
        return {"uri": uri, "removed_units": engine.delete_source(org, agent, uri)}

    def run_search(body: SearchIn, caller: Caller, trusted: bool,
                   stored: dict[str, object] | None = None, person: Person | str | None = None) -> dict[str, object]:
        result = engine.search(body.query, caller, top=body.top, weights=body.weights.as_dict() if body.weights else None,
                               k=body.k, floor=body.floor, calibrated_floor=body.calibrated_floor,
                               page_url=body.page_url, agent_settings=stored, judges=body.judges, person=person,
                               mode=body.mode if trusted else None)
        # Why a leg is unavailable names server files and packages: for the organisation's backend only.
        # (and how many units a leg still lacks counts every tenant's: said to the backend alone)
        detail = (lambda r: r.detail) if trusted else (
            lambda r: "unavailable on this server" if r.status is LegStatus.UNAVAILABLE
            else "" if r.status is LegStatus.OK else r.detail)
        return {"query": body.query, "hits": [hit_json(h, server_paths=False) for h in result.hits],
                "legs": [{"leg": r.leg, "status": r.status.value, "ms": round(r.elapsed_ms, 2), "detail": detail(r)}
                         for r in result.legs],
                "timings_ms": {k: round(v, 2) for k, v in result.timings_ms.items()},
                "stages": [stage_json(st, detail=trusted) for st in result.stages],
                "mode": result.mode.as_json() if result.mode is not None else None}

    @app.post("/v1/search", responses=AUTHED)
    def search(body: SearchIn, who: Identity = Depends(searcher)) -> dict[str, object]:
        caller = who.caller(body.agent, body.principals)
        named = who.person(body.user)
        # What the person's feedback taught is read once: the key holds its digest (a new vote or an
        # opt-out is seen at once), and the search uses that very read.
        person = engine.person(caller, named) if named else None
        # The agent's settings (tuned fusion, calibration) shape the result: their digest is in the key.
        # Read once: the search uses the very settings the key was made from.
        stored = store.agent_settings(caller.org, caller.agent) if caller.agent else None
        agent_digest = settings_digest(stored)
        trusted = who.conversation_owner is None  # the organisation's backend sees why a leg is out
        key = cache.key("search", caller, "-", body.query, body.page_url, store.version,
                        json.dumps([engine.cache_recipe(caller, stored), body.top,
                                    body.weights.as_dict() if body.weights else None, body.k,
                                    body.floor, body.calibrated_floor, agent_digest, trusted, body.judges,
                                    person.digest if person else None, body.mode if trusted else None], sort_keys=True))
        cached = cache.get(key)
        if cached is not None:
            return {**cached, "cached": True}
        out = run_search(body, caller, trusted, stored or {}, person)
        if worth_caching(out):  # (a leg out on this worker, its model missing, is in the key)
            cache.put(key, out)
        # A shared cache that is down was skipped; the search itself did not need it.
        return {**out, "cached": False, **({"cache": "unavailable"} if cache.status != "ok" else {})}

    @app.post("/v1/probe", responses=AUTHED)
    def probe(body: SearchIn, org: str = Depends(org_of)) -> dict[str, object]:
        """Every candidate with per-leg scores and whether it passes; never cached, stores nothing."""
        return run_search(body, Caller(org, body.agent, frozenset(body.principals)), True, person=body.user)

    @app.post("/v1/ask", response_class=EventStreamResponse, description=SSE_CONTRACT,
              responses={200: {"description": "The answer as Server-Sent Events (see above).",
                               "content": {"text/event-stream": {"schema": SSE_STREAM, "itemSchema": SSE_EVENT}}},
                         **json_errors(400, 401, 403, 404, 422, 429)})
    def ask(body: AskIn, who: Identity = Depends(searcher)) -> StreamingResponse:
        caller = who.caller(body.agent, body.principals)
        history = tuple(Turn(t.question, t.answer) for t in body.history) or None
        stream = pipeline.run(AskRequest(body.question, caller, body.page_url,
                                         conversation_for(who, body.conversation_id), history,
                                         person=who.person(body.user)))
        # The first event is computed before the response starts, so a request the engine refuses
        # (an index that needs `electa reindex`, bad stored settings) is a status code, not a broken stream.
        first = next(stream)
        return EventStreamResponse(sse_frames(first, stream), headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @app.post("/v1/feedback", status_code=201, responses=AUTHED)
    def feedback(body: FeedbackIn, request: Request, who: Identity = Depends(searcher)) -> dict[str, str]:
        org = who.caller(body.agent, ()).org  # a visitor token for one agent gives feedback on that agent only
        owner = who.conversation_owner
        # A browser-facing credential is anyone on the web: its feedback is kept apart (see golden sets).
        anonymous = who.kind is Credential.KEY and request.client is not None  # a shared page key: tell visitors apart
        voter = "" if owner is None else owner + (f"@{request.client.host}" if anonymous and request.client else "")
        store.add_feedback(org, body.agent, body.query, body.url, 1 if body.positive else -1,
                           origin="backend" if owner is None else "visitor", voter=voter,
                           person=who.person(body.user) or "")
        return {"status": "recorded"}

    def person_of(user: str, who: Identity) -> tuple[str, str]:
        """A person's own settings and history: the organisation's backend for any of its users, a
        visitor token for its own subject; a search key for nobody."""
        org = who.require(Scope.SEARCH)
        if who.kind is Credential.VISITOR and who.subject != user:
            raise ScopeError("a visitor token manages its own user only (its subject)")
        if who.kind is not Credential.VISITOR and who.scope is Scope.SEARCH:
            raise ScopeError("a search key cannot manage a user (anyone can read it in page source);"
                             " use a visitor token for that user, or the organisation's backend")
        return org, user

    @app.put("/v1/users/{user}/personalisation", responses=AUTHED)
    def set_personalisation(body: PersonalisationIn, user: str = Path(min_length=1, max_length=200, pattern=USER_PATTERN),
                            who: Identity = Depends(searcher)) -> dict[str, object]:
        """Opt a user in (the default) or out of personalisation (SPEC D3)."""
        org, person = person_of(user, who)
        store.set_personalise(org, person, body.enabled)
        return {"user": person, "personalisation": body.enabled}

    @app.delete("/v1/users/{user}/history", responses=AUTHED)
    def forget_user(user: str = Path(min_length=1, max_length=200, pattern=USER_PATTERN),
                    who: Identity = Depends(searcher)) -> dict[str, object]:
        """Delete a user's feedback (what personalises their searches); an opt-out stays."""
        org, person = person_of(user, who)
        return {"user": person, "deleted": store.forget_person(org, person)}

    add_console_routes(app, engine, org_of)  # gaps, curated answers, feedback, eval

    @app.get("/v1/usage", responses=AUTHED)
    def usage(org: str = Depends(org_of)) -> dict[str, object]:
        return {"usage": store.usage(org)}  # the result cache's counters span every organisation: not shown

    return app
