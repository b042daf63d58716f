-- The hot last page: a bigint identity primary key, so every new key is the largest so far
-- and every insert lands on the rightmost leaf of the primary-key B-tree.
CREATE TABLE lpi_insert (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    payload text NOT NULL
);
