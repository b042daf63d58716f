-- WAL waits sampled over time.  This query needs the pg_wait_sampling extension (in shared_preload_libraries,
-- then CREATE EXTENSION pg_wait_sampling in this database).  Reset the profile, wait, then run this:
--   SELECT pg_wait_sampling_reset_profile();  ... a minute of the insert load ...
SELECT event_type,
       event,
       sum(count) AS samples,
       round(100.0 * sum(count) / NULLIF(sum(sum(count)) OVER (), 0), 1) AS pct_of_these_samples
FROM pg_wait_sampling_profile
WHERE (event_type = 'LWLock' AND event IN ('WALInsert', 'WALWrite', 'WALBufMapping'))
   OR (event_type = 'IO' AND event LIKE 'WAL%')
GROUP BY event_type, event
ORDER BY samples DESC;
