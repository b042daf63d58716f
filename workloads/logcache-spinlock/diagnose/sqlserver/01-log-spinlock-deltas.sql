-- Source (Microsoft Learn; the page each object's columns, units and permission come from):
--   sys.dm_os_spinlock_stats: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-os-spinlock-stats-transact-sql
-- LOGCACHE_ACCESS and XDESMGR over an interval, not since start-up: snapshot, wait, snapshot again, subtract.
-- Run it while the insert load runs; divide by the inserts done in the interval for spins per insert.
SET NOCOUNT ON;
SELECT name, collisions, spins, sleep_time, backoffs
INTO #spin_before
FROM sys.dm_os_spinlock_stats;

WAITFOR DELAY '00:00:30';

SELECT a.name,
       a.collisions - b.collisions AS collisions,
       a.spins - b.spins AS spins,
       CAST((a.spins - b.spins) * 1.0 / NULLIF(a.collisions - b.collisions, 0) AS decimal(18, 1))
           AS spins_per_collision,
       a.backoffs - b.backoffs AS backoffs,
       a.sleep_time - b.sleep_time AS sleep_time
FROM sys.dm_os_spinlock_stats AS a
JOIN #spin_before AS b ON b.name = a.name
WHERE a.spins > b.spins
ORDER BY CASE WHEN a.name IN (N'LOGCACHE_ACCESS', N'XDESMGR') THEN 0 ELSE 1 END, spins DESC;

DROP TABLE #spin_before;
