-- The twin of delayed durability: commit without waiting for the WAL flush.
SET synchronous_commit = off;
