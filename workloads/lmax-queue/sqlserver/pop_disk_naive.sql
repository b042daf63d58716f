-- One pop from the naive disk queue: delete the oldest row and return its age
-- in microseconds (enqueue to dequeue).  No READPAST: consumers queue on the
-- same row, as a naive queue does.
WITH oldest AS (SELECT TOP (1) id, pushed_at FROM dbo.lmax_disk_queue ORDER BY id)
DELETE FROM oldest
OUTPUT DATEDIFF_BIG(MICROSECOND, deleted.pushed_at, SYSDATETIME()) AS age_us;
