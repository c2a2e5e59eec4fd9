-- Each organisation's graph version (issue 11): moved when one of its units has its reading stored
-- (put_graph) or loses it (this trigger: a unit deleted, or read again by another extractor), so
-- that a reader caches an organisation's graph until it changes, whatever other tenants write.
CREATE INDEX graph_units_org ON graph_units(org, extractor);
CREATE TABLE graph_versions(org text PRIMARY KEY, version bigint NOT NULL);

CREATE FUNCTION graph_unit_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO graph_versions VALUES (OLD.org, 1) ON CONFLICT (org) DO UPDATE SET version = graph_versions.version + 1;
  RETURN NULL;
END $$;
CREATE TRIGGER graph_unit_gone AFTER DELETE ON graph_units FOR EACH ROW EXECUTE FUNCTION graph_unit_gone();

ALTER TABLE graph_versions ENABLE ROW LEVEL SECURITY;
ALTER TABLE graph_versions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_wall ON graph_versions USING (electa_visible(org)) WITH CHECK (electa_visible(org));
