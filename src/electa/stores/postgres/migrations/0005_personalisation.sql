-- Personalisation (SPEC D3): the person a feedback row is about ('' for none), and each person's
-- opt-out. Adding a column with a constant default does not rewrite the table (PostgreSQL 11+).
ALTER TABLE feedback ADD COLUMN person text NOT NULL DEFAULT '';
CREATE INDEX feedback_person ON feedback(org, person);
CREATE TABLE user_settings(
  org text NOT NULL, person text NOT NULL, personalise boolean NOT NULL, updated_at double precision NOT NULL,
  PRIMARY KEY(org, person));
-- The tenant wall (see 0001 and connection.py), as on every operational table.
ALTER TABLE user_settings ENABLE ROW LEVEL SECURITY;
ALTER TABLE user_settings FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_wall ON user_settings USING (electa_visible(org)) WITH CHECK (electa_visible(org));
