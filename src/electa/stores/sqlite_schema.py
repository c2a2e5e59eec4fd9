"""The embedded store's tables (:class:`electa.stores.sqlite.SqliteStore`): the schema it creates
or completes at every open, its version, and the FTS5 tables the full-text legs read; the
graph's tables are :data:`electa.stores.sqlite_graph.GRAPH_SCHEMA`.
"""

from __future__ import annotations

from electa.stores.protocol import TextIndex
from electa.types import ChunkKind

# 2: units analysed per language (issue 14); a release that reads 1 would write raw text into the
# analysed full-text tables, so it is refused a store at 2. A store at 1 is brought to 2 on open.
SCHEMA_VERSION = "2"
# Units reach FTS5 analysed already (electa.text.analysis: stemmed per language, unspaced scripts
# in characters and bigrams); its ``ascii`` tokenizer only splits them at the spaces, since every
# term is letters, digits and marks and it keeps every non-ASCII character in a token.
FTS_TOKENIZER = "ascii"

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sources(
  id INTEGER PRIMARY KEY AUTOINCREMENT, org TEXT NOT NULL, agent TEXT NOT NULL,
  uri TEXT NOT NULL, kind TEXT NOT NULL, url TEXT NOT NULL, version INTEGER NOT NULL,
  content_hash TEXT NOT NULL, access TEXT NOT NULL, documents INTEGER NOT NULL,
  created_at REAL NOT NULL, updated_at REAL NOT NULL, UNIQUE(org, agent, uri));
CREATE TABLE IF NOT EXISTS roots(
  org TEXT NOT NULL, agent TEXT NOT NULL, name TEXT NOT NULL, path TEXT NOT NULL, PRIMARY KEY(org, agent, name));
CREATE TABLE IF NOT EXISTS documents(
  id INTEGER PRIMARY KEY AUTOINCREMENT, org TEXT NOT NULL, agent TEXT NOT NULL,
  kind TEXT NOT NULL, title TEXT NOT NULL, text_hash TEXT NOT NULL, access_sig TEXT NOT NULL,
  public INTEGER NOT NULL, UNIQUE(org, agent, text_hash, access_sig));
CREATE TABLE IF NOT EXISTS locations(
  document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
  source_id INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
  url TEXT NOT NULL, ext_id TEXT NOT NULL, PRIMARY KEY(document_id, source_id, ext_id));
CREATE INDEX IF NOT EXISTS locations_source ON locations(source_id);
CREATE TABLE IF NOT EXISTS doc_principals(
  principal TEXT NOT NULL, document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
  PRIMARY KEY(principal, document_id));
CREATE INDEX IF NOT EXISTS doc_principals_doc ON doc_principals(document_id);
CREATE INDEX IF NOT EXISTS documents_org ON documents(org, agent);
CREATE TABLE IF NOT EXISTS chunks(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
  kind TEXT NOT NULL, ordinal INTEGER NOT NULL, parent_id INTEGER, title TEXT NOT NULL,
  text TEXT NOT NULL, content_hash TEXT NOT NULL, source_version INTEGER NOT NULL,
  chunker_version TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_document ON chunks(document_id);
-- count_vector_chunks() on a process's first write: a scan of every chunk's text took 5.2 s at 1M
-- chunks from a cold disk, this covering index 0.19 s.
CREATE INDEX IF NOT EXISTS chunks_kind ON chunks(kind);
CREATE TABLE IF NOT EXISTS vectors(
  chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
  model_id TEXT NOT NULL, dim INTEGER NOT NULL, vector BLOB NOT NULL,
  PRIMARY KEY(model_id, chunk_id));
CREATE INDEX IF NOT EXISTS vectors_chunk ON vectors(chunk_id);
-- Learned term weights (SPEC B3) of parent units, per model: term ids (int32) and weights
-- (float32), little-endian (electa.stores.sparse_index.pack).
-- seq: the order they were stored in, by which an index image catches up (ids need not arrive
-- in order: two processes commit units concurrently). A unit's weights never change (its text
-- never does), so a row is written once.
CREATE TABLE IF NOT EXISTS sparse_terms(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
  model_id TEXT NOT NULL, terms BLOB NOT NULL, weights BLOB NOT NULL,
  UNIQUE(model_id, chunk_id));
CREATE INDEX IF NOT EXISTS sparse_terms_chunk ON sparse_terms(chunk_id);
CREATE TABLE IF NOT EXISTS feedback(
  id INTEGER PRIMARY KEY AUTOINCREMENT, org TEXT NOT NULL, agent TEXT NOT NULL, query TEXT NOT NULL,
  url TEXT NOT NULL, signal INTEGER NOT NULL, created_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS feedback_agent ON feedback(org, agent);
-- A learned ranker reads the votes on its hits' URLs each search (engagement, SPEC D2).
CREATE INDEX IF NOT EXISTS feedback_url ON feedback(org, agent, url);
CREATE TABLE IF NOT EXISTS user_settings(
  org TEXT NOT NULL, person TEXT NOT NULL, personalise INTEGER NOT NULL, updated_at REAL NOT NULL,
  PRIMARY KEY(org, person));
CREATE TABLE IF NOT EXISTS agent_settings(
  org TEXT NOT NULL, agent TEXT NOT NULL, settings TEXT NOT NULL, updated_at REAL NOT NULL,
  PRIMARY KEY(org, agent));
CREATE TABLE IF NOT EXISTS organisations(name TEXT PRIMARY KEY, created_at REAL NOT NULL);
-- An organisation's own settings (JSON): those that decide how its units are stored and read.
CREATE TABLE IF NOT EXISTS org_settings(org TEXT PRIMARY KEY, settings TEXT NOT NULL, updated_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS api_keys(
  id INTEGER PRIMARY KEY AUTOINCREMENT, org TEXT NOT NULL REFERENCES organisations(name) ON DELETE CASCADE,
  key_hash TEXT NOT NULL UNIQUE, prefix TEXT NOT NULL, created_at REAL NOT NULL, revoked INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS gaps(
  id INTEGER PRIMARY KEY AUTOINCREMENT, org TEXT NOT NULL, agent TEXT NOT NULL, question TEXT NOT NULL,
  confidence REAL NOT NULL, reason TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS usage(
  org TEXT NOT NULL, agent TEXT NOT NULL, day TEXT NOT NULL, questions INTEGER NOT NULL DEFAULT 0,
  answer_chars INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(org, agent, day));
CREATE TABLE IF NOT EXISTS turns(
  id INTEGER PRIMARY KEY AUTOINCREMENT, org TEXT NOT NULL, agent TEXT NOT NULL, conversation TEXT NOT NULL,
  question TEXT NOT NULL, answer TEXT NOT NULL, citations TEXT NOT NULL, confidence REAL NOT NULL,
  created_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS turns_conversation ON turns(org, agent, conversation, id);
CREATE TABLE IF NOT EXISTS curated_triggers(
  trigger TEXT NOT NULL, chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
  PRIMARY KEY(trigger, chunk_id));
CREATE TABLE IF NOT EXISTS chunk_flags(
  chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
  rules TEXT NOT NULL, findings TEXT NOT NULL);
-- Units each write removed, by the generation it started from: a caller's allowed set follows
-- the writes (drop these, add the ids above the last read) instead of being read again whole.
CREATE TABLE IF NOT EXISTS removed_units(after_generation INTEGER NOT NULL, chunk_id INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS removed_units_generation ON removed_units(after_generation);
-- The languages each organisation's agent has had units in (issue 14): a question is analysed in
-- each that a document of the agent is still written in (read through documents_lang). Only
-- ever added to, so that a delete never races a write of the same language.
CREATE TABLE IF NOT EXISTS languages(org TEXT NOT NULL, agent TEXT NOT NULL, lang TEXT NOT NULL,
  PRIMARY KEY(org, agent, lang));
CREATE VIRTUAL TABLE IF NOT EXISTS chunk_fts USING fts5(title, body, acl, tokenize='{FTS_TOKENIZER}');
CREATE VIRTUAL TABLE IF NOT EXISTS qa_fts USING fts5(question, answer, acl, tokenize='{FTS_TOKENIZER}');
CREATE VIRTUAL TABLE IF NOT EXISTS chunk_fts_recent USING fts5(title, body, acl, tokenize='{FTS_TOKENIZER}');
CREATE VIRTUAL TABLE IF NOT EXISTS qa_fts_recent USING fts5(question, answer, acl, tokenize='{FTS_TOKENIZER}');
"""
# The FTS5 table of each full-text index; every one has two weighted columns and ``acl``.
FTS_TABLES = {TextIndex.UNITS: "chunk_fts", TextIndex.QA: "qa_fts"}
RECENT_TABLES = {TextIndex.UNITS: "chunk_fts_recent", TextIndex.QA: "qa_fts_recent"}
# Which units each index holds, and its columns.
FTS_KINDS = {ChunkKind.PARENT: TextIndex.UNITS, ChunkKind.QA: TextIndex.QA}
FTS_COLUMNS = {TextIndex.UNITS: "title, body, acl", TextIndex.QA: "question, answer, acl"}
