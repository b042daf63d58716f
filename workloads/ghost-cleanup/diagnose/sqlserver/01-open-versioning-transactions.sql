-- Source (Microsoft Learn; the page each object's columns, units and permission come from):
--   sys.dm_tran_active_snapshot_database_transactions: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-tran-active-snapshot-database-transactions-transact-sql
--   sys.dm_exec_sessions: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-exec-sessions-transact-sql
-- Transactions that generate or may read row versions in this instance, oldest first, with
-- who holds them.  An idle session ('sleeping') with an old row here is the article's case:
-- under SNAPSHOT isolation (is_snapshot = 1) it keeps every version ghost made since it
-- started, on any version; an RCSI one does the same on SQL Server 2019 and earlier.
SELECT TOP (20)
    t.session_id,
    t.is_snapshot,
    t.elapsed_time_seconds,
    s.[status],
    s.login_name,
    s.[host_name],
    s.[program_name],
    s.last_request_end_time
FROM sys.dm_tran_active_snapshot_database_transactions AS t
JOIN sys.dm_exec_sessions AS s
    ON s.session_id = t.session_id
ORDER BY t.elapsed_time_seconds DESC;
