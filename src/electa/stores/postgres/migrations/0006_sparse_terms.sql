-- Learned term weights (SPEC B3) of parent units, per model: term ids (int32) and weights
-- (float32), little-endian (electa.stores.sparse_index.pack). seq is the order they were stored
-- in, by which each process's in-memory index catches up: every write holds the writers' lock
-- (connection.py), so seq order is commit order and no reader sees a later seq before an earlier.
CREATE TABLE sparse_terms(
  seq bigserial PRIMARY KEY,
  chunk_id bigint NOT NULL REFERENCES chunks(id) ON DELETE CASCADE, model_id text NOT NULL, org text NOT NULL,
  terms bytea NOT NULL, weights bytea NOT NULL, UNIQUE(model_id, chunk_id));
CREATE INDEX sparse_terms_chunk ON sparse_terms(chunk_id);
CREATE INDEX sparse_terms_model_seq ON sparse_terms(model_id, seq);
-- The tenant wall (see 0001 and connection.py), as on the units' other tables.
ALTER TABLE sparse_terms ENABLE ROW LEVEL SECURITY;
ALTER TABLE sparse_terms FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_wall ON sparse_terms USING (electa_visible(org)) WITH CHECK (electa_visible(org));
