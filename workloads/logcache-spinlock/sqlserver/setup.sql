-- Runs inside the harness's own database ({{database}}), which the harness created and marked.
-- 1. A filegroup of its own for the insert target, with one file in the instance's default data path.
IF NOT EXISTS (SELECT 1 FROM sys.filegroups WHERE name = N'FG_LOGCACHE')
BEGIN
    ALTER DATABASE [{{database}}] ADD FILEGROUP [FG_LOGCACHE];
END;
GO
IF NOT EXISTS (SELECT 1 FROM sys.database_files WHERE name = N'logcache_data')
BEGIN
    DECLARE @dir nvarchar(4000) = CAST(SERVERPROPERTY('InstanceDefaultDataPath') AS nvarchar(4000));
    DECLARE @sql nvarchar(max) =
        N'ALTER DATABASE [{{database}}] ADD FILE (NAME = N''logcache_data'', FILENAME = N'''
        + REPLACE(@dir, N'''', N'''''') + N'{{database}}_logcache.ndf'', SIZE = 1024MB, FILEGROWTH = 1024MB) '
        + N'TO FILEGROUP [FG_LOGCACHE]';
    EXEC sys.sp_executesql @sql;
END;
GO
-- 2. The wide table, clustered on a bigint key.
DROP TABLE IF EXISTS dbo.logcache_insert;
CREATE TABLE dbo.logcache_insert
(
    c1 bigint    NOT NULL,
    c2 datetime  NULL,
    c3 char(111) NULL,
    c4 int       NULL,
    c5 int       NULL,
    c6 bigint    NULL,
    CONSTRAINT pk_logcache_insert PRIMARY KEY CLUSTERED (c1)
        WITH (PAD_INDEX = OFF, IGNORE_DUP_KEY = OFF, ALLOW_ROW_LOCKS = ON, ALLOW_PAGE_LOCKS = ON)
        ON [FG_LOGCACHE]
) ON [FG_LOGCACHE];
GO
-- 3. The insert procedure (the ostress role): @RowsToInsert autocommitted singleton inserts on a key range
--    derived from @@SPID, so no two sessions ever touch the same keys; @Offset moves later calls along.
CREATE OR ALTER PROCEDURE dbo.usp_logcache_insert
    @RowsToInsert int    = 10000,
    @Offset       bigint = 0
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @i    int    = 0;
    DECLARE @base bigint = CAST(@@SPID AS bigint) * 1000000000000 + @Offset;
    WHILE @i < @RowsToInsert
    BEGIN
        INSERT INTO dbo.logcache_insert (c1) VALUES (@base + @i);
        SET @i += 1;
    END;
END;
