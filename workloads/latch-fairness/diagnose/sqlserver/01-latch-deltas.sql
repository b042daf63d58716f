-- Source (Microsoft Learn; the page each object's columns, units and permission come from):
--   sys.dm_os_latch_stats: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-os-latch-stats-transact-sql
-- Latch waits over an interval (not since start-up): snapshot, wait, snapshot again, subtract.
-- Run it while the parallel data change runs; change the delay to suit.
SET NOCOUNT ON;
SELECT latch_class, waiting_requests_count, wait_time_ms, max_wait_time_ms
INTO #latch_before
FROM sys.dm_os_latch_stats;

WAITFOR DELAY '00:00:30';

SELECT a.latch_class,
       a.waiting_requests_count - b.waiting_requests_count AS waits,
       a.wait_time_ms - b.wait_time_ms AS wait_time_ms,
       CAST((a.wait_time_ms - b.wait_time_ms) * 1000.0
            / NULLIF(a.waiting_requests_count - b.waiting_requests_count, 0) AS decimal(18, 1)) AS avg_wait_us,
       a.max_wait_time_ms AS max_wait_ms_since_startup
FROM sys.dm_os_latch_stats AS a
JOIN #latch_before AS b ON b.latch_class = a.latch_class
WHERE a.waiting_requests_count > b.waiting_requests_count
ORDER BY wait_time_ms DESC;

DROP TABLE #latch_before;
