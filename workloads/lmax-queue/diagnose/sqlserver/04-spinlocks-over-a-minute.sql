-- Source (Microsoft Learn; the page each object's columns, units and permission come from):
--   sys.dm_os_spinlock_stats: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-os-spinlock-stats-transact-sql
-- Spinlocks over one minute (a delta), for a queue on In-Memory OLTP where no latch or lock
-- is left to wait on: the article's LOGCACHE_ACCESS, CMED_HASH_SET, XDESMGR and BLOCKER_ENUM.
-- Needs VIEW SERVER STATE.
SELECT name, collisions, spins, backoffs
INTO #spins_before
FROM sys.dm_os_spinlock_stats;

WAITFOR DELAY '00:01:00';

SELECT TOP (15)
       s.name,
       s.collisions - b.collisions AS collisions,
       s.spins - b.spins AS spins,
       s.backoffs - b.backoffs AS backoffs
FROM sys.dm_os_spinlock_stats AS s
JOIN #spins_before AS b ON b.name = s.name
WHERE s.spins > b.spins
ORDER BY spins DESC;

DROP TABLE #spins_before;
