"""Embedders: text -> unit vectors. A Protocol, a registry, built-ins."""

from electa.embedders.protocol import Embedder
from electa.embedders.registry import available_embedders, create_embedder

__all__ = ["Embedder", "available_embedders", "create_embedder"]
