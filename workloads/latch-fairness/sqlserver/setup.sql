-- Latch fairness (document 000): the target heap and the batch-mode helper.
-- Runs only inside the harness's own database (the harness checks its owner mark first).
-- The recovery model (SIMPLE, then FULL with no backup) is set by the guard in Python,
-- which records the prior model and puts it back afterwards.  Data and log files are
-- pre-allocated by statements the harness generates from the scheduler count.
SET NOCOUNT ON;
DROP TABLE IF EXISTS dbo.LatchFairnessTarget;
DROP TABLE IF EXISTS dbo.LatchFairnessBatchHelper;
GO
-- The heap every parallel worker inserts into: one log record per row, fully logged.
CREATE TABLE dbo.LatchFairnessTarget
(
    ID bigint NOT NULL,
    TypeID integer NOT NULL,
    DateTimeUTC datetime NOT NULL
);
GO
-- Always empty.  Joining to a table with a clustered columnstore index lets the
-- row generator run in batch mode; the join predicate is never true.
CREATE TABLE dbo.LatchFairnessBatchHelper
(
    i integer NOT NULL,
    INDEX CCI_LatchFairnessBatchHelper CLUSTERED COLUMNSTORE
);
GO
