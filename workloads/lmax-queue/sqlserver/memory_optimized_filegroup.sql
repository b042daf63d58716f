-- In-Memory OLTP needs a MEMORY_OPTIMIZED_DATA filegroup with one container
-- (a folder) in the database.  This runs only in the harness's own database.
-- A memory-optimized filegroup cannot be removed again once it has held data:
-- the only way back is dropping the harness's database.
IF NOT EXISTS (SELECT 1 FROM sys.filegroups WHERE type = N'FX')
    ALTER DATABASE [{{database}}] ADD FILEGROUP [{{database}}_mod] CONTAINS MEMORY_OPTIMIZED_DATA;
GO
IF NOT EXISTS (SELECT 1 FROM sys.database_files WHERE type = 2)
BEGIN
    DECLARE @folder nvarchar(400) = CAST(SERVERPROPERTY('InstanceDefaultDataPath') AS nvarchar(400))
                                    + N'{{database}}_mod';
    DECLARE @sql nvarchar(max) = N'ALTER DATABASE [{{database}}] ADD FILE (NAME = N''{{database}}_mod'', '
                                 + N'FILENAME = N''' + REPLACE(@folder, N'''', N'''''') + N''') '
                                 + N'TO FILEGROUP [{{database}}_mod]';
    EXEC sys.sp_executesql @sql;
END;
