-- Every primary-key B-tree of the test table (one per partition): size, leaf density and
-- fragmentation from pgstatindex, and the rows of the table it indexes (the table itself, or
-- its partitions when it is partitioned).  The subquery is
-- fenced (OFFSET 0) so pgstatindex only ever sees plain B-tree indexes, never the
-- partitioned parent index.
SELECT
    leaf.index,
    leaf.table_name,
    leaf.pages,
    leaf.heap_pages,
    s.tree_level,
    s.leaf_pages,
    s.internal_pages,
    s.deleted_pages,
    s.avg_leaf_density,
    s.leaf_fragmentation,
    leaf.rows
FROM (
    SELECT c.oid AS index_oid, c.relname AS index, t.relname AS table_name,
           pg_relation_size(c.oid) / current_setting('block_size')::integer AS pages,
           pg_relation_size(t.oid) / current_setting('block_size')::integer AS heap_pages,
           t.reltuples::bigint AS rows
    FROM pg_class AS t
    JOIN pg_index AS x ON x.indrelid = t.oid
    JOIN pg_class AS c ON c.oid = x.indexrelid
    WHERE t.relkind = 'r' AND c.relkind = 'i'
      AND (t.oid = 'lpi_insert'::regclass
           OR t.oid IN (SELECT relid FROM pg_partition_tree('lpi_insert'::regclass) WHERE isleaf))
    OFFSET 0
) AS leaf
CROSS JOIN LATERAL pgstatindex(leaf.index_oid::regclass) AS s
ORDER BY leaf.index;
