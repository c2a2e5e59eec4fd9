-- count_vector_chunks() on a process's first write reads every chunk row without it (an
-- index-only scan with it): the embedded store measured 5.2 s against 0.19 s at 1M chunks cold.
CREATE INDEX chunks_kind ON chunks(kind);
