-- Every entry of the primary-key index (pageinspect), by what its heap line pointer holds:
-- the live row, a dead line pointer, a tuple still stored (dead or live), or a free slot.
-- "killed" entries carry the LP_DEAD hint an index scan sets when it finds the tuple dead.
WITH leaf AS (
    SELECT b
    FROM generate_series(1, (pg_relation_size('ghost_test_pkey') / current_setting('block_size')::integer)::integer - 1) AS b
    WHERE (bt_page_stats('ghost_test_pkey', b)).type = 'l'
), entries AS (
    SELECT e.htid, e.dead
    FROM leaf, bt_page_items('ghost_test_pkey', leaf.b) AS e
    WHERE e.htid IS NOT NULL
), heap AS (
    SELECT format('(%s,%s)', p, i.lp)::tid AS tid, i.lp_flags
    FROM generate_series(0, (pg_relation_size('ghost_test') / current_setting('block_size')::integer)::integer - 1) AS p,
         heap_page_items(get_raw_page('ghost_test', p)) AS i
)
SELECT
    count(*) AS index_entries,
    count(*) FILTER (WHERE h.lp_flags = 3) AS entries_to_dead_pointers,
    count(*) FILTER (WHERE h.lp_flags = 1) AS entries_to_stored_tuples,
    count(*) FILTER (WHERE h.lp_flags IS NULL OR h.lp_flags = 0) AS entries_to_unused_pointers,
    count(*) FILTER (WHERE e.dead) AS entries_killed
FROM entries AS e
LEFT JOIN heap AS h ON h.tid = e.htid;
