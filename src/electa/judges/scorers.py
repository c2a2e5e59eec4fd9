"""Pair scorers for the rerank judge (SPEC D1), behind :class:`~electa.judges.rerank.PairScorer`.

- ``onnx:<folder>``: a cross-encoder exported to ONNX (``model.onnx`` or one other ``*.onnx``
  file, and ``tokenizer.json``), run by onnxruntime: the question and the passage are read
  together, so the score sees both. No true cross-encoder ships on PyPI (shared/MODELS.md):
  the folder is one you trained, exported or copied there.
- ``http://…`` / ``https://…``: a rerank endpoint in the common ``/rerank`` shape, either
  Text Embeddings Inference's (``{"query", "texts"}`` → ``[{"index", "score"}]``, the default)
  or Cohere's and Jina's (``{"model", "query", "documents"}`` →
  ``{"results": [{"index", "relevance_score"}]}``; ``ELECTA_RERANK_API=cohere``).
- ``llm``: the configured answer model judges each pair pointwise (a digit from 0 to 9). Slow
  and only as good as the model; it exists for servers with a strong model and no reranker.
- ``nanoranker``: the packaged ``nanoranker`` 1.2 (a dependency of electa, its
  weights in the wheel): Universal Sentence Encoder multilingual plus 64 hashed character
  n-grams for the question and for the passage, each embedded alone, scored together by a small
  network. Not a cross-encoder (shared/MODELS.md), but it runs offline, reads 16 languages, and
  a passage's embedding does not depend on the question, so it is cached.

``open_scorer(spec, settings)`` is the registry; an unknown spec names the valid ones.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from electa.config import Settings
from electa.embedders.minilm import padded
from electa.errors import ConfigError, JudgeError
from electa.judges.rerank import PairScorer
from electa.onnx_int8 import may_saturate

log = logging.getLogger(__name__)

# Word pieces read per pair unless the model folder's electa.json says otherwise: a pair's cost
# grows with it (bench/judge_budget.py measures what a budget buys), and 256 still holds the
# title and the first ~1,000 characters.
MAX_TOKENS = 256


class OnnxCrossEncoder:
    """``OnnxCrossEncoder(Path("models/my-cross-encoder"))``: see the module."""

    def __init__(self, folder: Path, threads: int = 2, max_tokens: int = MAX_TOKENS) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - core dependencies
            raise ConfigError("the onnx cross-encoder needs onnxruntime and tokenizers: `pip install electa`") from exc
        folder = Path(folder)
        model = onnx_model_file(folder)
        if model is None or not (folder / "tokenizer.json").is_file():
            raise ConfigError(f"{folder} must hold a tokenizer.json and model.onnx (or exactly one .onnx file);"
                              f" found {sorted(p.name for p in folder.iterdir()) if folder.is_dir() else 'no folder'}")
        self.name = f"onnx:{folder.name}"
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        try:
            self._session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
            self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as exc:
            raise ConfigError(f"cannot load the cross-encoder in {folder}: {exc}") from exc
        if may_saturate(self._session):
            log.warning("%s was quantised to int8 without Electa's mark of 7-bit weights (an export before"
                        " 2026-12-07, or another tool's): on an x86 CPU without VNNI its products may saturate and"
                        " its scores differ from those it was measured with; train or export it again", model)
        # A model trained by bench/train_cross_encoder.py says how many word pieces it read, and
        # which questions of each set it learned from (a cut tuned on those would read kind scores).
        about = folder / "electa.json"
        #: set name -> the ids of the questions it trained on; None when the model does not say
        self.trained_questions: dict[str, frozenset[str]] | None = None
        if about.is_file():
            try:
                meta = json.loads(about.read_text(encoding="utf-8"))
                max_tokens = int(meta.get("max_tokens", max_tokens))
                trained = meta.get("trained_questions")
                if trained is not None:
                    if not all(isinstance(ids, list) for ids in trained.values()):
                        raise ValueError("trained_questions maps each set's name to a list of question ids")
                    self.trained_questions = {str(name): frozenset(str(q) for q in ids) for name, ids in trained.items()}
            except (ValueError, TypeError, AttributeError) as exc:
                raise ConfigError(f"{about} is not valid: {exc}") from exc
        self.max_tokens = max_tokens
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_tokens)
        self._inputs = {i.name for i in self._session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - self._inputs
        if missing:
            raise ConfigError(f"{model} is not a cross-encoder export: it lacks the inputs {sorted(missing)}")
        shape = self._session.get_outputs()[0].shape
        if len(shape) > 2 or (len(shape) == 2 and isinstance(shape[1], int) and shape[1] > 2):
            raise ConfigError(f"{model} gives {shape} outputs; a cross-encoder gives one logit per pair (or two:"
                              " not relevant, relevant)")
        self._lock = threading.Lock()  # one tokenizer shared by the threads of concurrent searches

    def score(self, query: str, passages: Sequence[str], deadline: float | None = None) -> list[float]:
        if not passages:  # (one batch is one model call: the judge checks the deadline between them)
            return []
        with self._lock:
            encodings = self._tokenizer.encode_batch([(query, p) for p in passages])
        ids, mask, types = padded(encodings)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = types
        logits = np.asarray(self._session.run(None, feed)[0], dtype=np.float64)
        if logits.ndim > 2 or (logits.ndim == 2 and logits.shape[1] > 2):
            raise JudgeError(f"{self.name} gave outputs of shape {logits.shape}: not one or two logits per pair")
        if logits.ndim == 2 and logits.shape[1] == 2:  # two classes: the margin of "relevant"
            return (logits[:, 1] - logits[:, 0]).tolist()
        return logits.reshape(len(passages), -1)[:, 0].tolist()


class HttpRerankScorer:
    """``HttpRerankScorer("http://127.0.0.1:8080/rerank")`` (TEI) or ``…, api="cohere", model="rerank-v3.5"``."""

    def __init__(self, url: str, api: str = "tei", model: str = "", api_key: str | None = None,
                 timeout_s: float = 10.0) -> None:
        import httpx

        if api not in ("tei", "cohere"):
            raise ConfigError(f"unknown rerank API {api!r}; valid names: cohere, tei (Jina's is cohere's shape)")
        self.url, self.api, self.model, self.api_key, self.timeout_s = url, api, model, api_key, timeout_s
        self.name = f"http:{url}"
        self._client = httpx.Client()  # thread-safe; keeps connections for the batches of every search

    def score(self, query: str, passages: Sequence[str], deadline: float | None = None) -> list[float]:
        import httpx

        timeout = self.timeout_s if deadline is None else min(self.timeout_s, deadline - time.monotonic())
        if timeout <= 0 or not passages:
            return []  # (no time left: nothing is sent)
        if self.api == "tei":
            body: dict[str, Any] = {"query": query, "texts": list(passages), "truncate": True}
        else:
            body = {"query": query, "documents": list(passages), "top_n": len(passages)}
            if self.model:
                body["model"] = self.model
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            response = self._client.post(self.url, json=body, headers=headers, timeout=timeout)
        except httpx.HTTPError as exc:
            raise JudgeError(f"rerank endpoint {self.url} failed: {exc}") from exc
        if response.status_code != 200:
            raise JudgeError(f"rerank endpoint {self.url} answered HTTP {response.status_code}: {response.text[:200]}")
        try:
            return rerank_scores(response.json(), len(passages))
        except ValueError as exc:  # (a JSONDecodeError is one)
            raise JudgeError(f"rerank endpoint {self.url}: {exc}") from exc


def rerank_scores(payload: object, n: int) -> list[float]:
    """Scores in passage order from a ``/rerank`` answer: TEI's list of ``{"index", "score"}`` or
    Cohere's and Jina's ``{"results": [{"index", "relevance_score"}]}``. Every passage must be
    scored exactly once with a finite number, or this raises ``ValueError``.

    >>> rerank_scores([{"index": 1, "score": 0.2}, {"index": 0, "score": 0.9}], 2)
    [0.9, 0.2]
    >>> rerank_scores({"results": [{"index": 0, "relevance_score": 0.5}]}, 1)
    [0.5]
    """
    rows = payload.get("results") if isinstance(payload, dict) else payload
    if not isinstance(rows, list):
        raise ValueError(f"expected a list of scores or {{'results': [...]}}, got {type(payload).__name__}")
    scores: list[float | None] = [None] * n
    for row in rows:
        if not isinstance(row, dict):
            raise ValueError(f"a result is {type(row).__name__}, not an object")
        index, value = row.get("index"), row.get("score", row.get("relevance_score"))
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n or scores[index] is not None:
            raise ValueError(f"result index {index!r} is not a new passage index below {n}")
        if not isinstance(value, int | float) or isinstance(value, bool) or not np.isfinite(value):
            raise ValueError(f"passage {index} has no finite score ({value!r})")
        scores[index] = float(value)
    if any(s is None for s in scores):
        raise ValueError(f"{scores.count(None)} of {n} passages came back unscored")
    return [float(s) for s in scores if s is not None]


_GRADE = re.compile(r"\d+")

JUDGE_SYSTEM = ("You grade search results. Given a question and a passage, reply with one digit from 0 to 9:"
                " 9 if the passage answers the question, 0 if it has nothing to do with it. Reply with the digit only.")


class LlmPointwiseScorer:
    """The answer model as a pointwise judge: one short completion per pair, the first digit of
    the reply over 9. A reply with no digit raises (the judge then keeps the previous order)."""

    max_batch = 1  # one pair a call: each grade reaches the judge as soon as it is made

    def __init__(self, answerer: Any, passage_chars: int = 1200) -> None:
        self.answerer = answerer
        self.name = f"llm:{getattr(answerer, 'name', 'answerer')}"
        self.passage_chars = passage_chars

    def score(self, query: str, passages: Sequence[str], deadline: float | None = None) -> list[float]:
        from electa.answer.prompt import Message, Prompt, escape_source

        out: list[float] = []
        for passage in passages:
            if deadline is not None and time.monotonic() >= deadline:
                return out  # the pairs graded so far; the answer model is free for the answer
            prompt = Prompt((Message("system", JUDGE_SYSTEM),
                             Message("user", f"Question: {query}\n\n<source>\n{escape_source(passage[: self.passage_chars])}"
                                             "\n</source>\n\nGrade (0-9):")))
            reply = "".join(self.answerer.stream(prompt, query))
            grade = _GRADE.search(reply)
            if grade is None:
                raise JudgeError(f"{self.name} replied without a grade: {reply[:80]!r}")
            out.append(min(9, int(grade.group())) / 9.0)  # ("10" is read as 9, not as 1)
        return out


class NanorankerScorer:
    """``NanorankerScorer()``: the packaged nanoranker head over cached embeddings (see the module).

    Scores are the head's raw outputs (nanoranker's own ``rank()`` divides them by their sum,
    which makes a batch's scores depend on the rest of the batch; the judge scores in batches).
    A text is embedded from its first :attr:`MAX_CHARS` characters: the package hashes every
    character n-gram in pure Python (~25 ms per 1,000 characters), so a long passage would
    overrun the judge's deadline by seconds between two checks.
    """

    MAX_CHARS = 2000

    def __init__(self, cache_size: int = 20_000) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            import nanoranker

            self.name = f"nanoranker:{version('nanoranker')}"
        except (ImportError, PackageNotFoundError) as exc:
            raise ConfigError("ELECTA_RERANK=nanoranker needs its package: pip install nanoranker==1.2") from exc
        except Exception as exc:  # its ONNX sessions load at import
            raise ConfigError(f"nanoranker failed to load its models: {exc}") from exc
        self._embed: Callable[[str], Any] = nanoranker.embed
        self._head: Any = nanoranker.reranker_model
        self._cache: OrderedDict[bytes, np.ndarray] = OrderedDict()  # keyed by a digest: passages are long
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def _embedding(self, text: str) -> np.ndarray:
        text = text[: self.MAX_CHARS]
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._lock:
            vector = self._cache.get(key)
            if vector is not None:
                self._cache.move_to_end(key)
                return vector
        vector = np.asarray(self._embed(text), dtype=np.float32)
        with self._lock:
            self._cache[key] = vector
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return vector

    def score(self, query: str, passages: Sequence[str], deadline: float | None = None) -> list[float]:
        def late() -> bool:
            return deadline is not None and time.monotonic() >= deadline

        if not passages or late():
            return []
        question = self._embedding(query)
        rows: list[np.ndarray] = []
        for passage in passages:  # a new passage is one encoder call: the deadline is checked between them
            if late():
                break
            rows.append(np.concatenate([question, self._embedding(passage)]))
        if not rows:
            return []
        out = np.asarray(self._head.run(["output"], {"input": np.stack(rows)})[0], dtype=np.float64).reshape(-1)
        if len(out) != len(rows) or not np.all(np.isfinite(out)):
            raise JudgeError(f"{self.name} gave {len(out)} scores (finite: {bool(np.all(np.isfinite(out)))})"
                             f" for {len(rows)} passages")
        return out.tolist()


def _nanoranker(spec: str, settings: Settings) -> PairScorer:
    return NanorankerScorer()


def _llm(spec: str, settings: Settings) -> PairScorer:
    from electa.answer.answerers import create_answerer

    if settings.answerer == "extractive":
        raise ConfigError("ELECTA_RERANK=llm needs an answer model: set ELECTA_ANSWERER to local or openai")
    return LlmPointwiseScorer(create_answerer(settings.answerer, settings))


def onnx_model_file(folder: Path) -> Path | None:
    """The model an ``onnx:`` folder serves: ``model.onnx``, else its one ``.onnx`` file; a
    :class:`ConfigError` when the folder cannot be read (its permissions)."""
    try:
        if (folder / "model.onnx").is_file():
            return folder / "model.onnx"
        models = sorted(folder.glob("*.onnx")) if folder.is_dir() else []
    except OSError as exc:
        raise ConfigError(f"cannot read the reranker folder {folder}: {exc.strerror or exc}; let the user the"
                          " server runs as read it (and search it: the x permission of a folder)") from exc
    return models[0] if len(models) == 1 else None


def onnx_files(folder: Path) -> list[Path]:
    """The files an ``onnx:`` scorer may read from ``folder``, by one rule wherever it runs: its
    model, and every other plain, visible file directly in the folder that is not another
    ``.onnx`` model (the external data the model names, under any name; ``tokenizer.json``;
    ``electa.json``), listed even when absent for the last two. Sub-folders (an fp32 export, a
    download cache) are not read by it."""
    try:
        model = onnx_model_file(folder)
    except ConfigError:  # (the scorer says so where it loads)
        model = None
    try:
        beside = [p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")
                  and p.suffix.lower() != ".onnx"] if folder.is_dir() else []
    except OSError:  # (a folder that cannot be listed: the scorer fails where it loads)
        beside = []
    named = {folder / "tokenizer.json", folder / "electa.json"}
    return [*([model] if model is not None else []), *sorted(set(beside) | named)]


def _onnx(spec: str, settings: Settings) -> PairScorer:
    return OnnxCrossEncoder(Path(spec.removeprefix("onnx:")).expanduser())


def _http(spec: str, settings: Settings) -> PairScorer:
    return HttpRerankScorer(spec, settings.rerank_api, settings.rerank_model, settings.rerank_api_key)


_KINDS: dict[str, Callable[[str, Settings], PairScorer]] = {"onnx:": _onnx, "http://": _http, "https://": _http,
                                                             "llm": _llm, "nanoranker": _nanoranker}


def open_scorer(spec: str, settings: Settings | None = None) -> PairScorer:
    """The scorer a spec names (see the module): ``onnx:<folder>``, an ``http(s)://`` rerank
    endpoint, ``llm`` or ``nanoranker``."""
    for prefix, factory in _KINDS.items():
        if spec == prefix or (prefix.endswith((":", "//")) and spec.startswith(prefix)):
            return factory(spec, settings or Settings())
    raise ConfigError(f"unknown reranker {spec!r}; valid: onnx:<folder with model.onnx and tokenizer.json>,"
                      " http(s)://<a /rerank endpoint>, llm, nanoranker")
