-- Source (Microsoft Learn; the page each object's columns, units and permission come from):
--   sys.dm_os_performance_counters: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-os-performance-counters-transact-sql
-- Skipped Ghosted Records/sec is a cumulative counter: read it twice, ten seconds apart, and
-- divide the difference by the seconds between.  A rate far above this server's usual one
-- means scans are stepping over ghosts nobody may remove yet.  (With accelerated database
-- recovery on, the article reports that this counter stops reporting.)
DECLARE @first bigint, @second bigint;
SELECT @first = cntr_value
FROM sys.dm_os_performance_counters
WHERE counter_name = N'Skipped Ghosted Records/sec' AND [object_name] LIKE N'%Access Methods%';
WAITFOR DELAY '00:00:10';
SELECT @second = cntr_value
FROM sys.dm_os_performance_counters
WHERE counter_name = N'Skipped Ghosted Records/sec' AND [object_name] LIKE N'%Access Methods%';
SELECT skipped_ghosted_records_per_second = (@second - @first) / 10.0;
