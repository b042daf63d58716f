-- Messages pushed but not taken off the ring at the end of a point: the distance from the
-- consumers' read cursor to the last sequence number a producer took, at most the ring's
-- size (a slot further behind was overwritten: lost, not waiting).  Parameter: the ring's size.
SELECT LEAST((SELECT CASE WHEN is_called THEN last_value + 1 ELSE 0 END FROM lmax_seq)
             - (SELECT next FROM lmax_ring_read WHERE id = 1), ?) AS backlog;
