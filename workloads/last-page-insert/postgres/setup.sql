-- Last-page inserts, PostgreSQL analogue.  Runs only in the harness's own database.
-- pgstattuple: leaf density and fragmentation of the B-trees; pg_buffercache: which
-- buffers the inserting backends hold pinned (a backend waiting for a buffer's content
-- lock holds a pin on it, so pinned buffers name the hot pages).
CREATE EXTENSION IF NOT EXISTS pgstattuple;
CREATE EXTENSION IF NOT EXISTS pg_buffercache;
-- pageinspect: whether a pinned index page is the rightmost leaf (no right sibling).
CREATE EXTENSION IF NOT EXISTS pageinspect;
DROP TABLE IF EXISTS lpi_insert CASCADE;
DROP SEQUENCE IF EXISTS lpi_seq;
CREATE SEQUENCE lpi_seq;
-- Hash partitions lpi_insert_p0 .. p<modulus-1>: each has its own primary-key B-tree, so
-- sequential ids spread over <modulus> rightmost leaves instead of one.
CREATE OR REPLACE PROCEDURE lpi_make_hash_partitions(modulus integer)
LANGUAGE plpgsql
AS $body$
BEGIN
    IF modulus < 2 OR modulus > 64 THEN
        RAISE EXCEPTION 'lpi_make_hash_partitions: modulus %, expected 2 to 64', modulus;
    END IF;
    FOR r IN 0 .. modulus - 1 LOOP
        EXECUTE format('CREATE TABLE lpi_insert_p%s PARTITION OF lpi_insert '
                       'FOR VALUES WITH (MODULUS %s, REMAINDER %s)', r, modulus, r);
    END LOOP;
END
$body$;
-- The role of a page of one of the test table's relations, for the pinned-buffer sampler:
-- for a B-tree page, pageinspect's bt_page_stats says whether it is a leaf with no right
-- sibling (the rightmost leaf, where every ever-increasing key goes).  The role is read a
-- moment after the pin was seen: at tens of thousands of rows a second the rightmost leaf
-- splits every few milliseconds, faster than one sample, so a leaf from which the right edge
-- is at most 8 right-links away is reported as 'rightmost leaf, just split' (it was the
-- rightmost leaf a few splits ago; a random-key index has such leaves only by chance).
CREATE OR REPLACE FUNCTION lpi_page_role(rel regclass, blk bigint)
RETURNS text
LANGUAGE plpgsql
AS $body$
DECLARE
    kind "char";
    st record;
    nxt bigint;
BEGIN
    SELECT relkind INTO kind FROM pg_class WHERE oid = rel;
    IF kind = 'r' THEN RETURN 'heap'; END IF;
    IF kind = 'S' THEN RETURN 'sequence'; END IF;
    IF kind <> 'i' THEN RETURN 'other'; END IF;
    IF blk = 0 THEN RETURN 'metapage'; END IF;
    SELECT type, btpo_next INTO st FROM bt_page_stats(rel::text, blk);
    IF st.type = 'l' AND st.btpo_next = 0 THEN RETURN 'rightmost leaf'; END IF;
    IF st.type = 'l' THEN
        nxt := st.btpo_next;
        FOR hop IN 1 .. 8 LOOP
            SELECT n.btpo_next INTO nxt FROM bt_page_stats(rel::text, nxt) AS n;
            IF nxt = 0 THEN RETURN 'rightmost leaf, just split'; END IF;
        END LOOP;
        RETURN 'other leaf';
    END IF;
    IF st.type = 'r' THEN RETURN 'root'; END IF;
    RETURN 'internal';
END
$body$;
-- The same single-row insert as a server-side loop: each row its own transaction.
CREATE OR REPLACE PROCEDURE lpi_insert_rows(todo integer)
LANGUAGE plpgsql
AS $body$
BEGIN
    FOR i IN 1 .. todo LOOP
        INSERT INTO lpi_insert (payload) VALUES ('row payload: thirty-two bytes ..');
        COMMIT;
    END LOOP;
END
$body$;
