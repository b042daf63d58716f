-- Run on a second connection: start a row-versioning (RCSI) transaction and leave it open.
-- Reading a user table makes it a real snapshot transaction, visible in
-- sys.dm_tran_active_snapshot_database_transactions; it pins every version made after it.
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;
BEGIN TRANSACTION;
SELECT row_count = COUNT_BIG(*) FROM dbo.GhostTest;
