-- Languages (issue 14): each document's ('' for none detected), and the languages each
-- organisation's agent has units in (a question is analysed in each). Adding a column with a
-- constant default does not rewrite the table (PostgreSQL 11+). The units' terms are analysed
-- again by the store when it opens (meta 'analysis'), since that needs Python.
ALTER TABLE documents ADD COLUMN lang text NOT NULL DEFAULT '';
CREATE TABLE languages(org text NOT NULL, agent text NOT NULL, lang text NOT NULL, PRIMARY KEY(org, agent, lang));
-- The tenant wall (see 0001 and connection.py), as on every table of an organisation's own.
ALTER TABLE languages ENABLE ROW LEVEL SECURITY;
ALTER TABLE languages FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_wall ON languages USING (electa_visible(org)) WITH CHECK (electa_visible(org));
