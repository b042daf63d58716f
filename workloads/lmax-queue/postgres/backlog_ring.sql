-- Messages published but not yet taken off the ring: the producers' cursor minus the
-- consumers'.  A producer never runs a whole lap ahead, so this is at most the ring's size.
SELECT (SELECT next FROM lmax_ring_write WHERE id = 1) - (SELECT next FROM lmax_ring_read WHERE id = 1) AS backlog;
