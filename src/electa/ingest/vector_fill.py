"""Vectors a store lacks, made and written in committed batches (each resumable): the units
stored while no model was available, every unit again under a new model (``electa reindex``), a
chain adopting its English model's vectors as they are, and the title units a reindex adds. The
engine decides when; these functions do the writing, over any :class:`~electa.stores.protocol.Store`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from electa.embedders.chain import ENGLISH, ChainEmbedder, embed_routed
from electa.embedders.protocol import Embedder
from electa.ingest.unit_vectors import Recipe, unit_vectors
from electa.stores.protocol import Store
from electa.types import Chunk, ChunkKind


def embed_missing(store: Store, embedder: Embedder, recipe: Recipe, batch: int, max_batches: int | None = None,
                  progress: bool = False, after_id: int = 0, orgs: Sequence[str] | None = None) -> tuple[int, int]:
    """Embed, in committed batches, every chunk with id > ``after_id`` (of ``orgs`` only, when
    given) that lacks a vector of ``embedder``'s model. Returns ``(chunks embedded, batches)``;
    resumable, since each batch commits."""
    done = batches = 0
    while max_batches is None or batches < max_batches:
        # Whole documents only, so that parents are pooled from all their children (the
        # recipe of ingest): a full batch leaves its last document to the next one, and a
        # document longer than a batch is read with a larger one.
        limit = batch
        while True:
            rows = store.chunks_missing_vectors(embedder.model_id, limit, after_id, orgs)
            units = store.units([r[0] for r in rows])
            documents = {u.document_id for u in units.values()}
            if len(rows) < limit or len(documents) > 1 or limit >= 64 * batch:
                break  # (past 64 batches, a huge document goes in parts: a parent whose children
                # straddle two parts is pooled from those at hand, or read when none is)
            limit *= 2
        if not rows:
            break
        resume = max(r[0] for r in rows)
        if len(rows) == limit and len(documents) > 1:
            # The last document still there (a unit may have been deleted meanwhile).
            last = next(units[r[0]].document_id for r in reversed(rows) if r[0] in units)
            left = [r[0] for r in rows if r[0] in units and units[r[0]].document_id == last]
            rows = [r for r in rows if r[0] not in units or units[r[0]].document_id != last]
            # The next batch starts at the left document's first row, not after the kept
            # rows: a document's units need not be contiguous (title units added later).
            resume = min(left) - 1
        by_doc: dict[int, list[tuple[int, Chunk]]] = {}
        for uid, title, text in rows:
            unit = units.get(uid)
            if unit is None:  # deleted meanwhile
                continue
            # Ordinals are unit ids here: pooling only needs which child sits in which parent.
            parent = unit.parent_id if unit.kind is ChunkKind.CHILD else None
            by_doc.setdefault(unit.document_id, []).append((uid, Chunk(unit.kind, uid, title, text, parent)))
        groups = list(by_doc.values())
        langs = [units[g[0][0]].lang for g in groups]
        vectors = unit_vectors(embedder, [[c for _, c in g] for g in groups], recipe, langs=langs)
        ids = [uid for g in groups for uid, _ in g]
        vecs = [v for vs in vectors for v in vs]
        if ids:
            store.put_vectors(embedder.model_id, ids, np.stack(vecs))  # type: ignore[arg-type]
        done += len(ids)
        batches += 1
        after_id = resume
        if progress:
            print(f"reindex: {done} chunks embedded", flush=True)
    return done, batches


def nothing_missing(store: Store, model_id: str) -> bool:
    """Whether every unit that should have a vector of ``model_id`` has one, by two counts
    (this process's first write: the scan for missing vectors took 6.8 s at a million units,
    the counts a fraction of it). Trusted only if no write moved the store between them:
    a deletion between the counts could hide a missing vector."""
    before = store.generation
    vectors, units = store.count_vectors(model_id), store.count_vector_chunks()
    return store.generation == before and vectors >= units


def adopt_vectors(store: Store, embedder: Embedder) -> int:
    """A store embedded by a chain's English model (one made before the chain was the
    default), or by a chain with the same English model and another multilingual one (USE,
    before e5), gives its English units' vectors to the chain as they are, padded with the
    other half's zeros: re-embedding them would give the same vectors (pooled ones too, a
    mean of padded vectors being the padded mean). Returns how many units it gave."""
    if not isinstance(embedder, ChainEmbedder):
        return 0
    english = embedder.english
    stored = store.meta("model_id") or ""
    sources = [english.model_id]
    if stored.startswith(f"chain({english.model_id}|") and stored != embedder.model_id:
        sources.append(stored)
    adopted = 0
    for source in sources:
        after = 0
        while (part := next(store.vectors(source, after), None)) is not None:
            ids, vecs = part
            after = int(ids[-1])
            units = store.units([int(i) for i in ids])
            done = set(store.vectors_of(embedder.model_id, ids)[0].tolist())  # given by an earlier call
            # (an English unit's vector in the other half, as a title unit added by an
            # earlier reindex could be, is read again rather than adopted as zeros)
            english_half = np.asarray(vecs[:, :english.dim].any(axis=1), dtype=bool)
            keep = [k for k, uid in enumerate(ids) if int(uid) in units and units[int(uid)].lang in ENGLISH
                    and english_half[k] and int(uid) not in done]
            if keep:
                padded = np.zeros((len(keep), embedder.dim), dtype=np.float32)
                padded[:, :english.dim] = vecs[keep][:, :english.dim]
                store.put_vectors(embedder.model_id, [int(ids[k]) for k in keep], padded)
                adopted += len(keep)
    return adopted


def title_vectors(store: Store, embedder: Embedder, missing: Sequence[tuple[int, str, int]]) -> np.ndarray:
    """Vectors of the title units reindex adds, each read in its document's language (an
    embedder chain would read a short title like "Kontakt" as English)."""
    parents = store.units([parent for _, _, parent in missing])
    return embed_routed(embedder, [title for _, title, _ in missing],
                        [parents[p].lang if p in parents else "" for _, _, p in missing])
