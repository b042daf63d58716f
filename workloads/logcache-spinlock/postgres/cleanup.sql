DROP TABLE IF EXISTS logcache_insert;
DROP PROCEDURE IF EXISTS logcache_insert_rows(bigint, integer);
