-- One pop with SKIP LOCKED: a consumer takes the oldest row nobody else has
-- locked, so consumers never wait for each other.
-- Returns the message's age in seconds (enqueue to dequeue).
DELETE FROM lmax_queue
WHERE id = (SELECT id FROM lmax_queue ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING extract(epoch FROM clock_timestamp() - pushed_at);
