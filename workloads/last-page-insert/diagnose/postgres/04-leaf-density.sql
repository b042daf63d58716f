-- Needs the pgstattuple extension (CREATE EXTENSION pgstattuple): how full the
-- leaves of one index are.  An ever-increasing key fills its leaves to the index's
-- fillfactor (90% by default) as it grows at the right; a random key settles lower,
-- because its pages split in the middle.  Replace the index name with yours.
-- Source: pgstatindex, https://www.postgresql.org/docs/current/pgstattuple.html
SELECT avg_leaf_density,
       leaf_fragmentation,
       leaf_pages,
       tree_level
FROM pgstatindex('pg_class_oid_index');
