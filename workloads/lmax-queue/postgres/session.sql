-- Every session: commits do not wait for the WAL flush, the analogue of the
-- article's delayed durability (FORCED).  Session-level: nothing server-wide changes.
SET synchronous_commit = off;
