-- Every level of the clustered index, with ghost and version counts (DETAILED mode reads every page).
SELECT
    [level]          = ips.index_level,
    [pages]          = ips.page_count,
    [used_pct]       = ips.avg_page_space_used_in_percent,
    [avg_size]       = ips.avg_record_size_in_bytes,
    [rows]           = ips.record_count,
    [ghosts]         = ips.ghost_record_count,
    [versions]       = ips.version_record_count,
    [ghost_versions] = ips.version_ghost_record_count
FROM sys.dm_db_index_physical_stats(DB_ID(), OBJECT_ID(N'dbo.GhostTest', N'U'), 1, NULL, 'DETAILED') AS ips
ORDER BY ips.index_level;
