-- The primary-key B-tree: levels, leaf and internal pages, leaf density.
SELECT
    pg_relation_size('ghost_test_pkey') / current_setting('block_size')::integer AS pages,
    i.tree_level,
    i.leaf_pages,
    i.internal_pages,
    i.avg_leaf_density,
    i.deleted_pages
FROM pgstatindex('ghost_test_pkey') AS i;
