-- Source (Microsoft Learn; the page each object's columns, units and permission come from):
--   sys.dm_os_waiting_tasks: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-os-waiting-tasks-transact-sql
--   sys.dm_exec_requests: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-exec-requests-transact-sql
-- Who waits on a latch right now: per session and latch class, how many of its tasks wait (a parallel
-- request has one task per worker) and the longest current wait.  Repeat it a few times, seconds apart.
SELECT wt.session_id,
       r.command,
       wt.wait_type,
       LEFT(wt.resource_description, 60) AS latch,
       COUNT(*) AS waiting_tasks,
       MAX(wt.wait_duration_ms) AS longest_wait_ms
FROM sys.dm_os_waiting_tasks AS wt
LEFT JOIN sys.dm_exec_requests AS r ON r.session_id = wt.session_id
WHERE wt.wait_type LIKE N'LATCH[_]%'
GROUP BY wt.session_id, r.command, wt.wait_type, LEFT(wt.resource_description, 60)
ORDER BY waiting_tasks DESC;
