-- Source (Microsoft Learn; the page each object's columns, units and permission come from):
--   sys.partitions: https://learn.microsoft.com/sql/relational-databases/system-catalog-views/sys-partitions-transact-sql
--   sys.indexes: https://learn.microsoft.com/sql/relational-databases/system-catalog-views/sys-indexes-transact-sql
--   sys.index_columns: https://learn.microsoft.com/sql/relational-databases/system-catalog-views/sys-index-columns-transact-sql
--   sys.columns: https://learn.microsoft.com/sql/relational-databases/system-catalog-views/sys-columns-transact-sql
-- Clustered indexes whose first key column is an IDENTITY column (every insert goes
-- to the last page), with whether OPTIMIZE_FOR_SEQUENTIAL_KEY is on and how many
-- partitions the index has.  These are the candidates for the fixes in this
-- chapter.  SQL Server 2019 and later: on older versions, which have no such
-- option, leave out the optimize_for_sequential_key line.
SELECT OBJECT_SCHEMA_NAME(i.object_id) AS schema_name,
       OBJECT_NAME(i.object_id) AS object_name,
       i.name AS index_name,
       c.name AS first_key_column,
       i.optimize_for_sequential_key,
       (SELECT COUNT(*) FROM sys.partitions AS p
        WHERE p.object_id = i.object_id AND p.index_id = i.index_id) AS partitions
FROM sys.indexes AS i
JOIN sys.index_columns AS ic
  ON ic.object_id = i.object_id AND ic.index_id = i.index_id AND ic.key_ordinal = 1
JOIN sys.columns AS c ON c.object_id = ic.object_id AND c.column_id = ic.column_id
WHERE i.type = 1
  AND c.is_identity = 1
  AND OBJECTPROPERTY(i.object_id, 'IsUserTable') = 1
ORDER BY schema_name, object_name;
