-- Between runs: the naive queue emptied, every ring slot free again.
TRUNCATE TABLE dbo.lmax_disk_queue;
UPDATE dbo.lmax_disk_ring SET reference_count = 0, message_id = NULL;
CHECKPOINT;
