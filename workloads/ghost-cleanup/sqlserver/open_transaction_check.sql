-- How many snapshot transactions are active in this database (expected: at least 1).
SELECT active = COUNT(*)
FROM sys.dm_tran_active_snapshot_database_transactions AS t
JOIN sys.dm_tran_session_transactions AS st ON st.transaction_id = t.transaction_id
WHERE t.session_id <> @@SPID;
