-- Run on a second connection with autocommit off: a REPEATABLE READ transaction reads the
-- table once and then stays idle.  Its snapshot, taken by that first query, lasts until the
-- transaction ends, so its xmin holds back the horizon: no tuple version deleted after it
-- can be pruned or vacuumed away.  SQL Server's SNAPSHOT isolation behaves the same way.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM ghost_test;
