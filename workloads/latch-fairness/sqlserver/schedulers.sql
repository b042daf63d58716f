-- Schedulers that run user work: the article's MAXDOP is this count minus one,
-- leaving one scheduler for the parent task that drains the final exchange.
SELECT schedulers = COUNT(*)
FROM sys.dm_os_schedulers
WHERE status = N'VISIBLE ONLINE';
