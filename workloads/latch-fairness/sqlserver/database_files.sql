-- The files of the harness's own database, for pre-allocating one data file per scheduler.
SELECT file_id, type_desc, name, physical_name, size_mb = CONVERT(bigint, size) * 8 / 1024
FROM sys.database_files
ORDER BY file_id;
