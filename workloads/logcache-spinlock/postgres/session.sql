-- Each session: the delayed-durability twin (commits do not wait for the WAL flush).
SET synchronous_commit = off;
