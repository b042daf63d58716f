-- Buffers of the test table's relations that some backend holds pinned right now (a backend
-- waiting for a buffer's content lock holds a pin on it), with each page's role
-- (lpi_page_role: heap, rightmost leaf, other leaf, internal...).  Sampled a few times a
-- second during the run with the most sessions.
SELECT c.relname AS relation, b.relblocknumber AS block,
       pg_relation_size(c.oid) / current_setting('block_size')::integer - 1 AS last_block,
       b.pinning_backends AS pins,
       lpi_page_role(c.oid::regclass, b.relblocknumber) AS role
FROM pg_buffercache AS b
JOIN pg_class AS c ON c.relfilenode = b.relfilenode
WHERE b.pinning_backends > 0
  AND b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND c.relname LIKE 'lpi\_insert%';
