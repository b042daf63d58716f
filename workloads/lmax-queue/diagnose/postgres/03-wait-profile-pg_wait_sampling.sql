-- The same waits sampled continuously by the pg_wait_sampling extension (loaded through
-- shared_preload_libraries and created in this database); without it, this says so.
CREATE OR REPLACE FUNCTION pg_temp.queue_wait_profile()
RETURNS TABLE (event_type text, event text, samples bigint)
LANGUAGE plpgsql AS $$
BEGIN
    IF to_regclass('pg_wait_sampling_profile') IS NULL THEN
        RETURN QUERY SELECT 'pg_wait_sampling is not installed in this database'::text, NULL::text, NULL::bigint;
        RETURN;
    END IF;
    RETURN QUERY EXECUTE
        'SELECT coalesce(event_type, ''CPU'')::text, coalesce(event, ''running'')::text, sum(count)::bigint
         FROM pg_wait_sampling_profile GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 15';
END
$$;
SELECT * FROM pg_temp.queue_wait_profile();
