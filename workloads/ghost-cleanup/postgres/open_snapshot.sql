-- Run on a second connection with autocommit off: a REPEATABLE READ transaction whose
-- snapshot is taken by the first query and then held.  Its xmin holds back the horizon,
-- so no tuple version deleted after it can be pruned or vacuumed away.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM ghost_test;
