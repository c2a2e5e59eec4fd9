"""What the admin console (issue 13) needs of the API beyond the routes it shares: content gaps
that say whether they are answered, an answer written for one (``POST /v1/curated``: a Q&A pair
and, for a longer question, a curated answer, as one source), the agent's feedback listed, and
the agent's retrieval measured on its golden set (``POST /v1/eval``). Every route takes the
organisation from the credential (an ingest or admin key), never from the request.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException
from pydantic import BaseModel, ConfigDict, Field, field_validator

from electa.api.contract import AUTHED, JsonInt, errors
from electa.engine import Engine
from electa.ingest.page import Loaded
from electa.stores.sqlite_ops import normalise_trigger
from electa.types import Access, Caller, CuratedAnswer, QAPair

# A question of fewer words answered in the console gets a Q&A pair only: as a curated trigger it
# would take over every longer question that holds it.
MIN_QUESTION_TRIGGER_WORDS = 4
FEEDBACK_SHOWN = 500


class CuratedIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    question: str = Field(min_length=1, max_length=2000, description="The question it answers (a content gap's). Of "
                          "four words or more, asked again or inside a longer question, it gets this answer at once;"
                          " a question that means the same finds it by meaning (the Q&A leg).")
    answer: str = Field(min_length=1, max_length=4000)
    url: str = Field("", max_length=2000, description="The page it points to (http or https), if any.")
    agent: str = "default"
    triggers: list[Annotated[str, Field(min_length=1, max_length=300, pattern=r"\S")]] = Field(
        [], max_length=20, description="Other phrasings that trigger it too, wherever they appear in a question"
                                       " (two words or more).")

    @field_validator("url")
    @classmethod
    def _web_page(cls, url: str) -> str:
        if url and not re.fullmatch(r"(?i)https?://[^\s]+", url):
            raise ValueError("the url must be an http(s) address, or empty")
        return url


class EvalIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    agent: str = "default"
    visitors: bool = Field(False, description="Count visitors' feedback too (search keys, visitor tokens), once per visitor.")
    limit: JsonInt = Field(200, ge=1, le=500, description="At most this many of the golden set's questions.")


def add_console_routes(app: FastAPI, engine: Engine, org_of: Callable[..., str]) -> None:
    """``GET /v1/gaps``, ``POST /v1/curated``, ``GET /v1/feedback`` and ``POST /v1/eval`` on
    ``app``, each behind ``org_of`` (the dependency that yields the caller's organisation)."""
    store = engine.store

    def written_for(question: str) -> str:
        """The source ``POST /v1/curated`` stores an answer to ``question`` in: one per question
        as its words read (case, spacing and punctuation aside)."""
        return "curated/" + hashlib.sha256(normalise_trigger(question).encode()).hexdigest()[:16]

    @app.get("/v1/gaps", responses=AUTHED)
    def gaps(agent: str | None = None, org: str = Depends(org_of)) -> list[dict[str, object]]:
        """Recorded gaps, newest first (500 at most); ``answered`` says whether an answer was
        written for the question (``POST /v1/curated``) and is still stored."""
        rows = store.gaps(org, agent)
        answered: dict[tuple[str, str], bool] = {}
        for row in rows:
            asked = (str(row["agent"]), written_for(str(row["question"])))
            if asked not in answered:
                answered[asked] = store.source(org, *asked) is not None
            row["answered"] = answered[asked]
        return rows

    @app.post("/v1/curated", status_code=201, responses=AUTHED)
    def add_curated(body: CuratedIn, org: str = Depends(org_of)) -> dict[str, object]:
        """An answer written for a question (a content gap's): a Q&A pair that the Q&A leg finds
        for questions that mean the same and, for a question of four words or more, a curated
        answer given at once when a question holds it; ``triggers`` add phrasings that do too.
        (A curated trigger meets every question it appears in: a short one, "my account", would
        take over "how do I delete my account?".) Stored as one public source
        ``curated/<digest of the question's words>``: writing the same question again
        (whatever its case or punctuation) replaces it, and deleting the source
        (``DELETE /v1/sources``) removes both."""
        question = " ".join(body.question.split())
        uri = written_for(question)
        whole = [question] if len(normalise_trigger(question).split()) >= MIN_QUESTION_TRIGGER_WORDS else []
        triggers = tuple(dict.fromkeys([*whole, *(" ".join(t.split()) for t in body.triggers)]))
        loaded = Loaded(qa_pairs=[QAPair(f"{uri}#qa", question, body.answer, body.url)],
                        curated=[CuratedAnswer(f"{uri}#curated", triggers, body.answer, body.url)] if triggers else [])
        outcome = engine.ingest_loaded(uri, loaded, Access(org, body.agent), kind="api", url=body.url)
        return {"uri": outcome.uri, "status": outcome.status, "version": outcome.version, "triggers": list(triggers)}

    @app.get("/v1/feedback", responses=AUTHED)
    def list_feedback(agent: str = "default", visitors: bool = False,
                      org: str = Depends(org_of)) -> list[dict[str, object]]:
        """The agent's feedback: each question and page with its net vote, each voter counted
        once (the organisation's backend's; visitors' too with ``visitors=true``); the first
        500 by question."""
        return [{"query": q, "url": u, "net": n} for q, u, n in store.feedback(org, agent, visitors)[:FEEDBACK_SHOWN]]

    evaluating: set[str] = set()  # organisations whose evaluation runs now (one each at a time)
    evaluating_lock = threading.Lock()

    @app.post("/v1/eval", responses={**AUTHED, **errors(409)})
    def evaluate_agent(body: EvalIn, org: str = Depends(org_of)) -> dict[str, object]:
        """The agent's retrieval measured on its golden set (its curated Q&A with a URL and its
        feedback): nDCG@10, MRR@10, Recall@10/100 and MAP@100 of each leg (the Q&A leg's
        other pairs included), their fusion and the scored order, with recall against depth and latency (as `electa eval
        --agent`). With the server's fusion settings and no judges: the agent's tuned fusion and
        its own reranker and ranker are not applied (its ranker learned from these very
        questions). Each question's own Q&A pair is left out of the lists (found by its words, it
        would score itself). One at a time per organisation (409 while one runs)."""
        from electa.eval.golden import golden_set
        from electa.eval.runner import evaluate

        golden = golden_set(store, org, body.agent, body.visitors)
        if not golden.queries:
            raise HTTPException(422, f"agent {body.agent!r} has no golden set yet: curated Q&A with a URL, or feedback")
        with evaluating_lock:
            if org in evaluating:
                raise HTTPException(409, "this organisation's evaluation is already running: wait for it")
            evaluating.add(org)
        try:
            report = evaluate(engine, golden, "golden", caller=Caller(org, body.agent), key="url",
                              limit=body.limit, judges=[], own_pairs=True)
        finally:
            with evaluating_lock:
                evaluating.discard(org)
        return {"agent": body.agent, "queries": report.queries, "metrics": report.metrics,
                "recall_curve": report.recall_curve, "latency_ms": report.latency_ms}
