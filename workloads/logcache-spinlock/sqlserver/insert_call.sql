EXEC dbo.usp_logcache_insert @RowsToInsert = ?, @Offset = ?;
