"""The store contract every backend honours (the contract suite in electa.testing checks it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from electa.types import Access, Caller, Chunk, ChunkKind


@dataclass(frozen=True)
class PreparedDocument:
    """A document ready to store: its chunks and, per chunk, a vector (or None)."""

    ext_id: str
    title: str
    url: str
    text_hash: str
    chunks: tuple[Chunk, ...]
    vectors: tuple[np.ndarray | None, ...] = field(compare=False, hash=False)


@dataclass(frozen=True)
class SourceRecord:
    org: str
    agent: str
    uri: str
    kind: str
    url: str
    content_hash: str
    access: Access


@dataclass(frozen=True)
class SourceOutcome:
    """What storing one source did: ``status`` is ``added``, ``updated`` or ``unchanged``."""

    uri: str
    status: str
    version: int
    documents: int
    duplicates: int = 0
    removed_units: int = 0


@dataclass(frozen=True)
class StoredUnit:
    """A stored chunk as the engine reads it back."""

    id: int
    document_id: int
    source_id: int
    kind: ChunkKind
    title: str
    text: str
    url: str
    ext_id: str
    also_urls: tuple[str, ...]
    parent_id: int | None = None


@dataclass(frozen=True)
class AllowedSet:
    """The unit ids a caller may see, sorted (SPEC B8). Legs filter with it at match time."""

    ids: np.ndarray
    generation: int

    def __len__(self) -> int:
        return int(self.ids.size)


class Store(Protocol):
    """Persistent home of sources, documents, chunks, Q&A pairs and their indexes.

    Contract:
    - ``put_source`` is atomic: after a crash the store holds the source entirely as before or
      entirely as new. An unchanged ``content_hash`` changes nothing (``unchanged``).
    - Identical text with identical access within an organisation and agent is stored once;
      further copies add only a location (URL) (SPEC A3).
    - ``delete_source`` removes the source; a document no other source holds goes with all its
      units, from every index (SPEC A5).
    - ``allowed(caller)`` lists exactly the units of the caller's organisation (and agent, when
      given) that are public or carry one of the caller's principals.
    - ``generation`` increases with every change, across processes.
    """

    def put_source(self, source: SourceRecord, docs: Sequence[PreparedDocument]) -> SourceOutcome: ...

    def delete_source(self, org: str, agent: str, uri: str) -> int: ...

    def allowed(self, caller: Caller) -> AllowedSet: ...

    def units(self, ids: Sequence[int]) -> dict[int, StoredUnit]: ...

    @property
    def generation(self) -> int: ...
