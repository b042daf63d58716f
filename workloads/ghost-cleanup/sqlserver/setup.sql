-- Ghost cleanup (document 002): a one-row table whose clustered key is updated over and over.
-- Runs only inside the harness's own database (the harness checks its owner mark first).
-- Database options (recovery, delayed durability, ADR, RCSI, snapshot isolation) are set
-- by the guard in Python, which records the prior state and restores it.
SET NOCOUNT ON;
DROP TABLE IF EXISTS dbo.GhostTest;
GO
CREATE TABLE dbo.GhostTest
(
    id integer NOT NULL,
    CONSTRAINT PK_GhostTest PRIMARY KEY CLUSTERED (id)
);
INSERT dbo.GhostTest (id) VALUES (0);
GO
CHECKPOINT;
GO
