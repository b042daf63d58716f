-- Source (Microsoft Learn; the page each object's columns, units and permission come from):
--   sys.dm_db_index_operational_stats: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-db-index-operational-stats-transact-sql
--   sys.indexes: https://learn.microsoft.com/sql/relational-databases/system-catalog-views/sys-indexes-transact-sql
-- Which index of which table the latch and lock waits land on, since the index's metadata
-- was last cached: a queue table shows page latch waits on its clustered index and, for a
-- delete-based queue, leaf deletes turning into ghost records.  Run in the queue's database.
SELECT TOP (20)
       OBJECT_SCHEMA_NAME(s.object_id) + N'.' + OBJECT_NAME(s.object_id) AS table_name,
       i.name AS index_name,
       s.leaf_insert_count,
       s.leaf_delete_count,
       s.leaf_ghost_count,
       s.page_latch_wait_count,
       s.page_latch_wait_in_ms,
       s.row_lock_wait_count,
       s.row_lock_wait_in_ms
FROM sys.dm_db_index_operational_stats(DB_ID(), NULL, NULL, NULL) AS s
JOIN sys.indexes AS i ON i.object_id = s.object_id AND i.index_id = s.index_id
WHERE OBJECTPROPERTY(s.object_id, 'IsUserTable') = 1
ORDER BY s.page_latch_wait_in_ms + s.row_lock_wait_in_ms DESC;
