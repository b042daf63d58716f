-- The measured statement: a parallel, fully logged bulk insert into the heap.
-- The single parameter marker below binds the row count; {{maxdop}} is an integer the harness checks and writes in
-- (a query hint takes no variable).  Each parallel worker adds its log records to the
-- one parent transaction under the NESTING_TRANSACTION_FULL latch.
SET NOCOUNT ON;
DECLARE @rows bigint = ?;
DECLARE @started datetime2(7) = SYSUTCDATETIME();

WITH
    Ten (v) AS
    (
        SELECT v FROM (VALUES (1), (1), (1), (1), (1), (1), (1), (1), (1), (1)) AS T (v)
    ),
    Thousand (v) AS (SELECT 1 FROM Ten AS A CROSS JOIN Ten AS B CROSS JOIN Ten AS C),
    Million (v) AS (SELECT 1 FROM Thousand AS A CROSS JOIN Thousand AS B),
    Trillion (v) AS (SELECT 1 FROM Million AS A CROSS JOIN Million AS B),
    Numbers (n) AS
    (
        SELECT TOP (@rows)
            ROW_NUMBER() OVER (ORDER BY @@SPID)
        FROM Trillion
        LEFT OUTER JOIN dbo.LatchFairnessBatchHelper AS H
            ON 1 = 0
    )
INSERT dbo.LatchFairnessTarget WITH (TABLOCK)
    (ID, TypeID, DateTimeUTC)
SELECT
    Numbers.n,
    2,
    DATEADD(SECOND, CONVERT(integer, Numbers.n % 2000000000), CONVERT(datetime, '20200101', 112))
FROM Numbers
OPTION (MAXDOP {{maxdop}});

SELECT elapsed_ms = DATEDIFF_BIG(MICROSECOND, @started, SYSUTCDATETIME()) / 1000.0;
