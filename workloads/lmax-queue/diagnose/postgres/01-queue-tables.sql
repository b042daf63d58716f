-- Queue-shaped tables: many inserts and deletes (a delete-based queue) or many updates (a
-- ring updated in place).  A delete-based queue shows dead tuples piling up between vacuums;
-- a ring should show nearly every update as HOT (heap-only: no new index entry).
-- Source: pg_stat_user_tables (n_tup_hot_upd: https://www.postgresql.org/docs/current/storage-hot.html), https://www.postgresql.org/docs/current/monitoring-stats.html#MONITORING-PG-STAT-ALL-TABLES-VIEW
SELECT relname,
       n_live_tup,
       n_dead_tup,
       round(n_dead_tup::numeric / nullif(n_live_tup + n_dead_tup, 0), 2) AS dead_share,
       n_tup_ins,
       n_tup_del,
       n_tup_upd,
       round(n_tup_hot_upd::numeric / nullif(n_tup_upd, 0), 2) AS hot_share,
       last_autovacuum,
       autovacuum_count
FROM pg_stat_user_tables
WHERE n_tup_del + n_tup_upd > 0
ORDER BY n_tup_del + n_tup_upd DESC
LIMIT 20;
