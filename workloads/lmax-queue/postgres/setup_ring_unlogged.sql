-- LMAX queue, PostgreSQL analogue: the same ring as setup_ring.sql, UNLOGGED: it writes no
-- WAL and is emptied after a crash, the non-durable twin of a SCHEMA_ONLY memory-optimized table.
-- The slot comes from a sequence modulo the ring's size.  No indexed column
-- changes on a push, and fillfactor 50 leaves room on every page for the new
-- version, so an update can stay heap-only (HOT): no new index entry, and
-- the old version is pruned from its page by a later visit.
-- Runs only in the harness's own database.
CREATE EXTENSION IF NOT EXISTS pgstattuple;
DROP TABLE IF EXISTS lmax_ring;
DROP TABLE IF EXISTS lmax_ring_read;
DROP TABLE IF EXISTS lmax_queue;
DROP SEQUENCE IF EXISTS lmax_seq;
CREATE SEQUENCE lmax_seq AS bigint START WITH 0 MINVALUE 0;
CREATE UNLOGGED TABLE lmax_ring (
    slot            integer     NOT NULL PRIMARY KEY,
    message_id      bigint,
    pushed_at       timestamptz NOT NULL,
    message         char(300)   NOT NULL,
    reference_count integer     NOT NULL
) WITH (fillfactor = 50);
-- The consumers' shared read cursor: the next sequence number to take off the ring.
CREATE UNLOGGED TABLE lmax_ring_read (
    id   integer NOT NULL PRIMARY KEY CHECK (id = 1),
    next bigint  NOT NULL
);
INSERT INTO lmax_ring_read VALUES (1, 0);
