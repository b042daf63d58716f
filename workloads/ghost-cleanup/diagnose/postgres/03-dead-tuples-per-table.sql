-- Tables with the most dead tuples, with how many of their updates were HOT (an update that
-- changes an indexed column never is) and when they were last vacuumed.  Many dead tuples
-- on a small, hot table, and a last vacuum long ago, are this chapter's pattern.
-- Source: pg_stat_user_tables, https://www.postgresql.org/docs/current/monitoring-stats.html#MONITORING-PG-STAT-ALL-TABLES-VIEW
SELECT
    relname,
    n_live_tup,
    n_dead_tup,
    n_tup_upd,
    n_tup_hot_upd,
    last_vacuum,
    last_autovacuum
FROM pg_stat_user_tables
ORDER BY n_dead_tup DESC
LIMIT 20;
