"""Full-text images saved as plain arrays and read back memory-mapped.

A large BM25 segment (:class:`electa.stores.bm25_memory.BM25Image`) costs eight bytes a posting:
about 300 MB at a million units. Held in each worker's heap, that is paid once per worker and
rebuilt (minutes at a million units) by every worker that starts. Saved once as ``.npy`` arrays
and mapped with ``numpy.load(mmap_mode="r")``, it is read by every worker from the one copy the
operating system keeps in its page cache, a new worker opens it in milliseconds, and pages no
query touches are never read (Lucene's and tantivy's way with their segments).

A saved segment is a directory ``<name>/`` holding ``unit_ids.npy``, ``lengths.npy``,
``offsets.npy``, ``rows.npy``, ``freqs.npy``, ``terms.json`` (the term of each number) and
``segment.json`` (format, weights, row count, highest row), written under a temporary name and
renamed into place, so a reader sees a whole directory or none. Which directory is current is
the store's business (it names it inside its own transaction): see
:meth:`electa.stores.sqlite.SqliteStore.save_image`.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

from electa.stores.bm25_memory import BM25Image

FORMAT = 1
ARRAYS = ("unit_ids", "lengths", "offsets", "rows", "freqs")


def save(image: BM25Image, weights: tuple[float, ...], directory: Path) -> None:
    """Write ``image`` into ``directory`` (which must not exist), atomically."""
    partial = directory.with_name(directory.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    for name in ARRAYS:
        np.save(partial / f"{name}.npy", np.ascontiguousarray(getattr(image, name)), allow_pickle=False)
    names = [""] * len(image.terms)
    for term, i in image.terms.items():
        names[i] = term
    (partial / "terms.json").write_text(json.dumps(names, ensure_ascii=False), encoding="utf-8")
    meta = {"format": FORMAT, "weights": list(weights), "units": int(image.unit_ids.size),
            "max_row": image.max_row, "postings": int(image.rows.size), "scanned": image.scanned}
    (partial / "segment.json").write_text(json.dumps(meta), encoding="utf-8")
    for path in partial.iterdir():  # on disk before the rename makes it visible
        with open(path, "rb") as f:
            os.fsync(f.fileno())
    partial.rename(directory)


def load(directory: Path, weights: tuple[float, ...], generation: int) -> BM25Image | None:
    """The image saved in ``directory``, its arrays memory-mapped; ``None`` when it is missing,
    incomplete, of another format or saved with other weights (the caller then builds one)."""
    try:
        meta = json.loads((directory / "segment.json").read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT or [float(w) for w in meta["weights"]] != [float(w) for w in weights]:
            return None
        arrays = {name: np.load(directory / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in ARRAYS}
        names = json.loads((directory / "terms.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    unit_ids, offsets, rows = arrays["unit_ids"], arrays["offsets"], arrays["rows"]
    if (unit_ids.size != meta["units"] or rows.size != meta["postings"] or arrays["lengths"].size != unit_ids.size
            or arrays["freqs"].size != rows.size or offsets.size != len(names) + 1
            or (unit_ids.size and int(unit_ids[-1]) != meta["max_row"])):
        return None
    return BM25Image(unit_ids, arrays["lengths"], {t: i for i, t in enumerate(names)}, offsets, rows,
                     arrays["freqs"], generation, int(meta["scanned"]))
