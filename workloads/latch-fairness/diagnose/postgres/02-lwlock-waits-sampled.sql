-- LWLock waits sampled over time.  This query needs the pg_wait_sampling extension (in shared_preload_libraries,
-- then CREATE EXTENSION pg_wait_sampling in this database).  Reset the profile, wait, then run this:
--   SELECT pg_wait_sampling_reset_profile();  ... a minute of the workload ...
-- Source: pg_wait_sampling_profile, https://github.com/postgrespro/pg_wait_sampling (README).
SELECT event AS lwlock,
       sum(count) AS samples,
       round(100.0 * sum(count) / sum(sum(count)) OVER (), 1) AS pct_of_lwlock_samples
FROM pg_wait_sampling_profile
WHERE event_type = 'LWLock'
GROUP BY event
ORDER BY samples DESC;
