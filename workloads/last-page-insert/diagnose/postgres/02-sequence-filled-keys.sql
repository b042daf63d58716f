-- B-tree indexes whose first column is filled from a sequence (an identity column,
-- or a DEFAULT nextval(...)): every insert into them goes to the rightmost leaf.
-- With the tables' insert counts since the statistics were reset, so the busiest
-- come first.
-- Sources: https://www.postgresql.org/docs/current/catalog-pg-index.html, https://www.postgresql.org/docs/current/catalog-pg-attribute.html (attidentity), https://www.postgresql.org/docs/current/catalog-pg-attrdef.html
SELECT n.nspname AS schema_name,
       t.relname AS table_name,
       ic.relname AS index_name,
       a.attname AS first_column,
       CASE WHEN a.attidentity <> '' THEN 'identity'
            ELSE 'default nextval' END AS filled_by,
       s.n_tup_ins AS rows_inserted,
       pg_size_pretty(pg_relation_size(ic.oid)) AS index_size
FROM pg_index AS x
JOIN pg_class AS ic ON ic.oid = x.indexrelid
JOIN pg_class AS t ON t.oid = x.indrelid
JOIN pg_namespace AS n ON n.oid = t.relnamespace
JOIN pg_am AS am ON am.oid = ic.relam AND am.amname = 'btree'
JOIN pg_attribute AS a ON a.attrelid = t.oid AND a.attnum = x.indkey[0]
LEFT JOIN pg_attrdef AS d ON d.adrelid = t.oid AND d.adnum = a.attnum
LEFT JOIN pg_stat_user_tables AS s ON s.relid = t.oid
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND (a.attidentity <> '' OR pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%')
ORDER BY s.n_tup_ins DESC NULLS LAST;
