DROP PROCEDURE IF EXISTS dbo.usp_logcache_insert;
DROP TABLE IF EXISTS dbo.logcache_insert;
