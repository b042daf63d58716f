-- What the database's active sessions are waiting on right now (run it a few times):
-- consumers that queue on each other's row locks show Lock:transactionid or Lock:tuple on
-- their DELETE; SKIP LOCKED consumers should not; LWLock:BufferContent is the hot page.
-- Source: pg_stat_activity and the wait events, https://www.postgresql.org/docs/current/monitoring-stats.html#MONITORING-PG-STAT-ACTIVITY-VIEW
SELECT coalesce(wait_event_type, 'CPU') AS wait_event_type,
       coalesce(wait_event, 'running') AS wait_event,
       count(*) AS sessions,
       left(min(query), 60) AS a_query
FROM pg_stat_activity
WHERE state = 'active'
  AND backend_type = 'client backend'
  AND pid <> pg_backend_pid()
GROUP BY 1, 2
ORDER BY sessions DESC;
