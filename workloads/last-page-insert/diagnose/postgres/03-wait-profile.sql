-- Needs the pg_wait_sampling extension (in shared_preload_libraries, then CREATE
-- EXTENSION pg_wait_sampling): wait events sampled in the background (every 10 ms
-- by default) since the profile was last reset, so short waits that one look at
-- pg_stat_activity misses are counted too.  The profile is kept per process: the
-- join keeps the client backends still connected (background processes sit in
-- Activity:* waits) and the WHERE leaves out Client:ClientRead, the wait of a
-- session idle between statements.  What remains is the sessions' working time;
-- the share of LWLock / BufferContent in it is the number to watch.  The collector reads the
-- backends' wait events while it holds ProcArrayLock, so some LWLock / ProcArray at commit is
-- its own footprint (collector.c, probe_waits).
-- Sources:
--   pg_wait_sampling_profile: https://github.com/postgrespro/pg_wait_sampling (README)
--   backend_type and the wait events:
--   https://www.postgresql.org/docs/current/monitoring-stats.html#MONITORING-PG-STAT-ACTIVITY-VIEW
SELECT coalesce(p.event_type, 'CPU') AS event_type,
       coalesce(p.event, 'running') AS event,
       sum(p.count) AS samples,
       round(100.0 * sum(p.count) / sum(sum(p.count)) OVER (), 1) AS pct_of_working_samples
FROM pg_wait_sampling_profile AS p
JOIN pg_stat_activity AS a ON a.pid = p.pid AND a.backend_type = 'client backend'
WHERE p.pid <> pg_backend_pid()
  AND (p.event_type, p.event) IS DISTINCT FROM ('Client', 'ClientRead')
GROUP BY 1, 2
ORDER BY samples DESC
LIMIT 15;
