-- The accounting of a run: the key starts at 0 and each committed update adds 1, so the
-- key read back is the number of updates done; the table must still hold one row.
SELECT max(id) AS updates_done, count(*) AS live_rows FROM ghost_test;
