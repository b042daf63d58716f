-- Backends waiting on a lightweight lock (PostgreSQL's counterpart of SQL Server's latches) right now, by lock.
-- One snapshot; in psql, follow it with \watch 0.5 and read the counts over a minute.
-- Source: pg_stat_activity and the LWLock wait events, https://www.postgresql.org/docs/current/monitoring-stats.html#WAIT-EVENT-LWLOCK-TABLE
SELECT wait_event AS lwlock,
       count(*) AS backends_waiting,
       count(*) FILTER (WHERE backend_type = 'parallel worker') AS of_them_parallel_workers
FROM pg_stat_activity
WHERE wait_event_type = 'LWLock'
GROUP BY wait_event
ORDER BY backends_waiting DESC;
