-- One pop from the ring: once a producer has written the slot of the consumers' next
-- sequence number, move the shared cursor past it and return the message's age in seconds.
-- The ring does not hold producers back: a producer a whole lap ahead overwrites a slot
-- nobody read, and the pop then returns NULL for that message (lost) and moves on.
-- Consumers queue on the cursor's row lock, as the Disruptor's consumers share one sequence.
-- Parameter: the ring's size.  No row: the next slot is not written yet (the ring is empty).
WITH c AS (
    UPDATE lmax_ring_read AS c
    SET next = c.next + 1
    FROM lmax_ring AS r
    WHERE c.id = 1 AND r.slot = c.next % ? AND r.message_id >= c.next
    RETURNING c.next - 1 AS seq, r.message_id, r.pushed_at
)
SELECT CASE WHEN message_id = seq THEN extract(epoch FROM clock_timestamp() - pushed_at) END AS age,
       message_id <> seq AS lost
FROM c;
