-- Engagement (SPEC D2): a learned ranker reads the votes on its hits' URLs each search.
CREATE INDEX feedback_url ON feedback(org, agent, url);
