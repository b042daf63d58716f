-- Needs the pg_wait_sampling extension (in shared_preload_libraries, then CREATE
-- EXTENSION pg_wait_sampling): the wait events of every backend sampled in the
-- background since the profile was last reset, so short waits that one look at
-- pg_stat_activity misses are counted too.  The share of LWLock / BufferContent
-- among the samples of the inserting backends is the number to watch.
SELECT p.event_type,
       p.event,
       sum(p.count) AS samples,
       round(100.0 * sum(p.count) / sum(sum(p.count)) OVER (), 1) AS pct
FROM pg_wait_sampling_profile AS p
GROUP BY p.event_type, p.event
ORDER BY samples DESC
LIMIT 15;
