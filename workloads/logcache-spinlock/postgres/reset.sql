-- Before each measured point: empty the table and seed it (the row count is bound as ?).
-- The harness then runs CHECKPOINT where it is allowed to, so every point starts alike.
TRUNCATE logcache_insert;
INSERT INTO logcache_insert (c1, c2, c4, c5, c6)
SELECT g, now(), 0, 0, 0 FROM generate_series(1, ?) AS g;
