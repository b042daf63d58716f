-- Where the log writer runs: its scheduler, CPU and NUMA node (SQL Server 2016+ may show several writers).
SELECT r.session_id, r.command, t.scheduler_id, s.cpu_id, s.parent_node_id
FROM sys.dm_exec_requests AS r
JOIN sys.dm_os_tasks AS t ON t.task_address = r.task_address
JOIN sys.dm_os_schedulers AS s ON s.scheduler_id = t.scheduler_id
WHERE r.command = N'LOG WRITER'
ORDER BY t.scheduler_id;
