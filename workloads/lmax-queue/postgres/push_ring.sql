-- One push: take the next sequence value and overwrite its slot in place.
-- Parameters: the message, the ring's size.  The ring never fills: each push
-- overwrites its slot, as a ring whose consumer keeps up would let it.
WITH s AS (SELECT nextval('lmax_seq') AS seq)
UPDATE lmax_ring AS r
SET message_id = s.seq, pushed_at = clock_timestamp(), message = ?, reference_count = r.reference_count + 1
FROM s
WHERE r.slot = s.seq % ?;
