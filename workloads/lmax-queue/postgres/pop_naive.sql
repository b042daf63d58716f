-- One pop, naively: every consumer goes for the oldest row.  Two consumers
-- that pick the same row queue on its row lock; the loser re-checks the row
-- once the winner commits, finds it gone, and deletes nothing.
-- Returns the message's age in seconds (enqueue to dequeue).
DELETE FROM lmax_queue
WHERE id = (SELECT min(id) FROM lmax_queue)
RETURNING extract(epoch FROM clock_timestamp() - pushed_at);
