-- Source (Microsoft Learn; the page each object's columns, units and permission come from):
--   sys.dm_exec_requests: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-exec-requests-transact-sql
--   sys.fn_pagerescracker: https://learn.microsoft.com/sql/relational-databases/system-functions/sys-fn-pagerescracker-transact-sql
--   sys.dm_db_page_info: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-db-page-info-transact-sql
-- From the waited-for page to its table and index (SQL Server 2019 and later):
-- sys.fn_PageResCracker turns a request's page_resource into database, file and
-- page, and sys.dm_db_page_info says which object, index and level the page belongs
-- to.  A leaf page (page_level 0) of an index (index_id above 0; 0 is a heap) that
-- holds rows (DATA_PAGE for a clustered index's leaf, INDEX_PAGE for other index
-- pages) with no next page is the last page of its index: the hot spot this chapter
-- is about.  Heap pages and allocation pages (PFS, GAM, SGAM, IAM) also have no next
-- page, so they are not counted as last pages.
-- Permissions: sys.dm_db_page_info needs VIEW DATABASE STATE in the database
-- (SQL Server 2022 and later: VIEW DATABASE PERFORMANCE STATE), as its page says;
-- sys.dm_exec_requests shows other sessions' requests only with VIEW SERVER STATE
-- (2022 and later: VIEW SERVER PERFORMANCE STATE), and without it only your own.
SELECT r.session_id,
       r.wait_type,
       r.wait_time AS wait_ms,
       pi.database_id,
       pi.file_id,
       pi.page_id,
       OBJECT_SCHEMA_NAME(pi.object_id, pi.database_id) AS schema_name,
       OBJECT_NAME(pi.object_id, pi.database_id) AS object_name,
       pi.index_id,
       pi.partition_id,
       pi.page_type_desc,
       pi.page_level,
       CASE WHEN pi.index_id > 0
                 AND pi.page_type_desc IN (N'DATA_PAGE', N'INDEX_PAGE')
                 AND pi.page_level = 0
                 AND pi.next_page_page_id = 0 THEN 1 ELSE 0 END
           AS is_last_page
FROM sys.dm_exec_requests AS r
CROSS APPLY sys.fn_PageResCracker(r.page_resource) AS pr
CROSS APPLY sys.dm_db_page_info(pr.db_id, pr.file_id, pr.page_id, 'DETAILED') AS pi
WHERE r.wait_type LIKE N'PAGELATCH[_]%';
