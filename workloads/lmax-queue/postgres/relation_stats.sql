-- Size, live and dead tuples (pgstattuple: exact), and updates / HOT updates
-- (pg_stat_user_tables) of the queue's tables after a run: the ring's slots and its two
-- one-row cursors (each rewritten once a message), or the queue table.
SELECT c.relname::text AS relation,
       pg_total_relation_size(c.oid) AS table_bytes,
       pg_relation_size(c.oid) AS heap_bytes,
       t.tuple_count AS live_tuples,
       t.dead_tuple_count AS dead_tuples,
       coalesce(s.n_tup_ins, 0) AS n_tup_ins,
       coalesce(s.n_tup_upd, 0) AS n_tup_upd,
       coalesce(s.n_tup_hot_upd, 0) AS n_tup_hot_upd,
       coalesce(s.n_tup_del, 0) AS n_tup_del,
       coalesce(s.autovacuum_count, 0) AS autovacuum_count
FROM pg_class AS c
LEFT JOIN pg_stat_user_tables AS s ON s.relid = c.oid
CROSS JOIN LATERAL pgstattuple(c.oid) AS t
WHERE c.relname IN ('lmax_ring', 'lmax_ring_read', 'lmax_ring_write', 'lmax_queue') AND c.relkind = 'r';
