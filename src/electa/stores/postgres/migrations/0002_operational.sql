-- The operational tables: feedback, per-agent settings, organisations and API keys, content
-- gaps, usage and conversation turns. Mirrors the embedded store's (electa/stores/sqlite.py
-- _SCHEMA, with sqlite_ops.ADDED_COLUMNS folded in); read and written by
-- electa/stores/postgres/ops.py. Server secrets live in 0001's meta (key 'secret:<name>').
-- Times are seconds since the epoch (double precision), as in the embedded store.

-- origin: 'backend' (the organisation) or 'visitor' (a browser-facing credential); voter names
-- the visitor. Each voter counts at most once either way per query and URL (see ops.feedback).
CREATE TABLE feedback(
  id bigserial PRIMARY KEY, org text NOT NULL, agent text NOT NULL, query text NOT NULL, url text NOT NULL,
  signal integer NOT NULL, created_at double precision NOT NULL, origin text NOT NULL DEFAULT 'backend',
  voter text NOT NULL DEFAULT '');
CREATE INDEX feedback_agent ON feedback(org, agent);

-- json, not jsonb: the settings read back exactly as written (key order included).
CREATE TABLE agent_settings(
  org text NOT NULL, agent text NOT NULL, settings json NOT NULL, updated_at double precision NOT NULL,
  PRIMARY KEY(org, agent));

-- signing_secret: the visitor-token HMAC secret, in clear (NULL until first rotated).
CREATE TABLE organisations(name text PRIMARY KEY, created_at double precision NOT NULL, signing_secret text);

-- Keys are stored by SHA-256 only (electa.auth.keys); prefix tells them apart in listings.
-- scope has no default: the embedded store's default only names pre-scope legacy keys.
CREATE TABLE api_keys(
  id bigserial PRIMARY KEY, org text NOT NULL REFERENCES organisations(name) ON DELETE CASCADE,
  key_hash text NOT NULL UNIQUE, prefix text NOT NULL, name text NOT NULL DEFAULT '', scope text NOT NULL,
  created_at double precision NOT NULL, expires_at double precision, revoked boolean NOT NULL DEFAULT false);

CREATE TABLE gaps(
  id bigserial PRIMARY KEY, org text NOT NULL, agent text NOT NULL, question text NOT NULL,
  confidence double precision NOT NULL, reason text NOT NULL, created_at double precision NOT NULL);

-- day: 'YYYY-MM-DD' (UTC), text as in the embedded store.
CREATE TABLE usage(
  org text NOT NULL, agent text NOT NULL, day text NOT NULL, questions bigint NOT NULL DEFAULT 0,
  answer_chars bigint NOT NULL DEFAULT 0, PRIMARY KEY(org, agent, day));

CREATE TABLE turns(
  id bigserial PRIMARY KEY, org text NOT NULL, agent text NOT NULL, conversation text NOT NULL,
  question text NOT NULL, answer text NOT NULL, citations jsonb NOT NULL, confidence double precision NOT NULL,
  created_at double precision NOT NULL);
CREATE INDEX turns_conversation ON turns(org, agent, conversation, id);

-- The tenant wall (see 0001 and connection.py): an organisation's rows only, or all for '*'.
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['feedback', 'agent_settings', 'api_keys', 'gaps', 'usage', 'turns'] LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY tenant_wall ON %I USING (electa_visible(org)) WITH CHECK (electa_visible(org))', t);
  END LOOP;
END $$;
ALTER TABLE organisations ENABLE ROW LEVEL SECURITY;
ALTER TABLE organisations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_wall ON organisations USING (electa_visible(name)) WITH CHECK (electa_visible(name));
