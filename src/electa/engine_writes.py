"""The engine's write path (a half of :class:`electa.engine.Engine`, :mod:`electa.engine_parts`
says what it reads of it): ingest, sync, uploads and deletions, what each write leaves to do,
the dense reading an organisation is read with, and ``electa reindex``.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from electa.embedders.chain import ChainEmbedder
from electa.engine_parts import EngineParts
from electa.errors import ConfigError, EmbedderUnavailable, ModelMismatchError, NotFoundError
from electa.ingest.page import Loaded
from electa.ingest.pipeline import Ingestor, IngestReport, same_source
from electa.ingest.vector_fill import adopt_vectors, embed_missing, nothing_missing, title_vectors
from electa.legs.dense_readings import BY_LANGUAGE, KEEPING, DenseReadings, check_reading
from electa.stores.protocol import SourceOutcome, SourceRecord, SparseTermStore
from electa.stores.sqlite_ops import check_org_name
from electa.types import Access

log = logging.getLogger("electa.engine")  # (the engine's logger: what a write logs is the engine's)


@dataclass(frozen=True)
class ReindexReport:
    """What ``electa reindex`` did: the model it embedded with, how many units, in how long."""

    model_id: str
    embedded: int
    seconds: float
    scanned: int = 0  # units stored before the current injection rules, scanned now
    adopted: int = 0  # English units given their vectors of a chain's English model (no model run)


class EngineWrites(EngineParts):
    """The engine's write path: files, folders and uploads stored (SPEC A), each write followed
    by what it leaves to do (the new units' vectors, learned term weights and place in the graph,
    the full-text images refreshed), an organisation's dense reading, and ``reindex``."""

    def read_graph_missing(self, batch: int = 64, after_id: int = 0, progress: bool = False,
                           max_batches: int | None = None, recount: bool = True) -> int:
        """Read every unit above ``after_id`` the extractor has not read into the knowledge graph,
        in committed batches (resumable). Returns how many were read. ``recount=False`` (after a
        write, when none was missing: the new units are read now, and a deletion makes none
        missing) spares the counts over every unit."""
        store = self.graph.store  # (a GraphStore: the leg has none otherwise)
        if store is None:
            return 0
        done = batches = 0
        while max_batches is None or batches < max_batches:
            rows = store.units_missing_graph(self.extractor.name, batch, after_id)
            if not rows:
                break
            store.put_graph(self.extractor.name, [(uid, self.extractor.extract(title, text)) for uid, title, text in rows])
            done, batches, after_id = done + len(rows), batches + 1, rows[-1][0]
            if progress:
                print(f"reindex: {done} units read into the knowledge graph", flush=True)
        if recount:
            self.graph.recount()
        return done

    def encode_sparse_missing(self, batch: int = 64, after_id: int = 0, progress: bool = False,
                               max_batches: int | None = None) -> int:
        """Term weights for every parent unit above ``after_id`` that lacks this model's, in
        committed batches (resumable). Returns how many were made."""
        encoder, store = self.sparse.encoder, self.store
        if encoder is None or not isinstance(store, SparseTermStore):
            return 0
        done = batches = 0
        while max_batches is None or batches < max_batches:
            rows = store.chunks_missing_sparse(encoder.model_id, batch, after_id)
            if not rows:
                break
            vectors = encoder.encode([f"{title}\n{text}" if title else text for _, title, text in rows])
            store.put_sparse(encoder.model_id, [(uid, t, w) for (uid, _, _), (t, w) in zip(rows, vectors, strict=True)])
            done, batches, after_id = done + len(rows), batches + 1, rows[-1][0]
            if progress:
                print(f"reindex: {done} units given learned term weights", flush=True)
        self.sparse.recount(store)  # (after a deletion too: _written calls this on every write)
        return done

    def _ingestor(self, org: str) -> Ingestor:
        if self._mismatch:
            raise ModelMismatchError(self._mismatch)
        # Writing pages under a name makes it an organisation (the store's write records it), so
        # keys, secrets and the console can name it next: `electa ingest --org npm` then `electa
        # keys create --org npm` said "create it first". A name that cannot be one is refused
        # here, before any file is read.
        check_org_name(org)
        self.adopt_default_reading(org)
        s = self.settings
        return Ingestor(self.store, self.embedder if self.index is not None else None, s.parent_chars,
                        s.child_chars, s.child_overlap, int(s.max_file_mb * 2**20), self.recipe, s.language)

    @property
    def new_reading(self) -> str:
        """The dense reading a new organisation gets at its first write: ``settings.dense_reading``
        under the chain with a crossing model of its own (USE), else ``by-language`` (without
        USE, e5 would read every unit twice; without the chain, there is no other)."""
        if self.readings.model is None or self.crossing is None:
            return BY_LANGUAGE
        return self.settings.dense_reading

    def adopt_default_reading(self, org: str) -> str:
        """Store :attr:`new_reading` with an organisation that has no reading stored and no
        source (before its first write, so that its units are read that way from the first:
        ``by-question``'s USE vectors made after each write, with the chain's). One that wrote
        before keeps ``by-language`` (its units lack USE's vectors, which ``electa orgs dense
        ORG by-question`` makes); one whose every source was deleted starts again as new.
        Returns the organisation's reading. (Two first writes store the same; an `electa orgs
        dense` made by another process between this read and write is overwritten.)"""
        if self.readings.model is None:
            return BY_LANGUAGE  # (no chain: no other reading, nothing read)
        stored = self.readings.readings().get(org)  # (read once per generation)
        if stored is not None:
            return stored
        reading = self.new_reading
        if reading == BY_LANGUAGE or self.store.has_sources(org):
            return BY_LANGUAGE
        self.store.set_org_settings(org, {**(self.store.org_settings().get(org) or {}), "dense": reading})
        return reading

    def read_as(self, org: str, reading: str | None = None, progress: bool = False) -> int:
        """Make ``org`` read with ``reading``, by default :attr:`new_reading` (an evaluation's
        organisation measures what a new one gets, whatever its cached store ran before), storing
        it only where needed (not ``by-language`` where none is stored and none is to come).
        Returns how many units were embedded (:meth:`set_dense_reading`)."""
        wanted = check_reading(reading or self.new_reading)
        if self.readings.model is None:
            return 0  # (no chain: no other reading)
        stored = self.readings.readings().get(org)
        if stored == wanted or (stored is None and wanted == BY_LANGUAGE == self.new_reading):
            return 0
        return self.set_dense_reading(org, wanted, progress)

    def _register(self, org: str, report: IngestReport) -> None:
        """Record ``org`` as an organisation once a write of it stored or found a source. A
        store's write records it with the pages; this covers a store whose pages were written
        before that (an `electa sync` finding every file unchanged), once per engine."""
        if org in self._registered or not report.outcomes:
            return
        if org not in self.store.organisations():
            self.store.add_organisation(org)
        self._registered.add(org)

    def _written(self) -> None:
        """After a batch of writes: chunks still without a vector of this model (stored while
        no model was available) are embedded, vectors go into the graph (saved once per batch,
        not per file), the full-text images are rebuilt in the background."""
        if self.index is not None and self.embedder is not None:
            # Units up to the last check all had a vector (ids only grow, vectors go only with
            # their units or a model switch, which reindexes): look above it only. A full scan
            # here cost 0.6-3.4 s per write at 1M units (warm/cold; bench/scale.py's 1M store).
            top = self.store.last_unit_id()  # read first: a unit committed meanwhile lies above it
            if not self._vectors_checked and nothing_missing(self.store, self.embedder.model_id):
                self._vectors_checked = top
            embed_missing(self.store, self.embedder, self.recipe, 256, after_id=self._vectors_checked)
            self._vectors_checked = top
            self.index.sync()
            self.index.save(force=False)  # the store is the truth: the graph's file may lag it
        self.fulltext.refresh()
        if self._warm and self.index is not None and isinstance(self.embedder, ChainEmbedder):
            try:  # (a write that brought the first page in another language: searches that cross follow)
                self._warm_chain()
            except Exception as exc:  # the write stands; the model is loaded inside a search, or said missing there
                log.warning("loading the chain's models after a write failed (%s)", exc)
        self.qa.refresh()
        if self.index is not None and self.readings.multilingual():
            # As the learned term weights below: a failure costs the new units their second
            # vectors until the next write (its watermark stays), never the write.
            try:
                self._embed_own_readings()
            except Exception:
                log.warning("the multilingual vectors of the units just written could not be made", exc_info=True)
        if self.sparse.encoder is not None and isinstance(self.store, SparseTermStore):
            # After the data is committed and the other images refreshed: a failure here costs the
            # new units their learned term weights (the leg then says how many lack them), never
            # the write. The image catches up at the next search.
            top = self.store.last_unit_id()
            try:
                self.encode_sparse_missing(after_id=self._sparse_checked)
                self._sparse_checked = top
            except Exception:
                log.warning("learned term weights of the units just written could not be made", exc_info=True)
                self.sparse.recount(self.store)
        if self.graph.store is not None:
            # As the term weights: a failure costs the new units their place in the graph (the leg
            # says how many lack one), never the write.
            top = self.store.last_unit_id()
            try:
                self.read_graph_missing(after_id=self._graph_checked, recount=bool(self.graph.missing))
                self._graph_checked = top
            except Exception:
                log.warning("the units just written could not be read into the knowledge graph", exc_info=True)
                self.graph.recount()

    def _embed_own_readings(self, max_batches: int | None = None, progress: bool = False) -> int:
        """The multilingual model's vectors of the units of organisations that read with it and
        lack one (after a write: its new units; read after the write committed, so a switch
        made meanwhile is seen). Returns how many were made."""
        orgs, model = self.readings.multilingual(), self.readings.model
        if not orgs or model is None:
            return 0
        top = self.store.last_unit_id()
        done, _ = embed_missing(self.store, model, self.recipe, 256, max_batches, progress,
                                after_id=self._own_checked, orgs=sorted(orgs))
        if max_batches is None:
            self._own_checked = top
        index = self.readings.index()
        index.sync()
        index.save(force=False)
        return done

    def set_dense_reading(self, org: str, reading: str, progress: bool = False) -> int:
        """Make ``org`` read with ``reading`` (:mod:`electa.legs.dense_readings`). For
        ``multilingual`` and ``by-question``, every unit of the organisation is first given the multilingual model's
        vector (committed in batches: interrupt and run again, it resumes), then the setting
        flips, then units another process wrote meanwhile are embedded too. Returns how many
        units were embedded; the organisation's searches read the new way from its next one."""
        check_reading(reading)
        model = self.readings.model
        if model is None or self.index is None:
            raise ConfigError(f"an organisation's own dense reading needs the embedder chain (ELECTA_EMBEDDER=chain);"
                              f" this engine embeds with {self.embedder.model_id if self.embedder else 'none'}"
                              + (f" ({self._mismatch})" if self._mismatch else ""))
        current = dict(self.store.org_settings().get(org) or {})
        done = 0
        if reading in KEEPING:
            done, _ = embed_missing(self.store, model, self.recipe, 256, None, progress, orgs=[org])
        if current.get("dense") != reading:  # (by-language too: else a first write would store the default)
            self.store.set_org_settings(org, {**current, "dense": reading})
        if reading in KEEPING:
            self._own_checked = 0  # what another process wrote before it saw the switch
            done += self._embed_own_readings(progress=progress)
        return done

    def ingest(self, paths: Iterable[str | Path], access: Access, base_url: str = "",
               progress: bool = False, as_name: str | None = None, url_suffix: str | None = None,
               read_noindex: bool = False) -> IngestReport:
        """Ingest files and folders; bad files are reported by name and skipped (SPEC A8).
        Sources are named under each folder's name, or ``as_name`` for a single path; each
        file's address is :func:`electa.ingest.pipeline.page_address` of ``base_url``. A
        folder's HTML page asking not to be indexed is not stored (``report.unindexed``) unless
        ``read_noindex``, or an earlier reading stored it (it is kept up to date, never deleted
        for it: ``report.unindexed_stored``); a page named alone is read whatever it asks."""
        report = self._ingestor(access.org).ingest_paths([Path(p) for p in paths], access, base_url, progress, as_name,
                                                         url_suffix, read_noindex)
        self._register(access.org, report)
        self._written()
        return report

    def sync(self, folders: Iterable[str | Path], access: Access, base_url: str = "",
             progress: bool = False, as_name: str | None = None, url_suffix: str | None = None,
             read_noindex: bool = False) -> IngestReport:
        """Mirror folders: new files are added, changed ones updated (a file whose documents
        read the same, or that another release's reader reads the same, stays unchanged:
        :func:`electa.stores.protocol.same_documents`), and the sources of files that are gone
        from a folder are deleted from every leg (``report.deleted``). Only the
        sources of that folder (same organisation and agent, named under the folder's recorded
        name; see :mod:`electa.ingest.naming`) are ever deleted: never uploads, other folders,
        a file that could not be read, nor anything when a folder could not be listed whole,
        nor a stored page that now asks not to be indexed (``report.unindexed_stored``: kept up
        to date). A stored page that now only sends its visitor to another (a stub's meta
        refresh: :mod:`electa.text.refresh`) is deleted as a file that is gone is
        (``report.moved_stored``): its text is no longer in the folder; so is one that now reads as
        only a table of contents of other pages (``report.contents_stored``: a toctree alone)."""
        roots = [Path(f) for f in folders]
        for root in roots:
            if not root.is_dir():
                raise NotFoundError(f"{root} is not a folder; `electa sync` mirrors folders (use `electa ingest` for files)")
        report = self._ingestor(access.org).ingest_paths(roots, access, base_url, progress, as_name, url_suffix,
                                                         read_noindex)
        self._register(access.org, report)
        listed = {root: name for root, name in report.roots.items() if root not in report.unlisted}
        prefixes = tuple(f"{name}/" for name in listed.values())
        # Sources an older Electa named by absolute path, whose file is gone (those still there were renamed).
        legacy = tuple(f"{root.resolve()}/" for root in listed)
        for source in self.store.list_sources(access.org):
            uri = str(source["uri"])
            if (source["agent"] == access.agent and source["kind"] != "api" and uri not in report.seen
                    and (uri.startswith(prefixes) or (uri.startswith(legacy) and not Path(uri).exists()))):
                self.store.delete_source(access.org, access.agent, uri)
                report.deleted.append(uri)
        self._written()
        return report

    def ingest_loaded(self, uri: str, loaded: Loaded, access: Access, kind: str = "api",
                      url: str = "", content_hash: str = "", progress: bool = False) -> SourceOutcome:
        """Ingest already-loaded documents and Q&A pairs as one source (API uploads, eval)."""
        if not content_hash:
            h = hashlib.sha256()
            for d in loaded.documents:
                h.update(f"{d.ext_id}\x00{d.title}\x00{d.text}\x00{d.url}\x01".encode())
            for q in loaded.qa_pairs:
                h.update(f"{q.ext_id}\x00{q.question}\x00{q.answer}\x00{q.url}\x01".encode())
            for c in loaded.curated:
                triggers = "\x02".join(c.triggers)
                h.update(f"{c.ext_id}\x00{triggers}\x00{c.answer}\x00{c.url}\x01".encode())
            h.update(f"\x03{url}".encode())
            content_hash = h.hexdigest()
        record = SourceRecord(access.org, access.agent, uri, kind, url, content_hash, access)
        existing = self.store.source(access.org, access.agent, uri)
        if existing is not None and existing["kind"] != kind and "api" in (kind, existing["kind"]):
            raise ConfigError(f"{uri!r} is a file ingested from a folder; an upload never replaces it (upload it under"
                              " another name, or remove the file and sync the folder)")
        if same_source(existing, record):
            assert existing is not None
            return SourceOutcome(uri, "unchanged", existing["version"], existing["documents"])
        outcome = self._ingestor(access.org).store_loaded(record, loaded, progress)
        self._written()
        return outcome

    def delete_source(self, org: str, agent: str, uri: str) -> int:
        """Delete a source from every leg. Raises NotFoundError for an unknown source."""
        removed = self.store.delete_source(org, agent, uri)
        if removed < 0:
            raise NotFoundError(f"no source {uri!r} for organisation {org!r}, agent {agent!r}; "
                                "`electa sources list` shows what is stored")
        self._written()
        return removed

    def reindex(self, batch: int = 256, progress: bool = False,
                max_batches: int | None = None) -> ReindexReport:
        """Re-embed every chunk with this engine's model, in committed batches (resumable).

        The old model's vectors keep serving until every chunk has a new one; then the store
        switches model in one transaction and the old vectors are dropped (SPEC A4).

        First, units stored before the current injection rules (an older store) are scanned
        for injected instructions (:meth:`IndexStore.rescan_injections`); that needs no model."""
        start = time.perf_counter()
        scanned = 0
        while max_batches is None or scanned < batch * max_batches:
            step, left = self.store.rescan_injections(batch)
            scanned += step
            if not left:
                break
        if progress and scanned:
            print(f"reindex: {scanned} units scanned for injected instructions", flush=True)
        terms = self.store
        if self.sparse.index is not None and self.sparse.encoder is not None and isinstance(terms, SparseTermStore):
            # Learned term weights for every parent that lacks this model's; once none does, the
            # other models' are dropped and the image read afresh (it frees deleted units too).
            model = self.sparse.encoder.model_id
            self.encode_sparse_missing(batch, progress=progress, max_batches=max_batches)
            if not self.sparse.missing:
                terms.drop_sparse_except(model)
                self.sparse.index.rebuild()
        if self.graph.store is not None:
            # Every unit the extractor has not read (an older store, another extractor's reading);
            # then the other extractors' readings go.
            self.read_graph_missing(batch, progress=progress, max_batches=max_batches)
            if not self.graph.missing:  # (this extractor's reading of every unit: the others' can go)
                self.graph.store.drop_graph_except(self.extractor.name)
        if self.embedder is None:
            raise EmbedderUnavailable(self.dense.why or "no embedder is configured")
        model_id = self.embedder.model_id
        adopted = adopt_vectors(self.store, self.embedder)
        if progress and adopted:
            print(f"reindex: {adopted} English units keep their {self.embedder.english.model_id} vectors"  # type: ignore[attr-defined]
                  " in the chain", flush=True)
        done, batches = embed_missing(self.store, self.embedder, self.recipe, batch, max_batches, progress)
        # Organisations that read with one model get its vectors before the switch drops the
        # other models' (a chain whose model for them changed: their dense leg would find nothing
        # until the pass after the switch ended; review).
        own_orgs = sorted(self.readings.multilingual()) if isinstance(self.embedder, ChainEmbedder) else []
        own = (self.embedder.crossing.model_id,) if own_orgs else ()  # type: ignore[attr-defined]
        if own and not self.store.chunks_missing_vectors(model_id, 1):
            more, more_batches = embed_missing(self.store, self.embedder.crossing, self.recipe, batch,  # type: ignore[attr-defined]
                                                     None if max_batches is None else max(0, max_batches - batches),
                                                     progress, orgs=own_orgs)
            done, batches = done + more, batches + more_batches
        if not self.store.chunks_missing_vectors(model_id, 1) and not (
                own and self.store.chunks_missing_vectors(own[0], 1, orgs=own_orgs)):
            self.store.drop_vectors_except(model_id, also=own)
            if self.index is not None:
                self.index.save()  # (and its deferred save cancelled: it must not write over the new one)
            self.index = self._open_index(self.embedder)
            self.readings.save()
            self.readings = DenseReadings(self.store, self.embedder, self._open_index)
            self.dense = self._dense_leg()
            self.legs["dense"] = self.dense
            if isinstance(self.embedder, ChainEmbedder):
                self._warm_chain()
            self._mismatch = ""
            # Indexes chunked before title units (hp-1) get them now; the rest stays as it is.
            while max_batches is None or batches < max_batches:
                missing = self.store.documents_missing_title_units(batch)
                if not missing:
                    break
                self.store.add_title_units(model_id, missing, title_vectors(self.store, self.embedder, missing))
                done += len(missing)
                batches += 1
                if progress:
                    print(f"reindex: {done} chunks embedded (title units)", flush=True)
            if self.index is not None:
                self.index.sync()
                self.index.save()
            # Organisations that read with the multilingual model: its vectors of their units
            # that lack one (title units just added; all of them after a store left the chain).
            self._own_checked = 0
            done += self._embed_own_readings(max_batches, progress)
        return ReindexReport(model_id, done, time.perf_counter() - start, scanned, adopted)

