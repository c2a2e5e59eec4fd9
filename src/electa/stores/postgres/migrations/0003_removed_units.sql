-- The log of units removed, so a worker brings a caller's allowed set up to date from the
-- rows removed and the ids added since it read it, instead of reading it whole after every
-- write (about a second at a million units). As the embedded store's removed_units: a row is
-- (the generation the delete happened at, before the write moved it; the unit's id); rows older
-- than meta 'removed_units_from' are pruned, and a set read before that is read whole again.
-- A trigger writes it, so no delete path (a source updated or deleted, a document replaced,
-- any later one) can forget to.

CREATE TABLE removed_units(after_generation bigint NOT NULL, chunk_id bigint NOT NULL, org text NOT NULL);
CREATE INDEX removed_units_generation ON removed_units(after_generation);
ALTER TABLE removed_units ENABLE ROW LEVEL SECURITY;
ALTER TABLE removed_units FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_wall ON removed_units USING (electa_visible(org)) WITH CHECK (electa_visible(org));

-- Sets held by workers from before this migration are older than the log: read whole once.
INSERT INTO meta SELECT 'removed_units_from', value FROM meta WHERE key='generation';

CREATE FUNCTION electa_log_removed_units() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO removed_units
    SELECT (SELECT value::bigint FROM meta WHERE key='generation'), gone.id, gone.org FROM gone;
  RETURN NULL;
END $$;

CREATE TRIGGER chunks_removed AFTER DELETE ON chunks REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION electa_log_removed_units();
