-- Sessions that hold back cleanup, oldest horizon first.  backend_xmin set: the session holds a
-- snapshot (an idle REPEATABLE READ or SERIALIZABLE transaction, or a statement still running),
-- and no version deleted after it can be removed.  backend_xid set: the session has written and
-- not committed.  An idle READ COMMITTED transaction that has only read shows neither.
-- Source: pg_stat_activity (backend_xid, backend_xmin), https://www.postgresql.org/docs/current/monitoring-stats.html#MONITORING-PG-STAT-ACTIVITY-VIEW
SELECT
    pid,
    usename,
    application_name,
    state,
    now() - xact_start AS transaction_age,
    now() - state_change AS idle_for,
    backend_xid,
    backend_xmin,
    age(backend_xmin) AS xmin_age_in_transactions
FROM pg_stat_activity
WHERE (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL) AND pid <> pg_backend_pid()
ORDER BY age(backend_xmin) DESC NULLS LAST;
