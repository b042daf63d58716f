-- Source (Microsoft Learn; the page each object's columns, units and permission come from):
--   sys.dm_db_index_physical_stats: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-db-index-physical-stats-transact-sql
--   sys.indexes: https://learn.microsoft.com/sql/relational-databases/system-catalog-views/sys-indexes-transact-sql
-- Ghost records and version ghosts per index level, for one table you suspect (reading
-- every page: run it on one object, not on the whole database).  version_ghost_record_count
-- counts the ghosts kept only because a transaction that may need their versions is open.
DECLARE @table nvarchar(300) = N'dbo.GhostTest';  -- the hot table
-- OBJECT_ID of a name that does not exist is NULL, and a NULL object_id makes
-- sys.dm_db_index_physical_stats read every object in the database, in DETAILED mode: stop instead.
IF OBJECT_ID(@table) IS NULL
    THROW 50000, N'@table names no table in this database: set it to the hot table', 1;

SELECT
    OBJECT_NAME(ips.[object_id]) AS table_name,
    i.name AS index_name,
    ips.index_level,
    ips.page_count,
    ips.record_count,
    ips.ghost_record_count,
    ips.version_ghost_record_count,
    ips.avg_page_space_used_in_percent
FROM sys.dm_db_index_physical_stats(DB_ID(), OBJECT_ID(@table), NULL, NULL, 'DETAILED') AS ips
JOIN sys.indexes AS i
    ON i.[object_id] = ips.[object_id] AND i.index_id = ips.index_id
ORDER BY ips.index_id, ips.index_level;
