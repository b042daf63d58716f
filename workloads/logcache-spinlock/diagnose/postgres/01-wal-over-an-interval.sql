-- WAL written over an interval, not since the statistics were reset: snapshot, wait, subtract.
-- PostgreSQL 14 to 17 count WAL writes and syncs in pg_stat_wal (wal_write, wal_sync); PostgreSQL 18
-- moved them to pg_stat_io (object 'wal': writes, fsyncs), so the function below reads the view that
-- the server's version (server_version_num) has.  Each statement is its own transaction in psql, so
-- each reads fresh statistics.  Lengthen the pause to a minute on a busy server.
-- Sources: https://www.postgresql.org/docs/17/monitoring-stats.html#MONITORING-PG-STAT-WAL-VIEW
-- and https://www.postgresql.org/docs/18/monitoring-stats.html#MONITORING-PG-STAT-IO-VIEW
CREATE OR REPLACE FUNCTION pg_temp.wal_counters()
RETURNS TABLE (at timestamptz, wal_records numeric, wal_fpi numeric, wal_bytes numeric,
               wal_buffers_full numeric, wal_write numeric, wal_sync numeric)
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('server_version_num')::int >= 180000 THEN
        RETURN QUERY EXECUTE
            'SELECT clock_timestamp(), w.wal_records::numeric, w.wal_fpi::numeric, w.wal_bytes::numeric,
                    w.wal_buffers_full::numeric, io.writes, io.fsyncs
             FROM pg_stat_wal AS w,
                  (SELECT sum(writes)::numeric AS writes, sum(fsyncs)::numeric AS fsyncs
                   FROM pg_stat_io WHERE object = ''wal'') AS io';
    ELSE
        RETURN QUERY EXECUTE
            'SELECT clock_timestamp(), wal_records::numeric, wal_fpi::numeric, wal_bytes::numeric,
                    wal_buffers_full::numeric, wal_write::numeric, wal_sync::numeric
             FROM pg_stat_wal';
    END IF;
END
$$;

CREATE TEMP TABLE wal_before AS SELECT * FROM pg_temp.wal_counters();

SELECT pg_sleep(10);

SELECT round(extract(epoch FROM w.at - b.at)::numeric, 1) AS seconds,
       w.wal_records - b.wal_records AS wal_records,
       w.wal_fpi - b.wal_fpi AS full_page_images,
       pg_size_pretty(w.wal_bytes - b.wal_bytes) AS wal_written,
       w.wal_buffers_full - b.wal_buffers_full AS wal_buffers_full,
       w.wal_write - b.wal_write AS wal_writes,
       w.wal_sync - b.wal_sync AS wal_syncs
FROM pg_temp.wal_counters() AS w, wal_before AS b;

DROP TABLE wal_before;
