-- WAL waits sampled over time.  This query needs the pg_wait_sampling extension (in shared_preload_libraries,
-- then CREATE EXTENSION pg_wait_sampling in this database).  Reset the profile, wait, then run this:
--   SELECT pg_wait_sampling_reset_profile();  ... a minute of the insert load ...
-- Only the client backends still connected count (the join): the walwriter's own WAL writes are its work,
-- not a wait of the sessions.  The I/O match ignores case: WALWrite up to PostgreSQL 16, WalWrite from 17.
-- Source: pg_wait_sampling_profile, https://github.com/postgrespro/pg_wait_sampling (README);
--   the wait event names, https://www.postgresql.org/docs/current/monitoring-stats.html#WAIT-EVENT-TABLE
SELECT p.event_type,
       p.event,
       sum(p.count) AS samples,
       round(100.0 * sum(p.count) / NULLIF(sum(sum(p.count)) OVER (), 0), 1) AS pct_of_these_samples
FROM pg_wait_sampling_profile AS p
JOIN pg_stat_activity AS a ON a.pid = p.pid AND a.backend_type = 'client backend'
WHERE (p.event_type = 'LWLock' AND p.event IN ('WALInsert', 'WALWrite', 'WALBufMapping'))
   OR (p.event_type = 'IO' AND p.event ILIKE 'wal%')
GROUP BY p.event_type, p.event
ORDER BY samples DESC;
