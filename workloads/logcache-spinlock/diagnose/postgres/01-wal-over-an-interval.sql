-- WAL written over an interval (PostgreSQL 14 and later), not since the statistics were reset:
-- snapshot, wait, subtract.  Each statement is its own transaction in psql, so each reads fresh statistics.
-- Lengthen the pause to a minute on a busy server.
CREATE TEMP TABLE wal_before AS
SELECT now() AS at, wal_records, wal_fpi, wal_bytes, wal_buffers_full, wal_write, wal_sync FROM pg_stat_wal;

SELECT pg_sleep(10);

SELECT round(extract(epoch FROM now() - b.at)::numeric, 1) AS seconds,
       w.wal_records - b.wal_records AS wal_records,
       w.wal_fpi - b.wal_fpi AS full_page_images,
       pg_size_pretty(w.wal_bytes - b.wal_bytes) AS wal_written,
       w.wal_buffers_full - b.wal_buffers_full AS wal_buffers_full,
       w.wal_write - b.wal_write AS wal_writes,
       w.wal_sync - b.wal_sync AS wal_syncs
FROM pg_stat_wal AS w, wal_before AS b;

DROP TABLE wal_before;
