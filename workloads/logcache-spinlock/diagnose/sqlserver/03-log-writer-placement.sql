-- Source (Microsoft Learn; the page each object's columns, units and permission come from):
--   sys.dm_exec_requests: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-exec-requests-transact-sql
--   sys.dm_os_schedulers: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-os-schedulers-transact-sql
-- Where the log writer runs: its scheduler, CPU and NUMA node (the core the article took out of the mask).
SELECT r.session_id,
       r.command,
       s.scheduler_id,
       s.cpu_id,
       s.parent_node_id
FROM sys.dm_exec_requests AS r
JOIN sys.dm_os_schedulers AS s ON s.scheduler_id = r.scheduler_id
WHERE r.command = N'LOG WRITER';
