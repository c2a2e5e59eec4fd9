"""The vectors of a document's units: which the model reads, which are pooled (issue 12 item 7).

Two recipes:

- ``encoded``: the model reads every unit (title trail, then text; :func:`embed_text`).
- ``pooled`` (default): the model reads child windows, titles, Q&A pairs and the parents too
  short to have children; a parent with children gets the normalised mean of its children's
  vectors, and a whole-document unit the normalised mean of its parents'. The children cover
  their parent's whole text (the model reads only the first 256 word pieces of a 2,000-character
  parent anyway), so the parent's text is not read twice. On SciFact this cut the word pieces
  read per document by about two fifths; ``bench/ingest_speed.py`` measures the speed and the
  nDCG of each recipe side by side.

The texts of all the documents are sorted by length before they are read in batches, so a
batch pads to its own longest text, not to the longest of a mixed bag.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum

import numpy as np

from electa.embedders.chain import LanguageRouted
from electa.embedders.protocol import Embedder
from electa.ingest.chunker import embed_text
from electa.types import Chunk, ChunkKind


class Recipe(StrEnum):
    ENCODED = "encoded"
    POOLED = "pooled"


def read_by_model(chunks: Sequence[Chunk], recipe: Recipe) -> list[bool]:
    """Per chunk: does the model read its text (else it is pooled, or has no vector)?

    >>> from electa.types import Chunk, ChunkKind as K
    >>> units = [Chunk(K.PARENT, 0, "T", "a b"), Chunk(K.CHILD, 1, "T", "a", 0), Chunk(K.CHILD, 2, "T", "b", 0),
    ...          Chunk(K.PARENT, 3, "T", "c"), Chunk(K.DOC, 4, "T", "a b c"), Chunk(K.TITLE, 5, "T", "", 0)]
    >>> read_by_model(units, Recipe.POOLED)
    [False, True, True, True, False, True]
    >>> read_by_model(units, Recipe.ENCODED)
    [True, True, True, True, True, True]
    """
    if recipe is Recipe.ENCODED:
        return [c.kind is not ChunkKind.CURATED for c in chunks]
    with_children = {c.parent for c in chunks if c.kind is ChunkKind.CHILD}
    return [c.kind not in (ChunkKind.CURATED, ChunkKind.DOC) and not (c.kind is ChunkKind.PARENT and c.ordinal in with_children)
            for c in chunks]


def _unit(vectors: Sequence[np.ndarray]) -> np.ndarray:
    mean = np.mean(np.stack(vectors), axis=0)
    return (mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float32)


def pool(chunks: Sequence[Chunk], read: Sequence[np.ndarray | None]) -> list[np.ndarray | None]:
    """Fill in the vectors the model did not read: a parent from its children, then a
    whole-document unit from the parents (each of them read or pooled). Curated answers keep
    None (matched by trigger, never searched)."""
    out = list(read)
    by_ordinal = {c.ordinal: i for i, c in enumerate(chunks)}
    children: dict[int, list[np.ndarray]] = {}
    for c, vec in zip(chunks, out, strict=True):
        if c.kind is ChunkKind.CHILD and c.parent in by_ordinal and vec is not None:
            children.setdefault(c.parent, []).append(vec)
    for ordinal, vecs in children.items():
        i = by_ordinal[ordinal]
        if out[i] is None:
            out[i] = _unit(vecs)
    parents = [out[i] for i, c in enumerate(chunks) if c.kind is ChunkKind.PARENT and out[i] is not None]
    for i, c in enumerate(chunks):
        if c.kind is ChunkKind.DOC and out[i] is None and parents:
            out[i] = _unit(parents)  # type: ignore[arg-type]
    return out


# The units whose vectors the model always reads from their own text, whatever the recipe: the
# ones a vector read before may stand for (a parent's may be its children's mean).
REUSABLE = (ChunkKind.CHILD, ChunkKind.TITLE)


def unit_vectors(embedder: Embedder, documents: Sequence[Sequence[Chunk]], recipe: Recipe = Recipe.POOLED,
                 on_batch: Callable[[int, int], None] | None = None, batch: int = 1024,
                 langs: Sequence[str] | None = None,
                 known: Sequence[Mapping[tuple[str, str], np.ndarray] | None] | None = None,
                 ) -> list[list[np.ndarray | None]]:
    r"""Vectors for every chunk of every document, by ``recipe``; the model's texts are read in
    calls of ``batch`` texts (``on_batch(done, total)`` after each, when given). A unit that was
    to be pooled but has no parts here (a parent whose children are not among ``documents``) is
    read instead. ``langs``, each document's language, reaches an embedder that reads each
    language with its own model (:class:`electa.embedders.chain.LanguageRouted`). ``known``, one
    per document: the vectors this model read before for it (its source's stored version), by
    language and what it read (:func:`embed_text`); a unit of :data:`REUSABLE` kinds found there
    is not read again (an edited page's unchanged pieces).

    >>> from electa.embedders.hashing import HashEmbedder
    >>> class Counting(HashEmbedder):
    ...     texts = 0
    ...     def embed(self, texts):
    ...         Counting.texts += len(texts)
    ...         return super().embed(texts)
    >>> units = [Chunk(ChunkKind.PARENT, 0, "T", "a b"), Chunk(ChunkKind.CHILD, 1, "T", "a", 0),
    ...          Chunk(ChunkKind.CHILD, 2, "T", "b", 0)]
    >>> before = unit_vectors(Counting(8), [units])[0]
    >>> again = unit_vectors(Counting(8), [units], known=[{("", "T\na"): before[1]}])[0]
    >>> Counting.texts, all((x == y).all() for x, y in zip(before, again))
    (3, True)
    """
    reads = [read_by_model(chunks, recipe) for chunks in documents]
    lenders = known if known is not None else [None] * len(documents)
    given: list[list[np.ndarray | None]] = [
        [lender.get((lang, embed_text(c))) if lender and r and c.kind in REUSABLE else None
         for c, r in zip(chunks, read, strict=True)]
        for chunks, read, lang, lender in zip(documents, reads, langs or [""] * len(documents), lenders, strict=True)]
    reads = [[r and g is None for r, g in zip(read, kept, strict=True)] for read, kept in zip(reads, given, strict=True)]
    read_now = _read(embedder, documents, reads, on_batch, batch, langs)
    out = [pool(chunks, [g if g is not None else v for g, v in zip(kept, vecs, strict=True)])
           for chunks, kept, vecs in zip(documents, given, read_now, strict=True)]
    left = [[vec is None and c.kind is not ChunkKind.CURATED for c, vec in zip(chunks, vecs, strict=True)]
            for chunks, vecs in zip(documents, out, strict=True)]
    if any(any(row) for row in left):
        for vecs, extra in zip(out, _read(embedder, documents, left, None, batch, langs), strict=True):
            for i, vec in enumerate(extra):
                if vec is not None:
                    vecs[i] = vec
    return out


def _read(embedder: Embedder, documents: Sequence[Sequence[Chunk]], reads: Sequence[Sequence[bool]],
          on_batch: Callable[[int, int], None] | None, batch: int,
          langs: Sequence[str] | None) -> list[list[np.ndarray | None]]:
    texts = [embed_text(c) for chunks, read in zip(documents, reads, strict=True)
             for c, r in zip(chunks, read, strict=True) if r]
    routed = langs is not None and isinstance(embedder, LanguageRouted)
    text_langs = [lang for read, lang in zip(reads, langs or [""] * len(reads), strict=True) for r in read if r]
    # Longest with longest across all the documents: a batch pads to its own longest text.
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    vectors: list[np.ndarray | None] = [None] * len(texts)
    for start in range(0, len(order), batch):
        part = order[start:start + batch]
        read = ([texts[i] for i in part], [text_langs[i] for i in part])
        vecs = embedder.embed_in(*read) if routed else embedder.embed(read[0])  # type: ignore[attr-defined]
        for i, vec in zip(part, vecs, strict=True):
            vectors[i] = vec
        if on_batch is not None:
            on_batch(min(len(texts), start + batch), len(texts))
    it = iter(vectors)
    return [[next(it) if r else None for r in read] for read in reads]
