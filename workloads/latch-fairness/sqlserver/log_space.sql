-- Log size and the share in use, for every database; the harness keeps its own row.
-- Columns: Database Name, Log Size (MB), Log Space Used (%), Status.
DBCC SQLPERF (LOGSPACE) WITH NO_INFOMSGS;
