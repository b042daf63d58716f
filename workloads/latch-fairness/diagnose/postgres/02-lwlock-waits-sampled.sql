-- LWLock waits sampled over time.  This query needs the pg_wait_sampling extension (in shared_preload_libraries,
-- then CREATE EXTENSION pg_wait_sampling in this database).  Reset the profile, wait, then run this:
--   SELECT pg_wait_sampling_reset_profile();  ... a minute of the workload ...
-- The profile is kept per process: the join keeps the client backends still connected, so the background
-- processes' own LWLock waits (the WAL writer's, the checkpointer's) are left out.
-- Sources:
--   pg_wait_sampling_profile: https://github.com/postgrespro/pg_wait_sampling (README)
--   backend_type: https://www.postgresql.org/docs/current/monitoring-stats.html#MONITORING-PG-STAT-ACTIVITY-VIEW
SELECT p.event AS lwlock,
       sum(p.count) AS samples,
       round(100.0 * sum(p.count) / sum(sum(p.count)) OVER (), 1) AS pct_of_lwlock_samples
FROM pg_wait_sampling_profile AS p
JOIN pg_stat_activity AS a ON a.pid = p.pid AND a.backend_type = 'client backend'
WHERE p.event_type = 'LWLock'
  AND p.pid <> pg_backend_pid()
GROUP BY p.event
ORDER BY samples DESC;
