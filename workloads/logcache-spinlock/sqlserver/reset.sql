-- Before each measured point: empty the table and seed it with ? rows (keys 1..n, below every session's range).
TRUNCATE TABLE dbo.logcache_insert;
GO
INSERT INTO dbo.logcache_insert WITH (TABLOCK) (c1, c2, c4, c5, c6)
SELECT TOP (?) n.k, SYSDATETIME(), 0, 0, 0
FROM (SELECT CAST(ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) AS bigint) AS k
      FROM sys.all_columns AS a CROSS JOIN sys.all_columns AS b) AS n;
GO
CHECKPOINT;
