"""The OpenAI-compatible provider against a real HTTP server on loopback that streams chunks."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from electa import Access, Caller, Engine
from electa.answer.openai_http import AnswererError, OpenAICompatibleAnswerer
from electa.answer.prompt import Message, Prompt
from electa.ingest.page import Loaded
from electa.types import Document, Section

pytestmark = pytest.mark.integration

SCRIPT: dict[str, object] = {}


class FakeOpenAI(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        SCRIPT["last_request"] = body
        if SCRIPT.get("status", 200) != 200:
            self.send_response(int(SCRIPT["status"]))  # type: ignore[call-overload]
            self.end_headers()
            self.wfile.write(b'{"error": "overloaded"}')
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for piece in SCRIPT["pieces"]:  # type: ignore[attr-defined]
            if piece == "STALL":
                time.sleep(3)
                continue
            if piece == "CUT":  # the server dies mid-answer: no [DONE], no finish_reason
                return
            chunk = {"choices": [{"delta": {"content": piece}}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_streamed_chunks_numbers_and_zeros_arrive_intact(server: str) -> None:
    SCRIPT.update(status=200, pieces=["The Free plan is $", 0, "/mo and Growth is $", 29, ".", 0.5, " [1]"])
    prompt = Prompt((Message("system", "s"), Message("user", "q")))
    text = "".join(OpenAICompatibleAnswerer(server, "m").stream(prompt, "q"))
    assert text == "The Free plan is $0/mo and Growth is $29.0.5 [1]"
    assert SCRIPT["last_request"]["stream"] is True  # type: ignore[index]
    assert SCRIPT["last_request"]["messages"][0] == {"role": "system", "content": "s"}  # type: ignore[index]


def test_http_error_and_stall_raise(server: str) -> None:
    SCRIPT.update(status=503, pieces=[])
    with pytest.raises(AnswererError, match="HTTP 503"):
        list(OpenAICompatibleAnswerer(server, "m").stream(Prompt(()), "q"))
    SCRIPT.update(status=200, pieces=["Refunds are given ", "CUT"])
    with pytest.raises(AnswererError, match="before the answer was complete"):
        list(OpenAICompatibleAnswerer(server, "m").stream(Prompt(()), "q"))
    SCRIPT.update(status=200, pieces=["Hello", "STALL", "late"])
    with pytest.raises(AnswererError, match="sent nothing"):
        list(OpenAICompatibleAnswerer(server, "m", stall_s=0.5).stream(Prompt(()), "q"))


def test_engine_streams_provider_answer_and_falls_back_when_it_stalls(server: str, engine: Engine,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    text = "Annual plans are refunded within 30 days of purchase."
    engine.ingest_loaded("a", Loaded([Document("r", "Refund policy", text, "https://a/refunds",
                                               sections=(Section((), text),))]), Access("acme"))
    SCRIPT.update(status=200, pieces=["Yes, within ", 30, " days [1]."])
    events = list(engine.ask("refund annual plans", Caller("acme"), answerer=OpenAICompatibleAnswerer(server, "m")))
    answer = "".join(str(e.data["token"]) for e in events if e.kind == "token")
    assert answer == "Yes, within 30 days [1]."
    cites = next(e for e in events if e.kind == "citations").data["citations"]
    assert cites[0]["url"] == "https://a/refunds"  # type: ignore[index]
    SCRIPT.update(status=200, pieces=["Refunds? ", "STALL"])
    started = time.monotonic()
    with caplog.at_level(logging.ERROR, logger="electa.ask"):
        events = list(engine.ask("refund annual plans", Caller("acme"),
                                 answerer=OpenAICompatibleAnswerer(server, "m", stall_s=0.5)))
    done = next(e for e in events if e.kind == "done").data
    assert done["fallback"] == "the answerer failed; answered extractively" and time.monotonic() - started < 3
    # The stall's details go to the log under the incident id; the stream only says a reset happened.
    assert "sent nothing" in caplog.text and str(done["incident"]) in caplog.text
    kinds = [e.kind for e in events]
    assert kinds[:2] == ["token", "reset"] and events[1].data["incident"] == done["incident"]
    assert "30 days" in "".join(str(e.data["token"]) for e in events[2:] if e.kind == "token")
