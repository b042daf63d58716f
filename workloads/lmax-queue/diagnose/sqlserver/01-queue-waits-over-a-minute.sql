-- Source (Microsoft Learn; the page each object's columns, units and permission come from):
--   sys.dm_os_wait_stats: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-os-wait-stats-transact-sql
-- What the server waited on over one minute (a delta, not the totals since start-up):
-- PAGELATCH_EX/SH on a queue table's first or last page, LCK_M_* where consumers queue on
-- the same row, WRITELOG where every message commits on its own.  Needs VIEW SERVER STATE.
SELECT wait_type, waiting_tasks_count, wait_time_ms, signal_wait_time_ms
INTO #before
FROM sys.dm_os_wait_stats;

WAITFOR DELAY '00:01:00';

SELECT TOP (15)
       w.wait_type,
       w.waiting_tasks_count - b.waiting_tasks_count AS waits,
       w.wait_time_ms - b.wait_time_ms AS wait_ms,
       w.signal_wait_time_ms - b.signal_wait_time_ms AS signal_ms
FROM sys.dm_os_wait_stats AS w
JOIN #before AS b ON b.wait_type = w.wait_type
WHERE w.wait_time_ms > b.wait_time_ms
  AND (w.wait_type LIKE 'PAGELATCH%' OR w.wait_type LIKE 'LCK_M_%' OR w.wait_type IN ('WRITELOG', 'SOS_SCHEDULER_YIELD'))
ORDER BY wait_ms DESC;

DROP TABLE #before;
