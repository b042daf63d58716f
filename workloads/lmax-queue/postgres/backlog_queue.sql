-- Messages pushed but not taken off the queue table at the end of a point.
SELECT count(*) AS backlog FROM lmax_queue;
