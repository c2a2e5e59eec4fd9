-- The index: sources, documents, units (chunks) with their full-text vectors, dense vectors,
-- injection marks. Mirrors the embedded store's schema (electa/stores/sqlite.py); access fields
-- are copied onto each unit (a document's access never changes: it is part of its identity),
-- so a leg filters one table inside its match.

CREATE FUNCTION electa_visible(row_org text) RETURNS boolean LANGUAGE sql STABLE AS
$$ SELECT coalesce(current_setting('electa.org', true), '') IN ('*', row_org) $$;

CREATE TABLE meta(key text PRIMARY KEY, value text NOT NULL);
INSERT INTO meta VALUES ('generation', '0'), ('vector_backfills', '0');

CREATE TABLE sources(
  id bigserial PRIMARY KEY, org text NOT NULL, agent text NOT NULL, uri text NOT NULL, kind text NOT NULL,
  url text NOT NULL, version integer NOT NULL, content_hash text NOT NULL, access jsonb NOT NULL,
  documents integer NOT NULL, created_at double precision NOT NULL, updated_at double precision NOT NULL,
  UNIQUE(org, agent, uri));

CREATE TABLE roots(org text NOT NULL, agent text NOT NULL, name text NOT NULL, path text NOT NULL,
  PRIMARY KEY(org, agent, name));

CREATE TABLE documents(
  id bigserial PRIMARY KEY, org text NOT NULL, agent text NOT NULL, kind text NOT NULL, title text NOT NULL,
  text_hash text NOT NULL, access_sig text NOT NULL, public boolean NOT NULL,
  principals text[] NOT NULL DEFAULT '{}', UNIQUE(org, agent, text_hash, access_sig));

CREATE TABLE locations(
  document_id bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
  source_id bigint NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
  org text NOT NULL, url text NOT NULL, ext_id text NOT NULL, PRIMARY KEY(document_id, source_id, ext_id));
CREATE INDEX locations_source ON locations(source_id);

-- fts: the unit's terms as the embedded store's FTS5 tokenizer makes them (computed by Electa,
-- electa/stores/postgres/analysis.py), title terms weighted A, body B, access tokens D;
-- fts_len: its token count over all three, FTS5's |row|. Only parents (fts_index 'units') and
-- Q&A pairs ('qa') are full-text indexed.
CREATE TABLE chunks(
  id bigserial PRIMARY KEY, document_id bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
  org text NOT NULL, agent text NOT NULL, public boolean NOT NULL, principals text[] NOT NULL DEFAULT '{}',
  kind text NOT NULL, ordinal integer NOT NULL, parent_id bigint, title text NOT NULL, text text NOT NULL,
  content_hash text NOT NULL, source_version integer NOT NULL, chunker_version text NOT NULL,
  fts_index text, fts tsvector, fts_len integer);
CREATE INDEX chunks_document ON chunks(document_id);
CREATE INDEX chunks_tenant ON chunks(org, agent, id);
CREATE INDEX chunks_principals ON chunks USING gin(principals);
CREATE INDEX chunks_fts ON chunks USING gin(fts) WHERE fts IS NOT NULL;
CREATE INDEX chunks_fts_rows ON chunks(fts_index, id) WHERE fts_index IS NOT NULL;

-- One row per unit and model; the HNSW index of a model is made when its first vectors arrive
-- (pgvector indexes need a fixed dimension): see PostgresStore._name_model. The unit's access
-- fields are copied here too, so the whole access filter applies inside the index scan (pgvector's
-- iterative scan walks on until LIMIT rows pass it); a filter on a joined table would run after
-- the walk, and the planner, costing the join, preferred to scan every vector.
CREATE TABLE vectors(
  chunk_id bigint NOT NULL REFERENCES chunks(id) ON DELETE CASCADE, model_id text NOT NULL, org text NOT NULL,
  agent text NOT NULL, public boolean NOT NULL, principals text[] NOT NULL DEFAULT '{}',
  dim integer NOT NULL, embedding vector NOT NULL, PRIMARY KEY(model_id, chunk_id));
CREATE INDEX vectors_chunk ON vectors(chunk_id);
CREATE INDEX vectors_tenant ON vectors(org, agent);  -- the exact search reads one tenant's rows

-- The terms of each parent unit's title, for title lookups (Engine._title_rescue): a B-tree
-- on text equality, which row-level security lets the planner use (text '=' is leakproof;
-- tsvector '@@' is not, so under the wall a match on chunks.fts read every row of the tenant).
CREATE TABLE title_terms(
  chunk_id bigint NOT NULL REFERENCES chunks(id) ON DELETE CASCADE, org text NOT NULL, agent text NOT NULL,
  public boolean NOT NULL, principals text[] NOT NULL DEFAULT '{}', term text NOT NULL,
  PRIMARY KEY(org, term, chunk_id));
CREATE INDEX title_terms_chunk ON title_terms(chunk_id);

CREATE TABLE chunk_flags(
  chunk_id bigint PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE, org text NOT NULL,
  rules text NOT NULL, findings jsonb NOT NULL);

CREATE TABLE curated_triggers(
  trigger text NOT NULL, chunk_id bigint NOT NULL REFERENCES chunks(id) ON DELETE CASCADE, org text NOT NULL,
  PRIMARY KEY(trigger, chunk_id));
CREATE INDEX curated_triggers_org ON curated_triggers(org);

DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['sources', 'roots', 'documents', 'locations', 'chunks', 'vectors', 'title_terms',
                           'chunk_flags', 'curated_triggers'] LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY tenant_wall ON %I USING (electa_visible(org)) WITH CHECK (electa_visible(org))', t);
  END LOOP;
END $$;
