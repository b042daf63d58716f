-- Source (Microsoft Learn; the page each object's columns, units and permission come from):
--   sys.dm_exec_requests: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-exec-requests-transact-sql
--   sys.dm_os_schedulers: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-os-schedulers-transact-sql
-- Where each log writer runs: its scheduler and that scheduler's status, CPU and NUMA node. Read the status
-- before changing any affinity mask. HIDDEN ONLINE (SQL Server 2016 and later) means a hidden scheduler, which
-- Microsoft's support engineers say is bound to NUMA node 0, not to one core the mask can free; only a VISIBLE
-- ONLINE scheduler is one that the affinity mask (and the article's change, made on 2016 CTP 2.2) can free.
SELECT r.session_id,
       r.command,
       s.scheduler_id,
       s.status,
       s.cpu_id,
       s.parent_node_id
FROM sys.dm_exec_requests AS r
JOIN sys.dm_os_schedulers AS s ON s.scheduler_id = r.scheduler_id
WHERE r.command = N'LOG WRITER';
