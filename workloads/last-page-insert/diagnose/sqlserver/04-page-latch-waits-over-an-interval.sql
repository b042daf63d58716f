-- Source (Microsoft Learn; the page each object's columns, units and permission come from):
--   sys.dm_os_wait_stats: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-os-wait-stats-transact-sql
-- PAGELATCH waits over one minute, not since start-up: the count, the total and the
-- average wait per wait.  sys.dm_os_wait_stats is cumulative, so the difference
-- between two readings is what the server is doing now.
DECLARE @before TABLE (
    wait_type nvarchar(60) PRIMARY KEY,
    waiting_tasks_count bigint,
    wait_time_ms bigint
);
INSERT INTO @before (wait_type, waiting_tasks_count, wait_time_ms)
SELECT wait_type, waiting_tasks_count, wait_time_ms
FROM sys.dm_os_wait_stats
WHERE wait_type LIKE N'PAGELATCH[_]%' OR wait_type = N'BTREE_INSERT_FLOW_CONTROL';
WAITFOR DELAY '00:01:00';
SELECT w.wait_type,
       w.waiting_tasks_count - b.waiting_tasks_count AS waits,
       w.wait_time_ms - b.wait_time_ms AS wait_ms,
       CAST(w.wait_time_ms - b.wait_time_ms AS float)
           / NULLIF(w.waiting_tasks_count - b.waiting_tasks_count, 0) AS avg_wait_ms
FROM sys.dm_os_wait_stats AS w
JOIN @before AS b ON b.wait_type = w.wait_type
ORDER BY wait_ms DESC;
