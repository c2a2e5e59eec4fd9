"""The knowledge-graph leg (SPEC B5, issue 11): the question's entities linked to the
organisation's graph, one and two hops walked, and the units behind the path returned, each with
a short summary of how it connects to what was asked.

From reference/support-bot-retrieval.txt: "looks up entities and relationships extracted from
your documents at ingestion time and returns a short summary of how they connect, which helps
with questions like 'which plans include the API?'", and graph summaries score at least 0.9
(:data:`electa.scoring.GRAPH_MIN`, given by the engine to hits this leg ranks as *naming* an
entity of the question).

**Linking** (:meth:`GraphIndex.link`): the question's entities as the extractor reads them
(exact, by key: "E-1042" is ``error_code:e1042``); then its runs of one to four words against
every name a unit wrote a node with, and each node's own name (alias: "growth" is the Growth
plan); then, for a word of five letters or more that linked nothing, names one edit away (fuzzy:
"quickbook" is QuickBooks), weighed down. Section names weigh half: a heading is a weaker name.

**Walking** (:meth:`GraphIndex.walk`): from the linked nodes (the seeds) along the edges the
caller may see, both ways, one hop and then a second from the nodes reached, within
:data:`MAX_EDGES` edges and :data:`MAX_FRONTIER` nodes a hop; each hop halves a node's weight,
times the edge's.

**Scoring** a unit: the number of the question's entities it names (linked exactly or by alias)
before the point, and after it (below 1) the rest: its seeds' and reached nodes' weights, each
weighed by how rare the node is (1 / (1 + ln of the units naming it)), and the edges it states
between two seeds. So a raw score of 1 or more means "this passage names what was asked".

**Access**: the organisation's graph is read whole and cached until it changes (its own graph
version: another tenant's writes leave the cache as it is); each search
first keeps the units the caller may see, and links, walks and scores only through them: a
team-only page's names, edges and nodes do not exist for a non-member.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Iterable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

import numpy as np

from electa.graph.extract import PatternExtractor, canonical, fold
from electa.graph.rows import OrgGraph
from electa.stores.protocol import AllowedSet, GraphStore
from electa.text import STOPWORDS
from electa.types import Caller

log = logging.getLogger(__name__)

MAX_SEEDS = 8
MAX_EDGES = 400  # edges looked at in a search, both hops (and of one node, where a loop reads them all)
MAX_UNITS = 5000  # units of one node scored, of those the caller may see (a node every page names says little)
# A node's edges in this order, so that the caps keep the ones that say most.
KIND_ORDER = {"fixes": 0, "requires": 0, "part_of": 0, "related": 1, "in_section": 2}
MAX_FRONTIER = 24  # nodes a hop walks on from
HOP_DECAY = 0.5
FUZZY_WEIGHT = 0.7
LEAF_WEIGHT = 0.8
# Edges that lead from what was asked to what answers it: what fixes an error asked about, what a
# thing asked about requires. A unit naming that answers the question as one naming the thing does
# (a page that merely names the plan an integration is part of does not).
def _answers(edge: tuple[int, int, str, int, float], asked: int) -> int | None:
    """The node ``edge`` leads to from ``asked`` when it answers it, else None.

    >>> _answers((7, 3, "fixes", 1, 1.0), 3), _answers((3, 9, "requires", 1, 1.0), 3), _answers((3, 9, "part_of", 1, 1.0), 3)
    (7, 9, None)
    """
    if edge[2] == "fixes" and edge[1] == asked:
        return edge[0]
    if edge[2] == "requires" and edge[0] == asked:
        return edge[1]
    return None
SECTION_WEIGHT = 0.5
MAX_NGRAM = 4
# One-edit matching looks at this many of the question's words, each against this many names of its
# first letter and length (a long question of unknown words must not cost a scan of every name).
MAX_FUZZY_WORDS = 12
MAX_FUZZY_NAMES = 2000
# A question's words looked at (a pasted page is not a question).
MAX_WORDS = 60
SUMMARY_CHARS = 280
MAX_CACHED = 64  # organisations' graphs kept in memory (the ones searched last)
# How long a search waits for an organisation's changed graph to be read again before it walks
# the one it had (a large organisation's graph takes seconds to read; its writers should not make
# every search after a write wait for that, nor run past the leg's budget).
REBUILD_WAIT_S = 0.25
RETRY_AFTER_S = 5.0  # a read that failed is not tried again sooner (each search would start one)


class _Read:
    """One read of an organisation's graph, in a thread of its own."""

    def __init__(self, version: int) -> None:
        self.version = version
        self.future: Future[GraphIndex] = Future()
        self.failed_at: float | None = None

    def failed(self) -> bool:
        return self.future.done() and self.future.exception() is not None
VERBS = {"requires": "requires", "part_of": "is part of", "fixes": "fixes", "related": "is named with",
         "in_section": "is in the section"}
Edge = tuple[int, int, str, int, float]  # (source node, target node, kind, unit, weight): OrgGraph.edges
_WORD = re.compile(r"[\w+][\w+.'-]*[\w+]|[\w+]")


class GraphHits(list[tuple[int, float]]):
    """The leg's ``(unit id, raw score)`` pairs, best first, with ``notes``: each unit's summary
    of how it connects to the question (the runner keeps them on :class:`electa.types.LegHit`)."""

    notes: dict[int, str]

    def __init__(self, pairs: Iterable[tuple[int, float]] = (), notes: dict[int, str] | None = None) -> None:
        super().__init__(pairs)
        self.notes = notes or {}


@dataclass(frozen=True)
class Seed:
    node: int
    weight: float
    exact: bool  # linked by key or by a name a unit wrote (not fuzzy, not a section)


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ by one insertion, deletion or substitution.

    >>> _one_edit("quickbook", "quickbooks"), _one_edit("slakc", "slack"), _one_edit("growth", "grow")
    (True, False, False)
    """
    if abs(len(a) - len(b)) > 1 or a == b:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    return a[i:] == b[i + 1:] if len(a) < len(b) else a[i + 1:] == b[i + 1:]


class GraphIndex:
    """One organisation's graph in memory, for linking and walking (built once per graph version)."""

    def __init__(self, graph: OrgGraph) -> None:
        self.graph = graph
        self.last_visible: tuple[np.ndarray, frozenset[int]] | None = None  # (see GraphLeg._scope)
        self.key_node = {key: node for node, (key, _) in graph.nodes.items()}
        self.names: dict[str, set[int]] = defaultdict(set)  # folded name -> nodes
        self.units_of: dict[int, list[int]] = defaultdict(list)  # node -> units naming it
        self.spelled: dict[int, dict[str, list[int]]] = defaultdict(dict)  # node -> name as written -> units
        self.name_units: dict[tuple[int, str], list[int]] = defaultdict(list)  # (node, folded name) -> units
        for node, unit, name in graph.mentions:
            self.units_of[node].append(unit)
            self.name_units[(node, fold(name))].append(unit)
            self.spelled[node].setdefault(name, []).append(unit)
        for node, (key, kind) in graph.nodes.items():
            own = key.split(":", 1)[1]
            if kind == "section":
                own = own.rsplit(" > ", 1)[-1]  # a heading by its own name
            self.names[own].add(node)
            self.name_units[(node, own)].extend(self.units_of[node])
        for node, name in list(self.name_units):
            self.names[name].add(node)
        # A settings path by its last part ("the row limit" is Settings > Exports > Row limit).
        self.leaves: dict[str, set[int]] = defaultdict(set)
        for node, (key, kind) in graph.nodes.items():
            if kind == "setting" and " > " in key:
                self.leaves[key.rsplit(" > ", 1)[-1]].add(node)
        self.by_shape: dict[tuple[str, int], list[str]] = defaultdict(list)  # (first letter, length) -> names
        for name in self.names:
            if len(name) >= 5 and " " not in name:
                self.by_shape[(name[0], len(name))].append(name)
        self.edges_of: dict[int, list[Edge]] = defaultdict(list)
        for edge in graph.edges:
            self.edges_of[edge[0]].append(edge)
            self.edges_of[edge[1]].append(edge)
        for edges in self.edges_of.values():  # what says most first: a cap never cuts a fix for a heading
            edges.sort(key=lambda e: KIND_ORDER.get(e[2], 1))

    def display(self, node: int, visible: frozenset[int]) -> str:
        """A node's name as the units the caller may see write it most often."""
        counts = Counter({name: n for name, units in self.spelled.get(node, {}).items()
                          for n in [sum(u in visible for u in units)] if n})
        if counts:
            return counts.most_common(1)[0][0]
        return self.graph.nodes[node][0].split(":", 1)[1]

    def link(self, question: str, visible: frozenset[int]) -> list[Seed]:
        """The question's entities as nodes the caller may see (see the module's docstring)."""
        seeds: dict[int, Seed] = {}

        def add(node: int, weight: float, exact: bool) -> None:
            if self.graph.nodes[node][1] == "section":
                weight, exact = weight * SECTION_WEIGHT, False
            if node not in seeds or seeds[node].weight < weight:
                seeds[node] = Seed(node, weight, exact)

        def seen(node: int, name: str) -> bool:
            # By a name a unit the caller may see writes: an alias only a team page uses links
            # nothing for anyone else (it would tell them what the team calls a thing).
            return any(u in visible for u in self.name_units.get((node, name), ()))

        def sees(node: int) -> bool:
            return any(u in visible for u in self.units_of.get(node, ()))

        question = question[:2000]
        for m in PatternExtractor().mentions(question):
            node = self.key_node.get(m.entity.key)
            if node is not None and sees(node):
                add(node, 1.0, True)
        words = [w.casefold() for w in _WORD.findall(question)][:MAX_WORDS]
        linked_words: set[int] = set()
        for n in range(min(MAX_NGRAM, len(words)), 0, -1):
            for i in range(len(words) - n + 1):
                gram = words[i:i + n]
                if n == 1 and len(gram[0]) < 3 and not any(c.isdigit() for c in gram[0]):
                    continue
                if gram[0] in STOPWORDS or gram[-1] in STOPWORDS:
                    continue
                name = " ".join(gram)
                for candidate in {name, canonical("setting", name)}:
                    for node in self.names.get(candidate, ()):
                        if seen(node, candidate):
                            add(node, 1.0, True)
                            linked_words.update(range(i, i + n))
                for node in self.leaves.get(name, ()):
                    if sees(node):
                        add(node, LEAF_WEIGHT, False)
                        linked_words.update(range(i, i + n))
        tried = [w for i, w in enumerate(words) if i not in linked_words and len(w) >= 5 and w not in STOPWORDS]
        for word in tried[:MAX_FUZZY_WORDS]:
            for length in (len(word) - 1, len(word), len(word) + 1):
                for name in self.by_shape.get((word[0], length), ())[:MAX_FUZZY_NAMES]:
                    if _one_edit(word, name):
                        for node in self.names[name]:
                            if seen(node, name):
                                add(node, FUZZY_WEIGHT, False)
        return sorted(seeds.values(), key=lambda s: (-s.weight, s.node))[:MAX_SEEDS]

    def walk(self, seeds: list[Seed], visible: frozenset[int]) -> dict[int, tuple[float, Edge | None]]:
        """Every node reached within two hops: its weight and the edge it was reached by (None
        for a seed), the heaviest way."""
        reached: dict[int, tuple[float, Edge | None]] = {s.node: (s.weight, None) for s in seeds}
        frontier = [s.node for s in seeds]
        budget, looked = MAX_EDGES, 0
        for _ in range(2):
            step: dict[int, tuple[float, Edge]] = {}
            for node in frontier[:MAX_FRONTIER]:
                weight = reached[node][0]
                for edge in self.edges_of.get(node, ()):
                    looked += 1
                    if budget <= 0 or looked > 8 * MAX_EDGES:  # (edges the caller may not see cost too)
                        break
                    if edge[3] not in visible:
                        continue
                    budget -= 1
                    other = edge[1] if edge[0] == node else edge[0]
                    value = weight * HOP_DECAY * edge[4]
                    if other not in reached and (other not in step or step[other][0] < value):
                        step[other] = (value, edge)
            reached.update(step)
            frontier = sorted(step, key=lambda n: -step[n][0])
            if not frontier or budget <= 0:
                break
        return reached

    def rank(self, question: str, visible: frozenset[int], depth: int) -> GraphHits:
        seeds = self.link(question, visible)
        if not seeds:
            return GraphHits()
        reached = self.walk(seeds, visible)
        seed_of = {s.node: s for s in seeds}
        # What a passage must name to count as naming what was asked: an exact seed, or a node one
        # typed edge from one ("How do I fix E1042?": the setting that fixes it).
        asked = {n for n, s in seed_of.items() if s.exact}
        for node in list(asked):
            for edge in self.edges_of.get(node, ())[:MAX_EDGES]:
                answer = _answers(edge, node)
                if answer is not None and edge[3] in visible and answer in reached:
                    asked.add(answer)
        named: dict[int, set[int]] = defaultdict(set)  # unit -> what was asked that it names
        rest: dict[int, float] = defaultdict(float)
        via: dict[int, list[int]] = defaultdict(list)  # unit -> reached nodes it names
        for node, (weight, _) in reached.items():
            units = [u for u in self.units_of.get(node, ()) if u in visible]
            if not units:
                continue
            rarity = 1.0 / (1.0 + math.log(len(units)))
            for u in units[:MAX_UNITS]:
                rest[u] += weight * rarity
                via[u].append(node)
                if node in asked:
                    named[u].add(node)
        stated: dict[int, list[Edge]] = defaultdict(list)
        for s in seeds:
            for edge in self.edges_of.get(s.node, ())[:MAX_EDGES]:
                between = edge[0] in seed_of and edge[1] in seed_of and edge[2] != "in_section"
                if between and edge[3] in visible and edge not in stated[edge[3]]:
                    stated[edge[3]].append(edge)
                    rest[edge[3]] += 0.5 * edge[4]
        score = {u: len(named[u]) + rest[u] / (1.0 + rest[u]) for u in rest}
        scored = sorted(rest, key=lambda u: (-score[u], u))[:depth]
        notes = {u: self.summary(reached, named[u], via[u], stated[u], visible) for u in scored}
        return GraphHits(((u, score[u]) for u in scored), notes)

    def summary(self, reached: dict[int, tuple[float, Edge | None]], named: set[int], via: list[int],
                stated: list[Edge], visible: frozenset[int]) -> str:
        """How ``unit`` connects to the question, in a line: what it names, what it states
        between the question's entities, and the path to what it names beyond them."""
        def name(node: int) -> str:
            return self.display(node, visible)

        parts: list[str] = []
        seeds_named = sorted((n for n in named if reached[n][1] is None), key=name)
        if seeds_named:
            parts.append("names " + ", ".join(name(n) for n in seeds_named))
        said = set()
        for s, t, kind, _, _ in stated[:2]:
            said.add((s, t, kind))
            parts.append(f"{name(s)} {VERBS.get(kind, kind)} {name(t)}")
        for node in sorted(via, key=lambda n: (n not in named, -reached[n][0])):
            edge = reached[node][1]
            if edge is None or self.graph.nodes[node][1] == "section" or edge[:3] in said or len(parts) >= 3:
                continue  # (a seed, said above; a section is the passage's own heading)
            said.add(edge[:3])
            parts.append(f"names {name(node)}: {name(edge[0])} {VERBS.get(edge[2], edge[2])} {name(edge[1])}")
        if not parts and via:  # (reached only through a heading: say which)
            parts.append(f"in {name(via[0])}")
        text = "; ".join(parts)
        return text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS - 1].rstrip() + "…"


class GraphLeg:
    """Walks the organisation's knowledge graph (see the module's docstring). With no graph in
    the store, or graph reading off, the leg is unavailable and says why."""

    name = "graph"

    def __init__(self, store: GraphStore | None, extractor: str, why: str = "") -> None:
        self.store, self.extractor, self._why = store, extractor, why
        self._cache: OrderedDict[str, tuple[int, GraphIndex]] = OrderedDict()
        self._jobs: dict[str, _Read] = {}  # the read of each organisation's graph
        self._lock = threading.Lock()
        self.missing = 0  # units the extractor has not read (the engine counts them)

    def available(self) -> bool:
        return self.store is not None

    @property
    def why(self) -> str:
        if self.store is None:
            return self._why
        if self.missing:  # (no count: it is every tenant's, and a caller is one; `electa stats` says it)
            return "some units are not in the knowledge graph yet (stored before it, or read by another extractor): run" \
                " `electa reindex`"
        return ""

    def recount(self) -> None:
        """How many units this leg's extractor has not read (another's reading does not count)."""
        if self.store is not None:
            self.missing = max(0, self.store.count_graph_units() - self.store.count_graph(self.extractor)["units"])

    def index(self, org: str) -> GraphIndex:
        """``org``'s graph in memory, read again only when ``org``'s graph changed (its
        :meth:`GraphStore.graph_version`), once however many searches ask at the same moment.

        While it is read again, the search that found it changed waits at most
        :data:`REBUILD_WAIT_S`, the others not at all: they walk the graph read before. That is
        safe as well as quick: a unit's text never changes under its id (an update writes new
        units; ids are never reused), and every search keeps only the units the caller may see
        *now* (:meth:`_scope`), so a unit deleted or closed to the caller since is not walked;
        what the older graph lacks is the newest units, for the moment it takes to read them. A
        read that fails leaves the older graph searched and is tried again after
        :data:`RETRY_AFTER_S` (with none read before, the searches meanwhile fail at once)."""
        assert self.store is not None
        version = self.store.graph_version(org)
        started = False
        with self._lock:
            found = self._cache.get(org)
            if found is not None and found[0] == version:
                self._cache.move_to_end(org)
                return found[1]
            job = self._jobs.get(org)
            stale = job is None or (job.future.done() and (job.version != version or job.failed()))
            resting = job is not None and job.failed_at is not None and time.monotonic() - job.failed_at < RETRY_AFTER_S
            if stale and not resting:
                job, started = self._read(org, version), True
            assert job is not None
        if found is None:  # nothing to walk meanwhile: wait (within the leg's budget)
            return job.future.result()
        if not started:
            return found[1]
        try:
            built = job.future.result(timeout=REBUILD_WAIT_S)
        except FutureTimeout:
            return found[1]
        except Exception:
            log.warning("reading %s's knowledge graph again failed; searching the one read before", org, exc_info=True)
            return found[1]
        return built if job.version >= found[0] else found[1]

    def _read(self, org: str, version: int) -> _Read:
        """Start reading ``org``'s graph (at ``version`` or later) in a thread of its own, to be
        kept when it is read. Called with the lock held."""
        assert self.store is not None
        store, job = self.store, _Read(version)
        if len(self._jobs) > 2 * MAX_CACHED:  # (what is left of reads of organisations no longer kept)
            now = time.monotonic()
            for gone in [o for o, j in self._jobs.items() if j.future.done() and o not in self._cache and o != org
                         and not (j.failed_at is not None and now - j.failed_at < RETRY_AFTER_S)]:
                self._jobs.pop(gone)

        def read() -> None:
            try:
                built = GraphIndex(store.org_graph(org))
                with self._lock:
                    kept = self._cache.get(org)
                    if kept is None or kept[0] < version:
                        if kept is None and len(self._cache) >= MAX_CACHED:
                            gone = next(iter(self._cache))  # (the one searched longest ago)
                            self._cache.pop(gone)
                            if gone in self._jobs and self._jobs[gone].future.done():
                                self._jobs.pop(gone)
                        self._cache[org] = (version, built)
                        self._cache.move_to_end(org)
            except BaseException as exc:  # (the search waiting on it reports the leg's failure)
                job.failed_at = time.monotonic()
                job.future.set_exception(exc if isinstance(exc, Exception) else RuntimeError(f"graph read stopped: {exc!r}"))
                if not isinstance(exc, Exception):
                    raise
                return
            job.future.set_result(built)

        try:
            threading.Thread(target=read, name=f"graph-read-{org}", daemon=True).start()
        except RuntimeError as exc:  # ("can't start new thread": this search fails, the next tries again)
            job.failed_at = time.monotonic() - RETRY_AFTER_S
            job.future.set_exception(exc)
        self._jobs[org] = job
        return job

    def _scope(self, caller: Caller, allowed: AllowedSet) -> tuple[GraphIndex, frozenset[int]]:
        """The caller's organisation's graph and the units of it the caller may see (the last
        answer kept: a mode's several searches for one caller pass the same allowed set)."""
        index = self.index(caller.org)
        last = index.last_visible
        if last is not None and last[0] is allowed.ids:
            return index, last[1]
        visible = index.graph.visible(allowed.ids)
        index.last_visible = (allowed.ids, visible)
        return index, visible

    def linked_names(self, query: str, caller: Caller, allowed: AllowedSet) -> list[str]:
        """The names (as the caller's units write them) of the nodes ``query`` links to: the
        graph mode's entities without an LLM (SPEC E7)."""
        if self.store is None:
            return []
        index, visible = self._scope(caller, allowed)
        return [index.display(s.node, visible) for s in index.link(query, visible)] if visible else []

    def search(self, query: str, caller: Caller, allowed: AllowedSet, depth: int) -> GraphHits:
        if self.store is None:
            return GraphHits()
        index, visible = self._scope(caller, allowed)
        if not visible:
            return GraphHits()
        return index.rank(query, visible, depth)
