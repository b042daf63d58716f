-- Before each run: empty the heap and let a checkpoint truncate the log
-- (possible because the database has never had a full backup since going to FULL).
SET NOCOUNT ON;
TRUNCATE TABLE dbo.LatchFairnessTarget;
GO
CHECKPOINT;
GO
CHECKPOINT;
GO
