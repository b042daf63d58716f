-- How often VACUUM and ANALYZE ran on the test table, by hand and by autovacuum (read before and after the loop:
-- the difference proves whether autovacuum reached it during the run).
SELECT
    coalesce(s.vacuum_count, 0) AS vacuum_count,
    coalesce(s.autovacuum_count, 0) AS autovacuum_count,
    coalesce(s.autoanalyze_count, 0) AS autoanalyze_count,
    (SELECT option_value FROM pg_options_to_table(c.reloptions) WHERE option_name = 'autovacuum_enabled')
        AS autovacuum_enabled
FROM pg_class AS c
LEFT JOIN pg_stat_user_tables AS s ON s.relid = c.oid
WHERE c.oid = 'ghost_test'::regclass;
