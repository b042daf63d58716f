-- Source: sys.dm_db_index_physical_stats (ghost_record_count, version_ghost_record_count; VIEW DATABASE STATE)
-- https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-db-index-physical-stats-transact-sql
-- Ghost records a delete-based queue leaves behind, which every consumer looking for the
-- oldest row steps over until the ghost cleanup task removes them.  Set @queue to the
-- queue table (the default is the chapter's own delete-based queue).  SAMPLED reads part of the index;
-- DETAILED reads all of it (slower).
DECLARE @queue nvarchar(300) = N'dbo.lmax_disk_queue';
-- OBJECT_ID of a name that does not exist is NULL, and a NULL object_id makes
-- sys.dm_db_index_physical_stats read every object in the database: stop instead.
IF OBJECT_ID(@queue) IS NULL
    THROW 50000, N'@queue names no table in this database: set it to the queue table', 1;

SELECT i.name AS index_name,
       p.index_level,
       p.page_count,
       p.record_count,
       p.ghost_record_count,
       p.version_ghost_record_count
FROM sys.dm_db_index_physical_stats(DB_ID(), OBJECT_ID(@queue), NULL, NULL, 'SAMPLED') AS p
JOIN sys.indexes AS i ON i.object_id = p.object_id AND i.index_id = p.index_id
ORDER BY p.index_id, p.index_level;
