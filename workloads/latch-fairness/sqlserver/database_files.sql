-- The files of the harness's own database, for pre-allocating one data file per scheduler.
-- filegroup: NULL for the log; the layout counts the PRIMARY filegroup's data files only (another
-- chapter's filegroup, such as FG_LOGCACHE, can share the lab database).
SELECT file_id, type_desc, name, physical_name, size_mb = CONVERT(bigint, size) * 8 / 1024,
       filegroup = FILEGROUP_NAME(data_space_id)
FROM sys.database_files
ORDER BY file_id;
