-- Rows in the test table (all partitions), counted before and after every measured point: the
-- rows the point inserted must be exactly the rows that appeared.
SELECT COUNT_BIG(*) AS row_count FROM dbo.{{table}};
