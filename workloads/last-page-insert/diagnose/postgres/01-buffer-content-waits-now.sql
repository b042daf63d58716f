-- What the active sessions are waiting for right now.  Run it a few times a second
-- apart: a rightmost-leaf hot spot shows as several backends in LWLock /
-- BufferContent on the same INSERT (an exclusive buffer content lock is what a
-- backend takes to add to a page).
-- Source: pg_stat_activity and the wait events, https://www.postgresql.org/docs/current/monitoring-stats.html#MONITORING-PG-STAT-ACTIVITY-VIEW
SELECT wait_event_type,
       wait_event,
       count(*) AS backends,
       min(left(query, 60)) AS a_query
FROM pg_stat_activity
WHERE state = 'active'
  AND backend_type = 'client backend'
  AND pid <> pg_backend_pid()
GROUP BY wait_event_type, wait_event
ORDER BY backends DESC;
