-- The same table with OPTIMIZE_FOR_SEQUENTIAL_KEY (SQL Server 2019, 15.x, and later): the
-- engine throttles how fast threads may ask for the last page's latch and favours threads
-- likely to finish quickly; the throttling shows as BTREE_INSERT_FLOW_CONTROL waits.
IF OBJECT_ID(N'dbo.lpi_sequential_opt', N'U') IS NOT NULL
    DROP TABLE dbo.lpi_sequential_opt;
GO
CREATE TABLE dbo.lpi_sequential_opt (
    ID   int IDENTITY(1, 1) NOT NULL,
    col1 varchar(50) NOT NULL,
    CONSTRAINT PK_lpi_sequential_opt PRIMARY KEY CLUSTERED (ID)
        WITH (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON)
);
GO
