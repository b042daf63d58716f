-- The control: a non-sequential key of the same width (a 64-bit hash of the sequence), so
-- inserts land all over the B-tree.  No hot page, but leaves split in the middle.
CREATE TABLE lpi_insert (
    id      bigint PRIMARY KEY DEFAULT hashint8extended(nextval('lpi_seq'), 0),
    payload text NOT NULL
);
