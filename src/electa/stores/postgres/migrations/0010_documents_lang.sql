-- The languages an agent's documents are still written in (issue 14): each row of `languages`
-- is checked against them by an index probe, so a language whose last page is deleted stops
-- being the organisation's.
CREATE INDEX documents_lang ON documents(org, agent, lang);
