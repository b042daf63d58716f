-- Rows in the test table (all partitions), counted before and after every measured point: the
-- rows the point inserted must be exactly the rows that appeared.
SELECT count(*) AS row_count FROM lpi_insert;
