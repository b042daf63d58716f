-- Run on a second connection with autocommit off: the article's open transaction, in
-- PostgreSQL's terms.  A READ COMMITTED transaction reads the table once and then stays
-- idle.  Each of its statements takes a fresh snapshot and drops it when the statement
-- ends, and a transaction that has written nothing has no transaction id, so between
-- statements it pins nothing (pg_stat_activity shows backend_xmin and backend_xid NULL).
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SELECT count(*) FROM ghost_test;
