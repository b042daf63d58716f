-- Where the queue's sessions spent their working time over a longer stretch: every wait
-- event the pg_wait_sampling extension sampled since its profile was last reset
-- (SELECT pg_wait_sampling_reset_profile();), for the client backends still connected, with
-- Client:ClientRead (a session idle between statements) left out.  Needs the extension in
-- shared_preload_libraries and in this database; without it, this says so.
-- Sources:
--   pg_wait_sampling_profile: https://github.com/postgrespro/pg_wait_sampling (README)
--   backend_type and the wait events:
--   https://www.postgresql.org/docs/current/monitoring-stats.html#MONITORING-PG-STAT-ACTIVITY-VIEW
CREATE OR REPLACE FUNCTION pg_temp.queue_wait_profile()
RETURNS TABLE (event_type text, event text, samples bigint, pct_of_working_samples numeric)
LANGUAGE plpgsql AS $$
BEGIN
    IF to_regclass('pg_wait_sampling_profile') IS NULL THEN
        RETURN QUERY SELECT 'pg_wait_sampling is not installed in this database'::text, NULL::text,
                            NULL::bigint, NULL::numeric;
        RETURN;
    END IF;
    RETURN QUERY EXECUTE
        'SELECT coalesce(p.event_type, ''CPU'')::text, coalesce(p.event, ''running'')::text,
                sum(p.count)::bigint,
                round(100.0 * sum(p.count) / sum(sum(p.count)) OVER (), 1)
         FROM pg_wait_sampling_profile AS p
         JOIN pg_stat_activity AS a ON a.pid = p.pid AND a.backend_type = ''client backend''
         WHERE p.pid <> pg_backend_pid()
           AND (p.event_type, p.event) IS DISTINCT FROM (''Client'', ''ClientRead'')
         GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 15';
END
$$;
SELECT * FROM pg_temp.queue_wait_profile();
