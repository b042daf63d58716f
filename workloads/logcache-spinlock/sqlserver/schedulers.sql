-- The scheduler map: which CPU each regular scheduler is bound to, its node, and whether affinity keeps it online.
SELECT scheduler_id, cpu_id, parent_node_id, CAST(is_online AS int) AS is_online, status
FROM sys.dm_os_schedulers
WHERE scheduler_id < 1048576
ORDER BY scheduler_id;
