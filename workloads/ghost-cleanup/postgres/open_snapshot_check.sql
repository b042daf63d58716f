-- Sessions of this database that hold back the xmin horizon (expected: at least 1).
SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND backend_xmin IS NOT NULL AND pid <> pg_backend_pid()
  AND state LIKE 'idle in transaction%';
