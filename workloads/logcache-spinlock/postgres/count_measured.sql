-- After each point: the rows the measured calls inserted, counted in the table, to balance against the rows the
-- driver counted.  Session i's keys are (i + 1) * span + offset; the measured calls start at offset 2 * batch,
-- the warm-up calls lie below that (or just under the next session's range), and seed rows lie below the span.
SELECT count(*) FROM logcache_insert
WHERE c1 >= ? AND c1 % ? >= ? AND c1 % ? < ?;
