-- Source (Microsoft Learn; the page each object's columns, units and permission come from):
--   sys.dm_os_wait_stats: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-os-wait-stats-transact-sql
-- The log's waits over the same kind of interval: WRITELOG (a commit waiting for its flush) and LOGBUFFER
-- (a session waiting for room in the log cache).  Under forced delayed durability WRITELOG should be near zero.
-- LOGMGR_QUEUE is left out: it is the log writer's idle wait ("Occurs while the log writer task waits for
-- work requests", sys.dm_os_wait_stats page) and would top the list on an idle server.
SET NOCOUNT ON;
SELECT wait_type, waiting_tasks_count, wait_time_ms, signal_wait_time_ms
INTO #wait_before
FROM sys.dm_os_wait_stats
WHERE wait_type IN (N'WRITELOG', N'LOGBUFFER');

WAITFOR DELAY '00:00:30';

SELECT a.wait_type,
       a.waiting_tasks_count - b.waiting_tasks_count AS waits,
       a.wait_time_ms - b.wait_time_ms AS wait_time_ms,
       a.signal_wait_time_ms - b.signal_wait_time_ms AS signal_wait_time_ms,
       CAST((a.wait_time_ms - b.wait_time_ms) * 1.0
            / NULLIF(a.waiting_tasks_count - b.waiting_tasks_count, 0) AS decimal(18, 2)) AS avg_wait_ms
FROM sys.dm_os_wait_stats AS a
JOIN #wait_before AS b ON b.wait_type = a.wait_type
ORDER BY wait_time_ms DESC;

DROP TABLE #wait_before;
