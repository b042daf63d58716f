-- Who waits on a latch right now, and in which parallel request: one row per waiting task.
SELECT wt.session_id,
       wt.exec_context_id,
       wt.wait_type,
       wt.wait_duration_ms,
       wt.resource_description,
       r.command,
       r.dop
FROM sys.dm_os_waiting_tasks AS wt
LEFT JOIN sys.dm_exec_requests AS r ON r.session_id = wt.session_id
WHERE wt.wait_type LIKE N'LATCH[_]%'
ORDER BY wt.session_id, wt.exec_context_id;
