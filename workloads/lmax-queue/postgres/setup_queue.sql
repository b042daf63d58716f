-- LMAX queue, PostgreSQL analogue: the naive queue.  Producers INSERT at the
-- right-hand end of the key, consumers DELETE from the left-hand end: every
-- message is a new tuple and a new index entry, and every consumed one leaves
-- a dead tuple and a dead index entry behind until it is pruned or vacuumed.
CREATE EXTENSION IF NOT EXISTS pgstattuple;
DROP TABLE IF EXISTS lmax_ring;
DROP TABLE IF EXISTS lmax_ring_read;
DROP TABLE IF EXISTS lmax_ring_write;
DROP TABLE IF EXISTS lmax_queue;
DROP SEQUENCE IF EXISTS lmax_seq;
CREATE TABLE lmax_queue (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    pushed_at timestamptz NOT NULL,
    message   char(300)   NOT NULL
);
CHECKPOINT;
