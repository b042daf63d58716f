-- Every line pointer of the heap, by state (pageinspect): normal (a tuple, live or dead,
-- with its storage), redirect (HOT chains), dead (the tuple was pruned away but index
-- entries may still point here, so the pointer stays until VACUUM), unused (free to reuse).
SELECT
    count(*) FILTER (WHERE lp_flags = 1) AS lp_normal,
    count(*) FILTER (WHERE lp_flags = 2) AS lp_redirect,
    count(*) FILTER (WHERE lp_flags = 3) AS lp_dead,
    count(*) FILTER (WHERE lp_flags = 0) AS lp_unused,
    max(per_page) AS lp_max_per_page
FROM (
    SELECT p, i.lp_flags, count(*) OVER (PARTITION BY p) AS per_page
    FROM generate_series(0, (pg_relation_size('ghost_test') / current_setting('block_size')::integer)::integer - 1) AS p,
         heap_page_items(get_raw_page('ghost_test', p)) AS i
) AS items;
