"""The leg contract."""

from __future__ import annotations

from typing import Protocol

from electa.stores.protocol import AllowedSet
from electa.types import Caller


class Leg(Protocol):
    """A retriever over the store.

    Contract:
    - ``search`` returns at most ``depth`` ``(unit id, raw score)`` pairs, best first, every id
      in ``allowed`` (the filter is applied while matching, never to a finished list: SPEC B8).
    - Raw scores are the leg's own scale; fusion only uses ranks (SPEC C1).
    - It may raise; the runner drops a failing or late leg for that query (SPEC B9).
    - ``available()`` is False when the leg cannot run at all (no model), with ``why``.
    - The list returned may carry ``notes`` (unit id -> a line on why the leg found it, as
      :class:`electa.legs.graph.GraphHits` does); they reach :attr:`electa.types.LegHit.note`.
    """

    name: str

    def search(self, query: str, caller: Caller, allowed: AllowedSet, depth: int) -> list[tuple[int, float]]: ...

    def available(self) -> bool: ...

    @property
    def why(self) -> str: ...
