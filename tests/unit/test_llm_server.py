"""``electa serve-llm`` without a model: requests too large for the model get 413 before they
queue, a request that waits too long for the model gets 503 with Retry-After, a generation its
reader gave up on is waited for before the next, and the server will not listen beyond loopback
without an API key. In-process (Starlette's TestClient) with a fake model; the real process
with SmolLM2 is tests/integration/test_llm_server.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from electa.answer.local_llm import LocalGgufAnswerer, LocalModel
from electa.answer.openai_http import AnswererError
from electa.answer.prompt import Message, Prompt
from electa.api.llm_server import check_exposure, create_llm_app
from electa.errors import ConfigError

TEMPLATE = 10  # tokens the fake chat template adds around the messages
CHAT = "/v1/chat/completions"


class FakeTokenizer:
    """One token per word, plus TEMPLATE for the chat template; remembers what it was given."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[dict[str, str]], bool]] = []

    def apply_chat_template(self, messages: list[dict[str, str]], add_generation_prompt: bool = False,
                            **kwargs: Any) -> dict[str, list[int]]:
        self.calls.append((messages, add_generation_prompt))
        return {"input_ids": list(range(TEMPLATE + sum(len(m["content"].split()) for m in messages)))}


class FakeModel(LocalGgufAnswerer):
    """A model that answers at once, or when ``gate`` opens; ``idle`` is what wait_idle sees."""

    def __init__(self) -> None:
        super().__init__(None, max_new_tokens=999)
        self.tokenizer = FakeTokenizer()
        self.gate, self.started, self.idle = threading.Event(), threading.Event(), threading.Event()
        self.gate.set()
        self.idle.set()
        self.caps: list[int] = []
        self.events: list[str] = []

    def load(self) -> tuple[Any, Any]:
        return self.tokenizer, None

    def stream(self, prompt: Prompt, question: str) -> Iterator[str]:
        self.caps.append(self.max_new_tokens)
        self.events.append("generate")
        self.started.set()
        assert self.gate.wait(10)
        yield from ["Refunds ", "take ", "30 days."]

    def wait_idle(self, timeout: float | None = None) -> bool:
        self.events.append("wait_idle")
        return self.idle.wait(timeout)


def body(words: int = 5, max_tokens: int | None = None, stream: bool = False) -> dict[str, object]:
    out: dict[str, object] = {"messages": [{"role": "system", "content": "Be brief."},
                                           {"role": "user", "content": " ".join(["word"] * words)}], "stream": stream}
    if max_tokens is not None:
        out["max_tokens"] = max_tokens
    return out


def client(model: FakeModel, **kwargs: Any) -> TestClient:
    return TestClient(create_llm_app(model, "fake", **kwargs))


# -- (1) size caps -----------------------------------------------------------------------------------
def test_a_prompt_over_the_token_limit_gets_413_naming_it() -> None:
    model = FakeModel()
    c = client(model, max_tokens=20, max_context_tokens=50)
    # system 2 words + user 25 + template 10 = 37 tokens; + 20 to write = 57 > 50.
    r = c.post(CHAT, json=body(25))
    assert r.status_code == 413 and "50" in r.json()["detail"] and "--max-prompt-tokens" in r.json()["detail"]
    assert "37 tokens" in r.json()["detail"] and "20 more" in r.json()["detail"]
    assert model.events == []  # refused before it queued or generated
    # The count is of the chat-templated prompt, with the assistant turn opened.
    messages, opened = model.tokenizer.calls[-1]
    assert [m["role"] for m in messages] == ["system", "user"] and opened
    # Asking for fewer answer tokens fits: 37 + 13 = 50.
    r = c.post(CHAT, json=body(25, max_tokens=13))
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "Refunds take 30 days."
    assert model.caps == [13]
    # A request asking for more than --max-tokens is capped at it, and counted as it: 37 + 20 > 50.
    assert c.post(CHAT, json=body(25, max_tokens=5000)).status_code == 413


def test_messages_over_the_character_cap_get_413() -> None:
    model = FakeModel()
    c = client(model, max_chars=100, max_context_tokens=10_000)
    two = {"messages": [{"role": "user", "content": "x" * 60}, {"role": "user", "content": "y" * 60}]}
    r = c.post(CHAT, json=two)
    assert r.status_code == 413 and "120 characters" in r.json()["detail"] and "at most 100" in r.json()["detail"]
    assert model.tokenizer.calls == [] and model.events == []
    assert c.post(CHAT, json={"messages": [{"role": "user", "content": "x" * 100}]}).status_code == 200


def test_a_body_larger_than_any_allowed_request_is_refused_unread() -> None:
    c = client(FakeModel(), max_chars=100)  # limit: 6 * 100 + 64 KiB
    big = b'{"messages": [{"role": "user", "content": "' + b"x" * 70_000 + b'"}]}'
    r = c.post(CHAT, content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and "bytes" in r.json()["detail"]
    chunked = c.post(CHAT, content=iter([big[:40_000], big[40_000:]]), headers={"content-type": "application/json"})
    assert chunked.status_code == 413
    small = b'{"messages": [{"role": "user", "content": "hi"}]}'
    assert c.post(CHAT, content=iter([small[:10], small[10:]]), headers={"content-type": "application/json"}).status_code == 200


# -- (2) waiting for the model ---------------------------------------------------------------------------
def test_a_request_that_waits_past_the_queue_timeout_gets_503_busy() -> None:
    model = FakeModel()
    model.gate.clear()
    c = client(model, queue_timeout_s=0.3)
    first: list[Any] = []
    holder = threading.Thread(target=lambda: first.append(c.post(CHAT, json=body())))
    holder.start()
    assert model.started.wait(10)
    t0 = time.monotonic()
    r = c.post(CHAT, json=body())
    assert 0.25 <= time.monotonic() - t0 < 5
    assert r.status_code == 503 and r.json()["detail"].startswith("busy, retry") and int(r.headers["Retry-After"]) > 0
    model.gate.set()
    holder.join(10)
    assert first[0].status_code == 200
    assert c.post(CHAT, json=body()).status_code == 200  # the lock came back


def test_a_streamed_answer_gives_the_model_back_when_it_ends() -> None:
    c = client(FakeModel(), queue_timeout_s=0.3)
    r = c.post(CHAT, json=body(stream=True))
    assert r.status_code == 200 and r.text.endswith("data: [DONE]\n\n") and "Refunds " in r.text
    assert c.post(CHAT, json=body(stream=True)).status_code == 200
    assert c.post(CHAT, json=body()).status_code == 200


# -- (4) an abandoned generation still running ------------------------------------------------------------
def test_the_next_generation_waits_for_an_abandoned_one_to_end() -> None:
    model = FakeModel()
    model.idle.clear()  # a generation its reader gave up on is still reading its prompt
    c = client(model, queue_timeout_s=0.3)
    r = c.post(CHAT, json=body())
    assert r.status_code == 503 and "Retry-After" in r.headers
    assert model.events == ["wait_idle"]  # it never started a second generation on top
    model.idle.set()
    assert c.post(CHAT, json=body()).status_code == 200
    assert model.events[-2:] == ["wait_idle", "generate"]


class _Stuck:
    """A model still in its prefill: it ignores the stopping criteria until ``release`` is set."""

    def __init__(self) -> None:
        self.release, self.entered = threading.Event(), threading.Event()

    def generate(self, ids: Any, **kwargs: Any) -> None:
        self.entered.set()
        self.release.wait(30)


class _StuckAnswerer(LocalGgufAnswerer):
    def __init__(self, stuck: _Stuck) -> None:
        super().__init__(LocalModel("stuck", __import__("pathlib").Path("/nonexistent"), "stuck.gguf"),
                         deadline_s=0.3, threads=0)
        self.stuck = stuck

    def load(self) -> tuple[Any, Any]:
        import torch

        class Tok:
            eos_token_id = 0

            def apply_chat_template(self, messages: Any, **kwargs: Any) -> Any:
                return torch.tensor([[1, 2, 3]])

        return Tok(), self.stuck


def test_wait_idle_sees_a_generation_the_reader_gave_up_on() -> None:
    pytest.importorskip("torch")
    stuck = _Stuck()
    answerer = _StuckAnswerer(stuck)
    prompt = Prompt((Message("user", "hi"),))
    t0 = time.monotonic()
    with pytest.raises(AnswererError, match="stalled"):
        "".join(answerer.stream(prompt, "hi"))
    assert time.monotonic() - t0 < 10  # the reader is not held past its deadline and the 2 s join
    assert stuck.entered.is_set()
    assert not answerer.wait_idle(0.1)  # the generation thread outlived the join: still running
    assert not answerer.with_max_new_tokens(5).wait_idle(0.0)  # a copy for one request sees it too
    stuck.release.set()
    assert answerer.wait_idle(10)
    assert LocalGgufAnswerer(None).wait_idle(0.0)  # nothing ever ran


# -- (3) exposure ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2", "[::1]"])
def test_loopback_needs_no_key(host: str) -> None:
    check_exposure(host, None)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "llm.internal"])
def test_another_host_needs_a_key(host: str) -> None:
    with pytest.raises(ConfigError, match="ELECTA_LLM_API_KEY"):
        check_exposure(host, None)
    check_exposure(host, "a-key")


def test_serve_llm_refuses_a_public_host_without_a_key_before_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    from electa.cli.main import cli

    monkeypatch.delenv("ELECTA_LLM_API_KEY", raising=False)
    loaded: list[bool] = []
    monkeypatch.setattr(LocalGgufAnswerer, "load", lambda self: loaded.append(True))
    result = CliRunner().invoke(cli, ["serve-llm", "--model", "smollm2", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and not loaded
    assert "--host 0.0.0.0" in result.output and "ELECTA_LLM_API_KEY" in result.output
