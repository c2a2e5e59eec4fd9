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
    - ``embed_query`` gives one query string's vector (models with query prefixes add them);
      a unit's score for a query is the inner product of their vectors, which for one model is
      the cosine (the query's vector is of unit length). A chain of models
      (:class:`electa.embedders.chain.ChainEmbedder`) gives a longer query vector, one unit
      vector per model side by side, so that each unit is scored by the cosine of its own model.
    - An optional ``score_map = (scale, shift)`` puts the model's cosines on MiniLM's scale
      (:func:`electa.embedders.chain.score_map`): the dense leg reports, and thresholds apply to,
      ``scale * cosine + shift``. Without one, the cosine itself.
    - Optional ``language_maps = {lang: (scale, shift)}``: the map instead of ``score_map`` for
      a question and a text both written in ``lang``, where the model scores that language's
      pairs on another scale than English's (:func:`electa.embedders.chain.language_correction`).

    Example::

        emb = create_embedder("minilm")
        vecs = emb.embed(["Refund policy", "Export to CSV"])
    """

    model_id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


# Per text: the vocabulary ids with a non-zero weight (int32, ascending) and their weights (float32).
SparseVector = tuple[np.ndarray, np.ndarray]


@runtime_checkable
class SparseEncoder(Protocol):
    """Maps texts to learned term weights (SPEC B3): a bag of vocabulary entries, each weighted
    by how much the model thinks it matters, including words the text does not use.

    Contract:
    - ``model_id`` names the model; stored weights are stamped with it, and weights of another
      model are never scored against a query (they are re-made by ``electa reindex``).
    - ``encode(texts)`` returns one :data:`SparseVector` per text, in input order: term ids
      ascending and unique, weights positive and finite. Deterministic.
    - ``vocab`` is the number of possible term ids (every id is below it).
    - The score of a text for a query is the dot product of their vectors.
    """

    model_id: str
    vocab: int

    def encode(self, texts: Sequence[str]) -> list[SparseVector]: ...
