-- Ghost cleanup, PostgreSQL analogue: a one-row table whose primary key is updated
-- over and over.  Each UPDATE writes a new heap tuple and (the key changed, so the
-- update cannot be HOT) a new index entry; the old ones are dead once no snapshot
-- can see them.  Runs only in the harness's own database.
CREATE EXTENSION IF NOT EXISTS pgstattuple;
DROP TABLE IF EXISTS ghost_test;
CREATE TABLE ghost_test (id integer PRIMARY KEY);
INSERT INTO ghost_test (id) VALUES (0);
-- One chunk of the loop: each update commits on its own (a procedure may COMMIT
-- inside its loop when CALLed outside a transaction block).
CREATE OR REPLACE PROCEDURE ghost_update_chunk(todo integer)
LANGUAGE plpgsql
AS $body$
BEGIN
    FOR i IN 1..todo LOOP
        UPDATE ghost_test SET id = id + 1;
        COMMIT;
    END LOOP;
END
$body$;
CHECKPOINT;
