"""Full-text images saved as plain arrays and read back memory-mapped.

A large BM25 segment (:class:`electa.stores.bm25_memory.BM25Image`) costs eight bytes a posting:
about 300 MB at a million units. Held in each worker's heap, that is paid once per worker and
rebuilt (minutes at a million units) by every worker that starts. Saved once as ``.npy`` arrays
and mapped with ``numpy.load(mmap_mode="r")``, it is read by every worker from the one copy the
operating system keeps in its page cache, a new worker opens it in milliseconds, and pages no
query touches are never read (Lucene's and tantivy's way with their segments).

A saved segment is a directory holding ``unit_ids.npy``, ``lengths.npy``, ``offsets.npy``,
``rows.npy``, ``freqs.npy``, the terms (:class:`SortedTerms`: ``terms.bin``,
``term_bounds.npy``, ``term_numbers.npy``) and ``segment.json`` (format, weights, counts,
highest row), written under a temporary name and renamed into place by the store, so a reader
sees a whole directory or none. Which directory is current is the store's business (it names it
inside its own transaction): see :meth:`electa.stores.sqlite.SqliteStore.save_image`.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

from electa.stores.bm25_memory import BM25Image

FORMAT = 2
ARRAYS = ("unit_ids", "lengths", "offsets", "rows", "freqs")
LOOKUPS_KEPT = 4096  # term lookups a saved image remembers


class SortedTerms:
    """A saved image's terms, memory-mapped: their UTF-8 bytes in byte order (``blob``, word
    ``i`` at ``bounds[i]:bounds[i+1]``) and each one's term number (``numbers``), looked up by
    binary search. A dictionary of every term would cost each worker its own copy, growing with
    the vocabulary (millions of codes and numbers in a large help center); this costs ~20
    comparisons a lookup, and lookups are remembered (``LOOKUPS_KEPT``)."""

    def __init__(self, blob: np.ndarray, bounds: np.ndarray, numbers: np.ndarray) -> None:
        self._blob, self._bounds, self._numbers = blob, bounds, numbers
        self._seen: dict[str, int | None] = {}

    def __len__(self) -> int:
        return int(self._numbers.size)

    def _word(self, i: int) -> bytes:
        return bytes(self._blob[int(self._bounds[i]):int(self._bounds[i + 1])])

    def get(self, term: str) -> int | None:
        seen = self._seen.get(term, -1)  # one step: search threads share it, and clear it
        if seen != -1:
            return seen
        key = term.encode()
        lo, hi = 0, len(self)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._word(mid) < key:
                lo = mid + 1
            else:
                hi = mid
        found = int(self._numbers[lo]) if lo < len(self) and self._word(lo) == key else None
        if len(self._seen) >= LOOKUPS_KEPT:
            self._seen.clear()
        self._seen[term] = found
        return found


def write(image: BM25Image, weights: tuple[float, ...], partial: Path) -> None:
    """Write ``image`` into the new directory ``partial``, each file on disk when this returns
    (the caller renames it into place); on failure nothing of it is left."""
    if not isinstance(image.terms, dict):
        raise TypeError("only an image built in memory is saved")
    try:
        partial.mkdir(parents=True)
        for name in ARRAYS:
            np.save(partial / f"{name}.npy", np.ascontiguousarray(getattr(image, name)), allow_pickle=False)
        words = sorted((term.encode(), number) for term, number in image.terms.items())
        bounds = np.zeros(len(words) + 1, dtype=np.int64)
        bounds[1:] = np.cumsum(np.fromiter((len(w) for w, _ in words), dtype=np.int64, count=len(words)))
        (partial / "terms.bin").write_bytes(b"".join(w for w, _ in words))
        np.save(partial / "term_bounds.npy", bounds, allow_pickle=False)
        np.save(partial / "term_numbers.npy", np.array([n for _, n in words], dtype=np.int64), allow_pickle=False)
        meta = {"format": FORMAT, "weights": list(weights), "units": int(image.unit_ids.size),
                "max_row": image.max_row, "postings": int(image.rows.size), "terms": len(words),
                "scanned": image.scanned}
        (partial / "segment.json").write_text(json.dumps(meta), encoding="utf-8")
        for path in partial.iterdir():
            with open(path, "rb") as f:
                os.fsync(f.fileno())
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def readable(directory: Path) -> bool:
    """Whether ``directory`` holds a saved image this code reads (its format), without loading it."""
    try:
        return bool(json.loads((directory / "segment.json").read_text(encoding="utf-8")).get("format") == FORMAT)
    except Exception:
        return False


def load(directory: Path, weights: tuple[float, ...], generation: int) -> BM25Image | None:
    """The image saved in ``directory``, its arrays and terms memory-mapped; ``None`` when it is
    missing, truncated, of another format or saved with other weights (the caller then builds
    one). What is checked: every file's presence and size, the term bounds and posting offsets
    (ascending, ending at their arrays' ends) and the term numbers' range; postings rewritten in
    place with other values of the same size are not detected (a checksum would read every
    page, which memory-mapping exists to avoid)."""
    try:
        meta = json.loads((directory / "segment.json").read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT or [float(w) for w in meta["weights"]] != [float(w) for w in weights]:
            return None
        arrays = {name: np.load(directory / f"{name}.npy", mmap_mode="r", allow_pickle=False)
                  for name in (*ARRAYS, "term_bounds", "term_numbers")}
        blob = np.memmap(directory / "terms.bin", dtype=np.uint8, mode="r") if arrays["term_bounds"][-1] else \
            np.zeros(0, dtype=np.uint8)
        unit_ids, offsets, rows, bounds = arrays["unit_ids"], arrays["offsets"], arrays["rows"], arrays["term_bounds"]
        n_terms = int(meta["terms"])
        whole = (unit_ids.size == meta["units"] and rows.size == meta["postings"]
                 and arrays["lengths"].size == unit_ids.size and arrays["freqs"].size == rows.size
                 and offsets.size == n_terms + 1 and bounds.size == n_terms + 1
                 and arrays["term_numbers"].size == n_terms and int(bounds[-1]) == blob.size
                 and int(offsets[0]) == 0 and int(offsets[-1]) == rows.size and bool(np.all(np.diff(offsets) >= 0))
                 and int(bounds[0]) == 0 and bool(np.all(np.diff(bounds) >= 0))
                 and (not n_terms or 0 <= int(arrays["term_numbers"].min()) <= int(arrays["term_numbers"].max()) < n_terms)
                 and (not unit_ids.size or int(unit_ids[-1]) == meta["max_row"]))
        if not whole:
            return None
        return BM25Image(unit_ids, arrays["lengths"], SortedTerms(blob, bounds, arrays["term_numbers"]), offsets,
                         rows, arrays["freqs"], generation, int(meta["scanned"]))
    except Exception:  # any damage at all: rebuild
        return None
