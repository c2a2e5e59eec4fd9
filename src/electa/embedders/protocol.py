"""The embedder contract."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors.

    Contract:
    - ``model_id`` names the model *and* its variant (quantisation, pooling); two embedders with
      the same ``model_id`` produce vectors in the same space. Every stored chunk is stamped with
      it, and a store refuses queries from another ``model_id`` (SPEC A4).
    - ``dim`` is the vector length.
    - ``embed(texts)`` returns an array of shape ``(len(texts), dim)``, rows of unit length,
      in input order. An empty input gives shape ``(0, dim)``. It is deterministic.
    - ``embed_query`` is ``embed`` for one query string (models with query prefixes add them).

    Example::

        emb = create_embedder("minilm")
        vecs = emb.embed(["Refund policy", "Export to CSV"])
    """

    model_id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...
