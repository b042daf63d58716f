CALL logcache_insert_rows(?, ?);
