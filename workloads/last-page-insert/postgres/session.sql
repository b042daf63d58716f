-- Commit without waiting for the WAL flush, so the log disk is not what gets measured.
SET synchronous_commit = off;
