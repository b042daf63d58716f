-- Source (Microsoft Learn; the page each object's columns, units and permission come from):
--   sys.dm_os_waiting_tasks: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-os-waiting-tasks-transact-sql
-- Who is waiting for a page latch right now, and on which page.  Run it a few times
-- a few seconds apart: a last-page hot spot shows as many sessions on ONE page (the
-- same database:file:page in resource_description), with PAGELATCH_EX as the wait
-- type.
SELECT wt.resource_description,
       wt.wait_type,
       COUNT(*) AS waiting_tasks,
       MAX(wt.wait_duration_ms) AS longest_wait_ms
FROM sys.dm_os_waiting_tasks AS wt
WHERE wt.wait_type LIKE N'PAGELATCH[_]%'
GROUP BY wt.resource_description, wt.wait_type
ORDER BY waiting_tasks DESC;
