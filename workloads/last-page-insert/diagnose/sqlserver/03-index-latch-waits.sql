-- Source (Microsoft Learn; the page each object's columns, units and permission come from):
--   sys.dm_db_index_operational_stats: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-db-index-operational-stats-transact-sql
--   sys.indexes: https://learn.microsoft.com/sql/relational-databases/system-catalog-views/sys-indexes-transact-sql
-- Which indexes of this database have waited for page latches, and how long per
-- wait, since their metadata was last cached.  An index whose inserts land on its
-- last page shows many leaf inserts and a large page_latch_wait_in_ms; the average
-- per wait is the threshold to watch (the latch whitepaper's problem cases averaged
-- tens of milliseconds).
SELECT OBJECT_SCHEMA_NAME(os.object_id) AS schema_name,
       OBJECT_NAME(os.object_id) AS object_name,
       i.name AS index_name,
       os.partition_number,
       os.leaf_insert_count,
       os.page_latch_wait_count,
       os.page_latch_wait_in_ms,
       CAST(os.page_latch_wait_in_ms AS float)
           / NULLIF(os.page_latch_wait_count, 0) AS avg_wait_ms
FROM sys.dm_db_index_operational_stats(DB_ID(), NULL, NULL, NULL) AS os
JOIN sys.indexes AS i ON i.object_id = os.object_id AND i.index_id = os.index_id
WHERE os.page_latch_wait_count > 0
ORDER BY os.page_latch_wait_in_ms DESC;
