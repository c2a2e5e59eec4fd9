-- The knowledge graph (SPEC A6): nodes per organisation, mentions and edges per unit, as in the
-- embedded store (electa/stores/sqlite_graph.py, electa/graph/rows.py). A unit deleted cascades
-- to its graph_units row, that to its mentions and edges; the trigger removes a node whose last
-- mention went. Every writer holds the writers' lock (connection.py), so a node is never removed
-- between a writer finding it and mentioning it.
CREATE TABLE graph_nodes(
  id bigserial PRIMARY KEY, org text NOT NULL, key text NOT NULL, kind text NOT NULL, UNIQUE(org, key));
CREATE TABLE graph_units(
  chunk_id bigint PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE, org text NOT NULL, extractor text NOT NULL);
CREATE TABLE graph_mentions(
  node_id bigint NOT NULL REFERENCES graph_nodes(id) ON DELETE CASCADE,
  chunk_id bigint NOT NULL REFERENCES graph_units(chunk_id) ON DELETE CASCADE, org text NOT NULL,
  name text NOT NULL, PRIMARY KEY(node_id, chunk_id));
CREATE INDEX graph_mentions_chunk ON graph_mentions(chunk_id);
CREATE INDEX graph_mentions_org ON graph_mentions(org);
CREATE TABLE graph_edges(
  source_id bigint NOT NULL REFERENCES graph_nodes(id) ON DELETE CASCADE,
  target_id bigint NOT NULL REFERENCES graph_nodes(id) ON DELETE CASCADE,
  kind text NOT NULL, chunk_id bigint NOT NULL REFERENCES graph_units(chunk_id) ON DELETE CASCADE,
  org text NOT NULL, weight double precision NOT NULL, evidence text NOT NULL,
  PRIMARY KEY(source_id, target_id, kind, chunk_id));
CREATE INDEX graph_edges_target ON graph_edges(target_id);
CREATE INDEX graph_edges_chunk ON graph_edges(chunk_id);
CREATE INDEX graph_edges_org ON graph_edges(org);

CREATE FUNCTION graph_node_orphaned() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM graph_nodes WHERE id = OLD.node_id
    AND NOT EXISTS (SELECT 1 FROM graph_mentions WHERE node_id = OLD.node_id);
  RETURN NULL;
END $$;
CREATE TRIGGER graph_node_orphaned AFTER DELETE ON graph_mentions FOR EACH ROW EXECUTE FUNCTION graph_node_orphaned();

DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['graph_nodes', 'graph_units', 'graph_mentions', 'graph_edges'] LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY tenant_wall ON %I USING (electa_visible(org)) WITH CHECK (electa_visible(org))', t);
  END LOOP;
END $$;
