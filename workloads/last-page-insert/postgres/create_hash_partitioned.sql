-- The same table hash-partitioned on the key: consecutive ids go to different partitions,
-- each with its own B-tree and so its own rightmost leaf.  The bound parameter is the modulus.
CREATE TABLE lpi_insert (
    id      bigint GENERATED ALWAYS AS IDENTITY,
    payload text NOT NULL,
    PRIMARY KEY (id)
) PARTITION BY HASH (id);
CALL lpi_make_hash_partitions(?);
