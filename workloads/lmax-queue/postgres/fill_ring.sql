-- Pre-create every slot (the disruptor's pre-allocated entries); the parameter is the ring's size.
INSERT INTO lmax_ring (slot, message_id, pushed_at, message, reference_count)
SELECT g, NULL, clock_timestamp(), '', 0 FROM generate_series(0, ? - 1) AS g;
VACUUM ANALYZE lmax_ring;
CHECKPOINT;
