-- Backends waiting on WAL right now: the insertion locks (LWLock WALInsert), the write lock (LWLock WALWrite),
-- buffer mapping (WALBufMapping) and WAL I/O.  One snapshot; in psql, repeat it with \watch 0.5.
-- Source: the LWLock and IO wait events, https://www.postgresql.org/docs/current/monitoring-stats.html#WAIT-EVENT-TABLE
SELECT wait_event_type,
       wait_event,
       count(*) AS backends
FROM pg_stat_activity
WHERE (wait_event_type = 'LWLock' AND wait_event IN ('WALInsert', 'WALWrite', 'WALBufMapping'))
   OR (wait_event_type = 'IO' AND wait_event LIKE 'WAL%')
GROUP BY wait_event_type, wait_event
ORDER BY backends DESC;
