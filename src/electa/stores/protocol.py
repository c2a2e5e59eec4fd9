"""The store contract every backend honours (the contract suite in electa.testing checks it)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from electa.auth.keys import KeyRecord
from electa.auth.scopes import Scope
from electa.stores.bm25_memory import BM25Image
from electa.types import Access, Caller, Chunk, ChunkKind

if TYPE_CHECKING:
    from electa.config import Settings
    from electa.graph.extract import Extracted
    from electa.graph.rows import OrgGraph


@dataclass(frozen=True)
class PreparedDocument:
    """A document ready to store: its chunks and, per chunk, a vector (or None); ``lang`` its
    language (ISO 639-1), or '' for the store to detect (:func:`language_of`)."""

    ext_id: str
    title: str
    url: str
    text_hash: str
    chunks: tuple[Chunk, ...]
    vectors: tuple[np.ndarray | None, ...] = field(compare=False, hash=False)
    lang: str = ""


def language_of(doc: PreparedDocument) -> str:
    """``doc``'s language: as given, or read from its title and text (its parent units, a Q&A
    pair's question and answer, a curated answer's triggers and answer), by
    :func:`electa.text.language.detect_document`."""
    from electa.text.language import detect_document

    return doc.lang or detect_document(doc.title, [c.text for c in doc.chunks if c.kind is not ChunkKind.CHILD])


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
    lang: str = ""  # its document's language ('' for none detected: analysed as the default)


@dataclass(frozen=True)
class AllowedSet:
    """The unit ids a caller may see, sorted (SPEC B8). Legs filter with it at match time.
    ``caller`` is whose rule it is: an index inside the database (pgvector) pushes the rule
    down into its query rather than shipping every id, then checks its results against ``ids``."""

    ids: np.ndarray
    generation: int
    caller: Caller | None = None

    def __len__(self) -> int:
        return int(self.ids.size)


class TextIndex(StrEnum):
    """The full-text indexes a store keeps, each over two weighted fields.

    ``UNITS``: parent units (title = heading path, body). ``QA``: Q&A pairs (question, answer).
    """

    UNITS = "units"
    QA = "qa"


def document_kind(doc: PreparedDocument) -> str:
    """How a store files a document: ``qa`` or ``curated`` by its first unit, else ``doc``."""
    first = doc.chunks[0].kind if doc.chunks else ChunkKind.PARENT
    return first.value if first in (ChunkKind.QA, ChunkKind.CURATED) else "doc"


def same_documents(source: SourceRecord, docs: Sequence[PreparedDocument]) -> set[tuple[str, str, str, str]]:
    """What a source's stored locations hold when it holds exactly ``docs``: each document's
    text hash, address, id in the file and kind. A source whose content hash changed while these
    did not (the same file read again by another reader that reads it the same, or bytes changed
    where nothing is read: a comment, a script, spaces) is unchanged: its version and last change
    stay, and its hash, kind and count of documents are recorded."""
    return {(d.text_hash, d.url or source.url, d.ext_id, document_kind(d)) for d in docs}


def same_access(stored: Mapping[str, object], access: Access) -> bool:
    """Whether a source's stored access (``source()["access"]``) reads the same as ``access``:
    the same public flag and the same principals, in any order."""
    found = stored.get("principals")
    principals = [str(p) for p in found] if isinstance(found, list | tuple) else []
    return (bool(stored.get("public")), sorted(set(principals))) == (bool(access.public), sorted(set(access.principals)))


class IndexStore(Protocol):
    """Persistent home of sources, documents, units (chunks), vectors and full-text indexes.

    Contract (:class:`electa.testing.store_contract.StoreContract` checks every rule):
    - ``put_source`` is atomic: after a crash the store holds the source entirely as before or
      entirely as new. An unchanged ``content_hash`` with the same access and address changes
      nothing (``unchanged``); nor does another hash whose documents are all as stored (same
      text, address and id: :func:`same_documents`), but for the hash recorded. An update keeps
      the documents it still holds (same text, same access) with their units and vectors (SPEC A5).
    - Identical text with identical access within an organisation and agent is stored once;
      further copies add only a location (URL) (SPEC A3).
    - ``delete_source`` removes the source; a document no other source holds goes with all its
      units, from every index (SPEC A5). Unknown source: ``-1``.
    - ``allowed(caller)`` lists exactly the units of the caller's organisation (and agent, when
      given) that are public or carry one of the caller's principals, sorted.
    - ``generation`` increases with every change of sources or units, across processes;
      ``backfills`` with every :meth:`put_vectors` (and each write of term weights or graph readings
      that adds some); ``version`` moves when either does.
    - Unit ids only grow and are never reused, so a unit's text never changes.
    - Every full-text read (``lexical_image`` aside, whose rows the legs filter by the allowed
      set) stays inside the caller's access filter.
    - Every unit is stored with its injection marks (:func:`electa.ingest.injection.scan` of its
      title and text), in the same transaction; they go when the unit goes (a source deleted or
      updated). ``flagged`` lists them per organisation and never crosses organisations.
    """

    @property
    def directory(self) -> Path:
        """A local directory for caches of this store (the dense index file)."""
        ...

    # -- sources and documents ---------------------------------------------------------------
    def put_source(self, source: SourceRecord, docs: Sequence[PreparedDocument],
                   model_id: str = "") -> SourceOutcome:
        """Store a source and its documents in one transaction; vectors are stored as
        ``model_id``'s. The first vectors name the store's model (``meta("model_id")``); vectors
        of another model raise :class:`electa.errors.ModelMismatchError`."""
        ...

    def delete_source(self, org: str, agent: str, uri: str) -> int:
        """Remove a source; the number of units removed with it, or ``-1`` when unknown."""
        ...

    def source(self, org: str, agent: str, uri: str) -> dict[str, Any] | None:
        """The stored source as a dict (keys as in :meth:`list_sources`), or None."""
        ...

    def source_unit_ids(self, org: str, agent: str, uri: str, kinds: Sequence[ChunkKind],
                        ext_ids: Sequence[str] | None = None) -> list[int]:
        """The ids, ascending, of the units of ``kinds`` of the documents the stored source
        ``uri`` holds (none when it is not stored), of those it holds under ``ext_ids`` only
        when given: the units whose vectors an update of those documents may reuse
        (:mod:`electa.ingest.pipeline`)."""
        ...

    def languages(self, caller: Caller) -> tuple[str, ...]:
        """The languages (ISO 639-1) the units of the caller's organisation and agent (every
        agent's, for a caller naming none) are analysed in, sorted; the default language alone
        for none. Only those a stored document is written in now (the last German page deleted,
        German is no longer one). Never another organisation's: a question is analysed in each
        of them, and its scores must not move with another tenant's writes."""
        ...

    def stored_languages(self) -> tuple[str, ...]:
        """Every language any organisation's units are analysed in, sorted (the engine's own
        use, never a caller's: it loads the models those languages need when it opens); unlike
        :meth:`languages`, one whose last page was deleted may still be listed (a model loaded
        for nothing, no search changed)."""
        ...

    def source_updated(self, org: str, ids: Iterable[int]) -> dict[int, float]:
        """When each of ``org``'s sources among ``ids`` last changed (``updated_at``, seconds since
        the epoch: its content or its access; an ingest that finds both the same leaves it);
        other organisations' ids and unknown ones are absent."""
        ...

    def list_sources(self, org: str | None = None) -> list[dict[str, object]]:
        """Every source (of ``org``), ordered by org, agent, uri: ``id, org, agent, uri, kind,
        url, version, content_hash, documents, access`` (a dict: ``org, agent, public,
        principals`` sorted) ``, updated_at``."""
        ...

    def has_sources(self, org: str) -> bool:
        """Whether ``org`` holds any source (one index probe, whatever its number)."""
        ...

    def known_text_hashes(self, org: str, agent: str, access: Access,
                          among: Iterable[str] | None = None) -> set[str]:
        """Text hashes of the documents stored for ``org``/``agent`` under exactly ``access``;
        with ``among``, only those of them (what one source's ingest asks: the whole set is
        read for nothing at every file of a large organisation)."""
        ...

    # -- injected instructions (see electa.ingest.injection) -----------------------------------
    def flagged(self, org: str, agent: str | None = None) -> list[dict[str, object]]:
        """The units of ``org`` (of ``agent`` only, when given) in which injected instructions
        were found, for a person to look at, ordered by agent, source and unit id. Each is a dict:
        ``chunk_id, org, agent, kind``; ``source`` (the first source holding its document, by
        name) and ``sources`` (every one); ``url`` and ``title`` of its document; ``rules`` (the
        rule names found, sorted); ``excerpts`` (one per finding) and ``findings`` (dicts:
        ``field`` ``title`` or ``text``, ``rule``, ``start``, ``end``, ``excerpt``: offsets into
        that field). Every unit of the organisation is listed, whatever its access: this is an
        administrator's list, never a visitor's."""
        ...

    def rescan_injections(self, limit: int) -> tuple[int, int]:
        """Mark up to ``limit`` units stored before the current injection rules
        (:data:`electa.ingest.injection.RULES_VERSION`: an older store, or older rules) as
        ``put_source`` marks new ones; returns ``(scanned, still to scan)``, and with ``limit`` 0
        only counts. ``electa reindex`` runs it until nothing is left."""
        ...

    # -- source names (see electa.ingest.naming) ----------------------------------------------
    def roots(self, org: str, agent: str) -> dict[str, str]:
        """Names of ingested folders and files -> the path each stands for."""
        ...

    def claim_roots(self, org: str, agent: str,
                    decide: Callable[[dict[str, str]], Sequence[tuple[str, str]]]) -> None:
        """In one transaction: forget roots none of whose sources is left, show ``decide`` the
        roots as they are, then record (or re-point) the ``(name, path)`` pairs it returns.
        Whatever ``decide`` raises records nothing."""
        ...

    def forget_root(self, org: str, agent: str, name: str) -> None:
        """Forget the name ``name`` (its sources stay)."""
        ...

    def rename_source(self, org: str, agent: str, old_uri: str, new_uri: str) -> bool:
        """Give a source a new name (its documents' ids named after it follow); False when
        there is no source ``old_uri`` or ``new_uri`` is taken."""
        ...

    # -- units and access --------------------------------------------------------------------
    def allowed(self, caller: Caller) -> AllowedSet:
        """The unit ids the caller may see, sorted, with the generation they were read at."""
        ...

    def units(self, ids: Sequence[int]) -> dict[int, StoredUnit]:
        """The stored units of ``ids`` (ids not stored are left out), whatever the caller."""
        ...

    def leads(self, document_ids: Sequence[int]) -> dict[int, tuple[str, StoredUnit]]:
        """Each document's title and opening section (the parent of the same document its title
        unit is shown as: its first with text, :func:`electa.ingest.chunker.title_unit_parent`),
        by document id, whatever the caller (a document's units share its access: the engine asks
        only about documents a search found for its caller); documents without a title unit are
        left out, and so is an opening deleted since. The engine reads it to choose the passage
        that stands for a page (``RANK_RULES`` 8)."""
        ...

    def unit_languages(self, ids: Sequence[int]) -> dict[int, str]:
        """The language (as :attr:`StoredUnit.lang`) of each stored unit of ``ids`` (ids not
        stored are left out), whatever the caller: :meth:`units` without reading their text
        (the dense leg's crossing scorer reads it for a hundred candidates a search)."""
        ...

    def title_matches(self, word: str, caller: Caller, limit: int) -> list[int]:
        """Up to ``limit`` ids of parent units the caller may see whose title holds ``word``
        (as the full-text analysis reads it: case and English endings folded), in no order."""
        ...

    def mentions(self, text: str, caller: Caller) -> bool:
        """Whether a parent unit the caller may see holds a content word of ``text`` in its
        title or body (as the full-text analysis reads it)."""
        ...

    def lexical_image(self, index: TextIndex, weights: tuple[float, float],
                      recent_above: int | None = None) -> BM25Image | None:
        """An in-memory BM25 image of a full-text index, every tenant's rows, at the store's
        current generation; ``weights`` weight its two fields. The legs rank with it over the
        caller's allowed set (:mod:`electa.stores.bm25_memory`). With ``recent_above``: only
        the rows above that id, at a cost in proportion to the rows written since the last
        :meth:`trim_recent` above it, not to the corpus (the segment a write rebuilds); ``None``
        when a trim, by any process, removed rows above ``recent_above`` (rebuild whole).
        Without ``recent_above`` it never returns ``None``."""
        ...

    def trim_recent(self, index: TextIndex, upto: int) -> None:
        """Rows up to ``upto`` need no longer be readable through ``recent_above`` (a full
        image holds them); afterwards ``recent_above`` below ``upto`` answers ``None`` in every
        process. A no-op for a backend that does not keep them apart."""
        ...

    def save_image(self, index: TextIndex, weights: tuple[float, float], image: BM25Image) -> bool:
        """Keep ``image`` (a whole image of ``index`` built with ``weights``) where every process
        on this store can open it without rebuilding (:meth:`saved_image`); ``True`` when it is
        now the saved one, ``False`` when the backend keeps none or one as new (same or higher
        ``max_row``) is saved already."""
        ...

    def saved_image(self, index: TextIndex, weights: tuple[float, float]) -> BM25Image | None:
        """The image last kept by :meth:`save_image` for ``index`` and ``weights``, covering
        every row up to its ``max_row`` that exists now (and perhaps rows deleted since it was
        built: the legs filter by the allowed set), at the store's current generation; ``None`` when there is
        none, when its rows above ``max_row`` can no longer be read through ``recent_above``
        (trimmed past it), or when it does not belong to this store's current contents (a
        database restored from a copy): then the caller builds a whole one."""
        ...

    # -- vectors -----------------------------------------------------------------------------
    def vectors(self, model_id: str, after_id: int = 0) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Stored vectors of ``model_id`` with unit id > ``after_id``, in ``(ids, vecs)`` batches,
        ids ascending."""
        ...

    def vectors_of(self, model_id: str, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, vectors)`` of ``model_id`` for those of ``ids`` that have one, sorted."""
        ...

    def vector_ids(self, model_id: str) -> np.ndarray:
        """Every unit id with a vector of ``model_id``, sorted."""
        ...

    def count_vectors(self, model_id: str) -> int: ...

    def count_vector_chunks(self) -> int:
        """How many units should carry a vector (every kind but curated answers)."""
        ...

    def chunks_missing_vectors(self, model_id: str, limit: int, after_id: int = 0,
                               orgs: Sequence[str] | None = None) -> list[tuple[int, str, str]]:
        """``(id, title, text)`` of up to ``limit`` units with id > ``after_id`` that should carry
        a vector and have none of ``model_id``, by id; of ``orgs``' documents only, when given."""
        ...

    def last_unit_id(self) -> int:
        """The highest unit id stored (0 when none): every unit written later has a higher one."""
        ...

    def put_vectors(self, model_id: str, ids: Sequence[int], vecs: np.ndarray) -> None:
        """Add (or replace) vectors of units stored earlier; ``backfills`` moves."""
        ...

    def drop_vectors_except(self, model_id: str, also: Sequence[str] = ()) -> None:
        """Keep only ``model_id``'s vectors (and ``also``'s, an organisation's own reading) and
        make ``model_id`` the store's model; ``generation`` moves."""
        ...

    def documents_missing_title_units(self, limit: int) -> list[tuple[int, str, int]]:
        """``(document id, title, first parent id)`` of titled documents with a parent that has
        text and no title unit (chunked before title units), by document id."""
        ...

    def add_title_units(self, model_id: str, rows: Sequence[tuple[int, str, int]], vecs: np.ndarray) -> None:
        """One title unit (with its vector) per ``(document id, title, parent id)``, in one
        transaction; documents deleted or given one meanwhile are skipped."""
        ...

    def dense_index(self, model_id: str, dim: int, settings: Settings) -> VectorIndex:
        """The dense index over this store's vectors of ``model_id`` (a :class:`VectorIndex`):
        faiss HNSW beside the embedded store, pgvector HNSW inside PostgreSQL."""
        ...

    # -- state -------------------------------------------------------------------------------
    @property
    def generation(self) -> int: ...

    @property
    def backfills(self) -> int: ...

    @property
    def state(self) -> tuple[int, int]:
        """``(generation, backfills)`` read together."""
        ...

    @property
    def version(self) -> str:
        """Moves with every change a search can see; what result caches are keyed by."""
        ...

    def meta(self, key: str) -> str | None:
        """A stored setting of the store: ``model_id`` (the model its vectors belong to)."""
        ...

    def stats(self) -> dict[str, object]:
        """``sources, documents, qa_pairs, chunks`` (per kind)``, vectors`` (per model)``,
        model_id, generation, organisations, bytes_on_disk``."""
        ...

    def close(self) -> None:
        """Close this thread's connection (the store stays usable; it reopens on demand)."""
        ...

    def shutdown(self) -> None:
        """Release what the whole store holds (a pool of connections): the process is done
        with it. Idempotent; the store is not used afterwards (``Engine.close`` calls it)."""
        ...


@runtime_checkable
class SparseTermStore(Protocol):
    """A store that keeps learned term weights (SPEC B3) of parent units, per model: the embedded
    store and the PostgreSQL backend do (a store that does not: the leg says so).

    Contract (:class:`electa.testing.store_contract.SparseTermStoreContract`):
    - ``put_sparse`` stores each unit's weights once per model (a unit's text never changes);
      a unit deleted meanwhile is skipped; deleting a unit deletes its weights.
    - ``sparse_rows_after(model_id, seq)`` yields ``(seq, unit id, terms, weights)`` stored after
      ``seq``, in the order stored: an index image catches up by ``seq``.
    - ``chunks_missing_sparse`` lists parent units above an id that lack the model's weights.
    """

    def chunks_missing_sparse(self, model_id: str, limit: int, after_id: int = 0) -> list[tuple[int, str, str]]: ...

    def put_sparse(self, model_id: str, rows: Sequence[tuple[int, np.ndarray, np.ndarray]]) -> None: ...

    def sparse_rows_after(self, model_id: str, after_seq: int) -> Iterator[tuple[int, int, bytes, bytes]]: ...

    def count_sparse(self, model_id: str) -> int: ...

    def count_parents(self) -> int:
        """How many parent units there are: each should have weights of the leg's model."""
        ...

    def drop_sparse_except(self, model_id: str) -> int: ...


@runtime_checkable
class GraphStore(Protocol):
    """A store that keeps the knowledge graph (SPEC A6, :mod:`electa.graph.rows`): nodes per
    organisation, and per unit (sections of pages, Q&A pairs) the nodes it mentions and the
    edges it states. The embedded store and the PostgreSQL backend do.

    Contract (:class:`electa.testing.store_contract.GraphStoreContract`):
    - ``put_graph(extractor, rows)`` stores each unit's extraction in one transaction, replacing
      whatever an earlier reading of that unit stored, and marks the unit read by ``extractor``
      (with nothing found, too); a unit deleted meanwhile is skipped; :attr:`IndexStore.version`
      moves (search results change), the generation does not. Returns the units stored.
    - A unit deleted (its source deleted or updated) takes its mentions and edges with it, and a
      node no unit mentions any longer goes too: nothing is orphaned.
    - The same key in two organisations is two nodes; ``org_graph(org)`` reads ``org``'s alone.
      It is not filtered by access: a reader keeps only the rows of units its caller may see
      (:meth:`electa.graph.rows.OrgGraph.visible`) before using any.
    - ``units_missing_graph`` lists the units above an id that ``extractor`` has not read.
    - ``graph_version(org)`` moves with every change of ``org``'s graph and no other's.
    """

    def units_missing_graph(self, extractor: str, limit: int, after_id: int = 0) -> list[tuple[int, str, str]]:
        """``(id, title, text)`` of up to ``limit`` units above ``after_id`` not read by ``extractor``, by id."""
        ...

    def put_graph(self, extractor: str, rows: Sequence[tuple[int, Extracted]]) -> int: ...

    def org_graph(self, org: str) -> OrgGraph: ...

    def graph_version(self, org: str) -> int:
        """Moves whenever one of ``org``'s units has its reading stored or loses it (its
        source deleted or updated, another extractor's reading replacing it); another
        organisation's writes leave it as it is. A reader caches ``org``'s graph by it."""
        ...

    def count_graph(self, extractor: str | None = None) -> dict[str, int]:
        """``units`` read (by ``extractor``, when given), ``nodes``, ``mentions`` and ``edges``
        stored, every organisation's."""
        ...

    def count_graph_units(self) -> int:
        """How many units there are to read (each should be read by the engine's extractor)."""
        ...

    def drop_graph_except(self, extractor: str) -> int:
        """Forget every unit's reading by another extractor (its nodes, mentions and edges);
        returns how many units were forgotten."""
        ...


class OperationalStore(Protocol):
    """What the service keeps besides the index: curated answers, feedback, Q&A pairs, agent
    settings, organisations and API keys, secrets, content gaps, usage, conversation turns.

    Contract (:class:`electa.testing.store_contract.OperationalStoreContract`):
    - Every read is scoped by organisation (and agent where given); nothing crosses tenants.
    - Keys are stored by hash only: ``add_api_key`` shows the key once; a revoked or expired
      key has no organisation (``org_for_key`` is None) but its record stays readable.
    - Naming an organisation that does not exist raises :class:`electa.errors.NotFoundError`
      (keys, secrets rotation).
    """

    def curated_answer(self, question: str, org: str, allowed_ids: np.ndarray) -> tuple[str, str, str] | None:
        """``(trigger, answer, url)`` of a curated answer among ``allowed_ids`` whose trigger is
        the question or a phrase of two words or more inside it (folded words; longest wins)."""
        ...

    def add_feedback(self, org: str, agent: str, query: str, url: str, signal: int, origin: str = "backend",
                     voter: str = "", person: str = "") -> None:
        """Record +1 / -1 on ``url`` for ``query``; ``origin`` is ``backend`` or ``visitor``
        (anything else raises :class:`electa.errors.ConfigError`); ``person`` is the user whose
        personalisation it teaches ('' for none)."""
        ...

    def person_signals(self, org: str, agent: str | None, person: str) -> list[tuple[str, int]] | None:
        """``(url, net signal clipped to ±1)`` of ``person``'s feedback in ``org`` (``agent``'s,
        or every agent's with None), most recently voted first, at most 500 URLs; ``[]`` for
        ``person=''``; None when the person opted out (:meth:`set_personalise`)."""
        ...

    def set_personalise(self, org: str, person: str, on: bool) -> None:
        """Opt ``person`` of ``org`` in (the default) or out of personalisation."""
        ...

    def forget_person(self, org: str, person: str) -> int:
        """Delete ``person``'s feedback in ``org`` (every agent's); an opt-out stays. Returns the
        number of rows deleted."""
        ...

    def feedback(self, org: str, agent: str, visitors: bool = False,
                 urls: Sequence[str] | None = None) -> list[tuple[str, str, int]]:
        """``(query, url, net signal)`` ordered by query and url (of ``urls`` only, when given),
        each voter counted at most once either way; visitors' feedback only when ``visitors``."""
        ...

    def qa_pairs(self, org: str, agent: str) -> list[tuple[str, str, str]]:
        """``(question, answer, url)`` of the agent's Q&A pairs."""
        ...

    def agent_settings(self, org: str, agent: str) -> dict[str, object] | None: ...

    def set_agent_settings(self, org: str, agent: str, settings: dict[str, object]) -> None:
        """Replace the agent's settings (JSON-able); ``generation`` does not move."""
        ...

    def org_settings(self) -> dict[str, dict[str, object]]:
        """Every organisation's own settings (those that decide how its units are stored, such
        as which model reads them), by organisation: the engine's own use, never a caller's."""
        ...

    def set_org_settings(self, org: str, settings: dict[str, object]) -> None:
        """Replace an organisation's settings (JSON-able); ``generation`` moves, since they
        change what its searches return (every cache and index image follows the generation)."""
        ...

    def server_secret(self, name: str) -> bytes:
        """A random 32-byte secret named ``name``, made on first use, the same ever after."""
        ...

    def add_organisation(self, name: str) -> None:
        """Create an organisation (idempotent)."""
        ...

    def organisations(self) -> list[str]:
        """Organisation names, sorted."""
        ...

    def add_api_key(self, org: str, scope: Scope | str, name: str = "",
                    expires_at: float | None = None) -> tuple[str, KeyRecord]:
        """A new key of ``scope`` for ``org`` and its record (an expiry in the past raises
        :class:`electa.errors.ConfigError`)."""
        ...

    def api_key(self, key: str) -> KeyRecord | None:
        """The record of ``key`` whatever its state, or None."""
        ...

    def api_keys(self, org: str) -> list[KeyRecord]:
        """``org``'s keys, oldest first."""
        ...

    def revoke_api_key(self, org: str, key_id: int) -> KeyRecord:
        """Revoke a key of ``org`` for good; another organisation's or unknown key raises
        :class:`electa.errors.NotFoundError`."""
        ...

    def org_for_key(self, key: str) -> str | None:
        """The organisation of a usable key (not revoked, not expired), or None."""
        ...

    def signing_secret(self, org: str) -> str | None:
        """``org``'s visitor-token secret, or None (no organisation, or none made yet)."""
        ...

    def rotate_signing_secret(self, org: str) -> str:
        """A new visitor-token secret for ``org``, replacing the old one."""
        ...

    def add_gap(self, org: str, agent: str, question: str, confidence: float, reason: str) -> None: ...

    def gaps(self, org: str, agent: str | None = None) -> list[dict[str, object]]:
        """``agent, question, confidence, reason, created_at`` of recorded gaps, newest first
        (500 at most)."""
        ...

    def add_turn(self, org: str, agent: str, conversation: str, question: str, answer: str,
                 citations: list[object], confidence: float) -> None: ...

    def recent_turns(self, org: str, agent: str, conversation: str, limit: int = 6) -> list[tuple[str, str]]:
        """The last ``limit`` ``(question, answer)`` of a conversation, oldest first."""
        ...

    def count_usage(self, org: str, agent: str, answer_chars: int) -> None:
        """Count one answered question of ``answer_chars`` characters for today (UTC)."""
        ...

    def usage(self, org: str) -> list[dict[str, object]]:
        """``agent, day, questions, answer_chars`` per agent and day, newest day first."""
        ...


class Store(IndexStore, OperationalStore, Protocol):
    """A whole backend: the index and the operational tables. ``SqliteStore`` is one."""


class VectorIndex(Protocol):
    """The dense index over a store's vectors of one model (:class:`FaissHnswIndex`).

    Contract: ``search`` returns at most ``k`` ``(unit id, cosine)`` best first, every id in
    ``allowed``; ``sync`` catches up with the store's vectors (added, backfilled, deleted);
    ``save`` persists what ``sync`` did (``force=False``: it may defer, when the store can rebuild
    what is unsaved, to keep a write's cost off the write); ``len`` counts the vectors it holds.
    """

    model_id: str

    def search(self, vec: np.ndarray, k: int, allowed: AllowedSet) -> list[tuple[int, float]]: ...

    def sync(self) -> None: ...

    def save(self, force: bool = True) -> None: ...

    def __len__(self) -> int: ...
