-- Heap of the test table: pages, live and dead tuples (pgstattuple reads every page).
SELECT
    pg_relation_size('ghost_test') / current_setting('block_size')::integer AS pages,
    s.tuple_count AS live_tuples,
    s.dead_tuple_count AS dead_tuples,
    s.free_percent AS free_pct,
    (SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'ghost_test') AS stat_dead_tuples
FROM pgstattuple('ghost_test') AS s;
