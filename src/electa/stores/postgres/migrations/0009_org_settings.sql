-- An organisation's own settings (issue 14): those that decide how its units are stored and read,
-- such as which model reads them (electa.engine: the dense reading). json, not jsonb, as
-- agent_settings: read back exactly as written.
CREATE TABLE org_settings(org text PRIMARY KEY, settings json NOT NULL, updated_at double precision NOT NULL);
-- The tenant wall (see 0001 and connection.py), as on every table of an organisation's own.
ALTER TABLE org_settings ENABLE ROW LEVEL SECURITY;
ALTER TABLE org_settings FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_wall ON org_settings USING (electa_visible(org)) WITH CHECK (electa_visible(org));
