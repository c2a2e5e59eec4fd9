"""``electa serve``: organisations, API keys, sources, search, probe, ask (SSE), feedback, gaps, usage.

Every organisation-scoped route takes ``Authorization: Bearer <api key>``; the key decides the
organisation, never the request body, so a key of organisation A can neither read nor search B.
Admin routes (organisations, keys) take the admin token from ``ELECTA_ADMIN_TOKEN``.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
from collections.abc import Iterator
from typing import Any

from fastapi import Depends, FastAPI, Header, HTTPException, Query
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from electa.answer.answerers import create_answerer
from electa.answer.prompt import AgentProfile, Turn
from electa.answer.rewrite import LlmRewriter
from electa.api.cache import ResultCache
from electa.engine import Engine
from electa.errors import ElectaError, IngestError, NotFoundError
from electa.ingest.loaders import loader_for
from electa.types import Access, Caller, hit_json


class OrgIn(BaseModel):
    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")


class SourceIn(BaseModel):
    name: str = Field(min_length=1, max_length=300, description="File name; its extension picks the loader.")
    content: str = Field(max_length=70_000_000, description="The file's text, or base64 with base64=true.")
    base64: bool = False
    agent: str = "default"
    url: str = ""
    public: bool = True
    principals: list[str] = []


class SearchIn(BaseModel):
    query: str = Field(min_length=1, max_length=2000)
    agent: str | None = None
    principals: list[str] = []
    top: int = Field(10, ge=1, le=100)
    weights: dict[str, float] | None = None
    k: float | None = Field(None, gt=0)
    floor: float | None = Field(None, ge=0, le=1)
    page_url: str | None = None


class TurnIn(BaseModel):
    question: str
    answer: str


class AskIn(BaseModel):
    question: str = Field(min_length=1, max_length=2000)
    agent: str = "default"
    principals: list[str] = []
    page_url: str | None = None
    conversation_id: str | None = Field(None, max_length=200, description="Stored turns of this conversation are "
                                        "the history when `history` is not sent.")
    history: list[TurnIn] = []


class FeedbackIn(BaseModel):
    query: str = Field(min_length=1, max_length=2000)
    url: str = Field(min_length=1, max_length=2000)
    agent: str = "default"
    positive: bool = True


class AgentIn(BaseModel):
    threshold: float | None = Field(None, ge=0, le=1, description="Floor on the relevance score for this agent.")
    top_k: int = Field(4, ge=1, le=20, description="Passages that reach the prompt.")
    weights: dict[str, float] | None = Field(None, description="Per-leg RRF weights for this agent.")
    name: str = "Assistant"
    business: str = ""
    tone: str = "friendly and concise"
    custom_prompt: str = Field("", max_length=4000)
    avoid_topics: list[str] = []
    max_chars: int = Field(1200, ge=100, le=8000)
    language: str = "the language of the visitor's question"


def _bearer(authorization: str | None) -> str:
    if not authorization or not authorization.lower().startswith("bearer "):
        raise HTTPException(401, "send 'Authorization: Bearer <api key>'")
    return authorization[7:].strip()


def create_app(engine: Engine, admin_token: str | None, cache_ttl_s: float = 300.0) -> FastAPI:
    app = FastAPI(title="Electa", version="0.1.0",
                  description="Hybrid retrieval and grounded answers over an organisation's own knowledge.")
    cache = ResultCache(cache_ttl_s)
    store = engine.store
    provider = engine.settings.answerer
    answerer = None if provider == "extractive" else create_answerer(provider, engine.settings)
    # E3: with an LLM configured, follow-ups are rewritten by it (timeout, per-conversation cache).
    rewriter = LlmRewriter(answerer) if answerer is not None else None

    def org_of(authorization: str | None = Header(None)) -> str:
        org = store.org_for_key(_bearer(authorization))
        if org is None:
            raise HTTPException(401, "unknown or revoked API key")
        return org

    def admin(authorization: str | None = Header(None)) -> None:
        if not admin_token:
            raise HTTPException(403, "admin routes are off: set ELECTA_ADMIN_TOKEN to enable them")
        if not hmac.compare_digest(_bearer(authorization), admin_token):
            raise HTTPException(401, "wrong admin token")

    @app.exception_handler(ElectaError)
    def electa_error(_request: Any, exc: ElectaError) -> Any:
        from fastapi.responses import JSONResponse

        status = 404 if isinstance(exc, NotFoundError) else 422
        return JSONResponse({"detail": str(exc)}, status_code=status)

    @app.get("/healthz")
    def healthz() -> dict[str, object]:
        return {"ok": True, "legs": {n: leg.available() for n, leg in engine.legs.items()}}

    @app.post("/v1/orgs", status_code=201, dependencies=[Depends(admin)])
    def create_org(body: OrgIn) -> dict[str, str]:
        store.add_organisation(body.name)
        return {"name": body.name}

    @app.post("/v1/orgs/{org}/keys", status_code=201, dependencies=[Depends(admin)])
    def create_key(org: str) -> dict[str, str]:
        return {"org": org, "key": store.add_api_key(org), "note": "shown once; only its hash is stored"}

    @app.get("/v1/agents/{agent}")
    def get_agent(agent: str, org: str = Depends(org_of)) -> dict[str, object]:
        return store.agent_settings(org, agent) or {}

    @app.put("/v1/agents/{agent}")
    def put_agent(agent: str, body: AgentIn, org: str = Depends(org_of)) -> dict[str, object]:
        current = store.agent_settings(org, agent) or {}
        current["profile"] = body.model_dump(exclude={"threshold", "top_k", "weights"})
        current["retrieval"] = {"threshold": body.threshold, "top_k": body.top_k, "weights": body.weights}
        store.set_agent_settings(org, agent, current)
        return current

    @app.post("/v1/sources", status_code=201)
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
        access = Access(org, body.agent, public=body.public or not body.principals, principals=tuple(body.principals))
        outcome = engine.ingest_loaded(body.name, loaded, access, kind="api", url=body.url)
        return {"uri": outcome.uri, "status": outcome.status, "version": outcome.version,
                "documents": outcome.documents, "duplicates": outcome.duplicates}

    @app.get("/v1/sources")
    def list_sources(org: str = Depends(org_of)) -> list[dict[str, object]]:
        return store.list_sources(org)

    @app.delete("/v1/sources")
    def delete_source(uri: str = Query(...), agent: str = Query("default"), org: str = Depends(org_of)) -> dict[str, object]:
        return {"uri": uri, "removed_units": engine.delete_source(org, agent, uri)}

    def run_search(body: SearchIn, org: str) -> dict[str, object]:
        caller = Caller(org, body.agent, frozenset(body.principals))
        result = engine.search(body.query, caller, top=body.top, weights=body.weights, k=body.k, floor=body.floor,
                               page_url=body.page_url)
        return {"query": body.query, "hits": [hit_json(h) for h in result.hits],
                "legs": [{"leg": r.leg, "status": r.status.value, "ms": round(r.elapsed_ms, 2), "detail": r.detail}
                         for r in result.legs],
                "timings_ms": {k: round(v, 2) for k, v in result.timings_ms.items()}}

    @app.post("/v1/search")
    def search(body: SearchIn, org: str = Depends(org_of)) -> dict[str, object]:
        caller = Caller(org, body.agent, frozenset(body.principals))
        key = cache.key("search", caller, "-", body.query, body.page_url, store.generation,
                        json.dumps([body.top, body.weights, body.k, body.floor], sort_keys=True))
        cached = cache.get(key)
        if cached is not None:
            return {**cached, "cached": True}
        out = run_search(body, org)
        cache.put(key, out)
        return {**out, "cached": False}

    @app.post("/v1/probe")
    def probe(body: SearchIn, org: str = Depends(org_of)) -> dict[str, object]:
        """Every candidate with per-leg scores and whether it passes; never cached, stores nothing."""
        return run_search(body, org)

    @app.post("/v1/ask")
    def ask(body: AskIn, org: str = Depends(org_of)) -> StreamingResponse:
        caller = Caller(org, body.agent, frozenset(body.principals))
        stored = store.agent_settings(org, body.agent) or {}
        key = cache.key("ask", caller, provider, body.question, body.page_url, store.generation,
                        json.dumps(stored, sort_keys=True))
        profile = AgentProfile(**stored.get("profile", {}))  # type: ignore[arg-type]
        retrieval: dict[str, Any] = stored.get("retrieval") or {}  # type: ignore[assignment]
        history = [Turn(t.question, t.answer) for t in body.history]
        if not history and body.conversation_id:
            history = [Turn(q, a) for q, a in store.recent_turns(org, body.agent, body.conversation_id)]

        def events() -> Iterator[bytes]:
            cached = None if history else cache.get(key)  # a follow-up depends on its history: never cached
            recorded: list[tuple[str, dict[str, object]]] = []
            try:
                stream = iter(cached) if cached is not None else (
                    (e.kind, e.data) for e in engine.ask(body.question, caller, history=history,
                                                        page_url=body.page_url, agent=profile, answerer=answerer,
                                                        floor=retrieval.get("threshold"), top_k=retrieval.get("top_k"),
                                                        weights=retrieval.get("weights"),
                                                        rewriter=rewriter.for_conversation(f"{org}|{body.conversation_id}")
                                                        if rewriter and body.conversation_id else None))
                for kind, data in stream:
                    recorded.append((kind, data))
                    if kind == "done":
                        data = {**data, "cached": cached is not None}
                    yield f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n".encode()
            except Exception as exc:
                yield f"event: error\ndata: {json.dumps({'error': str(exc)})}\n\n".encode()
                return
            if cached is None:
                done = recorded[-1][1] if recorded and recorded[-1][0] == "done" else {}
                text = "".join(str(d.get("token", "")) for k, d in recorded if k == "token")
                # After the stream (G6, G7): content gaps and usage, never during it.
                if done.get("strict") or (done.get("low_confidence") and not done.get("small_talk")):
                    store.add_gap(org, body.agent, body.question, float(done.get("confidence", 0.0)),  # type: ignore[arg-type]
                                  "nothing passed the floor" if done.get("strict") else "low confidence")
                store.count_usage(org, body.agent, len(text))
                if body.conversation_id:
                    cites = next((d.get("citations", []) for k, d in recorded if k == "citations"), [])
                    store.add_turn(org, body.agent, body.conversation_id, body.question, text, list(cites),  # type: ignore[call-overload]
                                   float(done.get("confidence", 0.0)))  # type: ignore[arg-type]
                if not history:
                    cache.put(key, recorded)

        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @app.post("/v1/feedback", status_code=201)
    def feedback(body: FeedbackIn, org: str = Depends(org_of)) -> dict[str, str]:
        store.add_feedback(org, body.agent, body.query, body.url, 1 if body.positive else -1)
        return {"status": "recorded"}

    @app.get("/v1/gaps")
    def gaps(agent: str | None = None, org: str = Depends(org_of)) -> list[dict[str, object]]:
        return store.gaps(org, agent)

    @app.get("/v1/usage")
    def usage(org: str = Depends(org_of)) -> dict[str, object]:
        return {"usage": store.usage(org), "cache": {"hits": cache.hits, "misses": cache.misses}}

    return app
