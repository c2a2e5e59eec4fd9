"""The knowledge graph as a store keeps it (SPEC A6): what one unit adds, and what an organisation's
graph reads back as. Shared by every backend (:class:`electa.stores.protocol.GraphStore`).

A graph is kept **per unit**: a node (an organisation's entity, by key) exists while a unit
mentions it, an edge is a row per unit that states it. So a unit deleted takes its mentions and
edges with it, a node with no mention left goes too (nothing is orphaned), and a caller sees a
node, a name or an edge only through a unit it may see (its allowed set).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from electa.graph.extract import Extracted

# The sentence an edge keeps as evidence, cut to this many characters (stored with the edge; no
# reader quotes it yet).
EVIDENCE_CHARS = 300
NAME_CHARS = 200


@dataclass(frozen=True)
class UnitGraph:
    """One unit's part of the graph, ready to store: ``nodes`` ``(key, kind)``, ``mentions``
    ``(key, name as written)`` and ``edges`` ``(source key, target key, kind, weight, evidence)``."""

    nodes: tuple[tuple[str, str], ...]
    mentions: tuple[tuple[str, str], ...]
    edges: tuple[tuple[str, str, str, float, str], ...]


def unit_graph(found: Extracted) -> UnitGraph:
    """What a unit's extraction stores: every entity once, and each relation between two of them
    once per kind (the heaviest), its evidence cut to :data:`EVIDENCE_CHARS`. A relation naming
    an entity the unit does not hold is dropped (its node would have no mention to keep it).

    >>> from electa.graph.extract import PatternExtractor
    >>> g = unit_graph(PatternExtractor().extract("", "Version 3.8 fixes E2001."))
    >>> g.nodes
    (('version:v3.8', 'version'), ('error_code:e2001', 'error_code'))
    >>> g.edges
    (('version:v3.8', 'error_code:e2001', 'fixes', 1.0, 'Version 3.8 fixes E2001.'),)
    """
    keys = {e.key: e for e in found.entities}
    edges: dict[tuple[str, str, str], tuple[str, str, str, float, str]] = {}
    for r in found.relations:
        if r.source not in keys or r.target not in keys or r.source == r.target:
            continue
        at = (r.source, r.target, r.kind)
        if at not in edges or edges[at][3] < r.weight:
            edges[at] = (r.source, r.target, r.kind, float(r.weight), r.evidence[:EVIDENCE_CHARS])
    return UnitGraph(tuple((k, e.kind) for k, e in keys.items()), tuple((k, e.name[:NAME_CHARS]) for k, e in keys.items()),
                     tuple(edges.values()))


@dataclass(frozen=True)
class OrgGraph:
    """An organisation's whole graph as read back, for the graph leg to link and walk in memory.

    ``nodes``: id -> ``(key, kind)``. ``mentions``: ``(node id, unit id, name as written)``.
    ``edges``: ``(source id, target id, kind, unit id, weight)``. Nothing here is filtered by
    access: the leg keeps only the rows of units the caller may see (:meth:`visible`) before it
    links or walks anything."""

    nodes: dict[int, tuple[str, str]]
    mentions: tuple[tuple[int, int, str], ...]
    edges: tuple[tuple[int, int, str, int, float], ...]
    units: np.ndarray = field(init=False, compare=False)

    def __post_init__(self) -> None:
        ids = {m[1] for m in self.mentions} | {e[3] for e in self.edges}
        object.__setattr__(self, "units", np.array(sorted(ids), dtype=np.int64))

    def visible(self, allowed_ids: np.ndarray) -> frozenset[int]:
        """The units of this graph among ``allowed_ids`` (a caller's allowed set, sorted)."""
        if not self.units.size or not allowed_ids.size:
            return frozenset()
        return frozenset(int(u) for u in self.units[np.isin(self.units, allowed_ids, assume_unique=True)])
