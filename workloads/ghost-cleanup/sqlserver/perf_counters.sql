-- Cumulative counters read before and after each variant; the harness turns them into
-- rates according to cntr_type (272696576 = per-second counter: delta / elapsed seconds).
SELECT
    object_name = RTRIM(pc.[object_name]),
    counter_name = RTRIM(pc.counter_name),
    instance_name = RTRIM(pc.instance_name),
    pc.cntr_value,
    pc.cntr_type
FROM sys.dm_os_performance_counters AS pc
WHERE (pc.counter_name = N'Skipped Ghosted Records/sec' AND pc.[object_name] LIKE N'%Access Methods%')
   OR (pc.counter_name = N'Lock Requests/sec' AND pc.[object_name] LIKE N'%:Locks%' AND pc.instance_name = N'_Total')
   OR (pc.counter_name = N'Version Store Size (KB)' AND pc.[object_name] LIKE N'%Transactions%');
