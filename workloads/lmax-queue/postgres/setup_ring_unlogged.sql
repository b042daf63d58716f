-- LMAX queue, PostgreSQL analogue: the same ring as setup_ring.sql, UNLOGGED: it writes no
-- WAL and is emptied after a crash, the non-durable twin of a SCHEMA_ONLY memory-optimized table.
-- Two one-row cursors: the producers' (the next sequence to publish) and the consumers'
-- (the next sequence to take).  A producer claims sequence w and writes slot w % size in
-- one transaction, and only while w < consumers' cursor + size: a full ring holds
-- producers back instead of overwriting a message nobody read (the Disruptor's gating).
-- No indexed column changes on a push, and fillfactor 50 leaves room on every page for
-- the new version, so an update can stay heap-only (HOT).
-- Runs only in the harness's own database.
CREATE EXTENSION IF NOT EXISTS pgstattuple;
DROP TABLE IF EXISTS lmax_ring;
DROP TABLE IF EXISTS lmax_ring_read;
DROP TABLE IF EXISTS lmax_ring_write;
DROP TABLE IF EXISTS lmax_queue;
DROP SEQUENCE IF EXISTS lmax_seq;
CREATE UNLOGGED TABLE lmax_ring (
    slot            integer     NOT NULL PRIMARY KEY,
    message_id      bigint,
    pushed_at       timestamptz NOT NULL,
    message         char(300)   NOT NULL,
    reference_count integer     NOT NULL
) WITH (fillfactor = 50);
CREATE UNLOGGED TABLE lmax_ring_read (
    id   integer NOT NULL PRIMARY KEY CHECK (id = 1),
    next bigint  NOT NULL
);
CREATE UNLOGGED TABLE lmax_ring_write (
    id   integer NOT NULL PRIMARY KEY CHECK (id = 1),
    next bigint  NOT NULL
);
INSERT INTO lmax_ring_read VALUES (1, 0);
INSERT INTO lmax_ring_write VALUES (1, 0);
