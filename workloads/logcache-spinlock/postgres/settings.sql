SELECT name, setting FROM pg_settings
WHERE name IN ('wal_buffers', 'wal_writer_delay', 'wal_writer_flush_after', 'synchronous_commit', 'fsync',
               'full_page_writes', 'shared_buffers', 'max_wal_size', 'wal_level', 'commit_delay');
