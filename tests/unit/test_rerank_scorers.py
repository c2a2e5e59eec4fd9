"""Pair scorers behind the rerank judge (SPEC D1): a real HTTP /rerank endpoint in both common
shapes, the answer model as a pointwise judge, and the registry's errors."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from electa import Caller, ConfigError, Settings
from electa.errors import JudgeError
from electa.judges import Funnel, RerankJudge, build_funnel
from electa.judges.scorers import HttpRerankScorer, LlmPointwiseScorer, open_scorer, rerank_scores
from electa.testing.fakes import ScriptedAnswerer
from electa.types import ChunkKind, Hit


class RerankServer(ThreadingHTTPServer):
    """A /rerank endpoint scoring by shared words; ``mode`` makes it answer TEI's shape,
    Cohere's, an error or garbage. It keeps the requests it got."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.mode = "tei"
        self.requests: list[dict[str, Any]] = []


class _Handler(BaseHTTPRequestHandler):
    server: RerankServer

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"body": body, "auth": self.headers.get("Authorization")})
        texts = body.get("texts") or body.get("documents") or []
        words = set(body["query"].split())
        scored = sorted(((i, float(len(words & set(t.split())))) for i, t in enumerate(texts)), key=lambda r: -r[1])
        mode = self.server.mode
        if mode == "tei":
            payload: Any = [{"index": i, "score": s} for i, s in scored]
        elif mode == "cohere":
            payload = {"id": "x", "results": [{"index": i, "relevance_score": s} for i, s in scored]}
        elif mode == "missing":
            payload = [{"index": i, "score": s} for i, s in scored[:-1]]
        elif mode == "error":
            self.send_response(503)
            self.end_headers()
            self.wfile.write(b"overloaded")
            return
        else:
            payload = {"unexpected": True}
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[RerankServer]:
    srv = RerankServer()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def url(srv: RerankServer) -> str:
    return f"http://127.0.0.1:{srv.server_address[1]}/rerank"


PASSAGES = ["pricing page", "refund annual plans", "refund"]


def test_tei_shape_scores_come_back_in_passage_order(server: RerankServer) -> None:
    scorer = open_scorer(url(server))
    assert isinstance(scorer, HttpRerankScorer)
    assert scorer.score("refund annual", PASSAGES) == [0.0, 2.0, 1.0]
    assert server.requests[0]["body"] == {"query": "refund annual", "texts": PASSAGES, "truncate": True}


def test_cohere_shape_sends_the_model_and_key(server: RerankServer) -> None:
    server.mode = "cohere"
    settings = Settings(rerank_api="cohere", rerank_model="rerank-v3.5", rerank_api_key="k-123")
    assert open_scorer(url(server), settings).score("refund annual", PASSAGES) == [0.0, 2.0, 1.0]
    (request,) = server.requests
    assert request["body"]["model"] == "rerank-v3.5" and request["body"]["documents"] == PASSAGES
    assert request["auth"] == "Bearer k-123"


@pytest.mark.parametrize(("mode", "message"), [("error", "answered HTTP 503: overloaded"),
                                               ("missing", "1 of 3 passages came back unscored"),
                                               ("garbage", "expected a list of scores")])
def test_an_endpoint_that_fails_or_answers_nonsense_raises_a_clear_error(server: RerankServer, mode: str,
                                                                         message: str) -> None:
    server.mode = mode
    with pytest.raises(JudgeError, match=message):
        HttpRerankScorer(url(server)).score("refund", PASSAGES)


def test_an_endpoint_that_is_down_fails_soft_in_the_funnel() -> None:
    scorer = HttpRerankScorer("http://127.0.0.1:9/rerank", timeout_s=1.0)  # discard port: nothing listens
    given = [Hit(i, i, 1, ChunkKind.PARENT, "T", t, "", "", 0.0, 0.5, True, ()) for i, t in enumerate(PASSAGES)]
    out, (stage,) = Funnel([RerankJudge(scorer)]).run("refund", Caller("acme"), given)
    assert out == given and stage.note.startswith("error: JudgeError: rerank endpoint")


@pytest.mark.parametrize("payload", [[{"index": 0, "score": 1}, {"index": 0, "score": 2}],
                                     [{"index": 5, "score": 1}], [{"index": True, "score": 1}],
                                     [{"index": 0, "score": "high"}], [{"index": 0, "score": float("nan")}], ["x"]])
def test_malformed_rerank_answers_are_refused(payload: object) -> None:
    with pytest.raises(ValueError):
        rerank_scores(payload, 1 if payload != [{"index": 5, "score": 1}] else 2)


def test_the_answer_model_grades_each_pair_and_a_reply_without_a_digit_fails() -> None:
    assert LlmPointwiseScorer(ScriptedAnswerer(["Grade: ", "7"])).score("q", ["a", "b"]) == [7 / 9, 7 / 9]
    with pytest.raises(JudgeError, match="replied without a grade"):
        LlmPointwiseScorer(ScriptedAnswerer(["I cannot say"])).score("q", ["a"])


def test_the_llm_judge_needs_an_answer_model() -> None:
    with pytest.raises(ConfigError, match="needs an answer model"):
        open_scorer("llm", Settings(answerer="extractive"))


def test_unknown_scorers_and_missing_folders_are_refused_with_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown reranker 'cohere'; valid: onnx:"):
        open_scorer("cohere")
    with pytest.raises(ConfigError, match=r"must hold a tokenizer\.json and model\.onnx"):
        open_scorer(f"onnx:{tmp_path}")


def test_a_reranker_that_cannot_be_made_is_reported_by_every_search_and_the_engine_still_opens(tmp_path: Path) -> None:
    funnel = build_funnel(Settings(rerank=f"onnx:{tmp_path / 'nowhere'}"))
    given = [Hit(0, 0, 1, ChunkKind.PARENT, "T", "t", "", "", 0.0, 0.5, True, ())]
    out, (stage,) = funnel.run("q", Caller("acme"), given, ["rerank"])
    assert out == given and stage.note.startswith("unavailable:") and "nowhere" in stage.note
    # By default no reranker; the agent's ranker (none without a model source) and personalisation
    # (nobody named) are on and wait for what they need.
    assert list(build_funnel(Settings()).judges) == ["personalise"]


def test_scorers_stop_at_the_deadline(server: RerankServer) -> None:
    import time

    assert HttpRerankScorer(url(server)).score("q", PASSAGES, deadline=time.monotonic() - 1) == []
    assert server.requests == []  # no time left: nothing was sent
    assert LlmPointwiseScorer(ScriptedAnswerer(["9"])).score("q", PASSAGES, deadline=time.monotonic() - 1) == []


def test_a_grade_of_ten_is_read_as_the_top_grade_not_as_one() -> None:
    assert LlmPointwiseScorer(ScriptedAnswerer(["10"])).score("q", ["a"]) == [1.0]
