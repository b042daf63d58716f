-- Backends waiting on WAL right now: the insertion locks (LWLock WALInsert), the write lock (LWLock WALWrite),
-- buffer mapping (WALBufMapping) and WAL I/O.  One snapshot; in psql, repeat it with \watch 0.5.
-- PostgreSQL 16 and earlier name the WAL I/O events in capitals (WALWrite, WALSync), 17 and later in camel case
-- (WalWrite, WalSync), so the I/O match ignores case and finds both.
-- Source: the LWLock and IO wait events, https://www.postgresql.org/docs/current/monitoring-stats.html#WAIT-EVENT-TABLE
--   and https://www.postgresql.org/docs/16/monitoring-stats.html#WAIT-EVENT-TABLE (the names before 17);
--   src/backend/utils/activity/generate-wait_event_types.pl (17 and later: IO names in camel case)
SELECT wait_event_type,
       wait_event,
       count(*) AS backends
FROM pg_stat_activity
WHERE (wait_event_type = 'LWLock' AND wait_event IN ('WALInsert', 'WALWrite', 'WALBufMapping'))
   OR (wait_event_type = 'IO' AND wait_event ILIKE 'wal%')
GROUP BY wait_event_type, wait_event
ORDER BY backends DESC;
