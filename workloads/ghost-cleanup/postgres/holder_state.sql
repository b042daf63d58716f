-- What the holding session pins (one row, for the backend whose pid is the parameter):
-- backend_xmin is the oldest transaction its snapshot can see (NULL: it holds no
-- snapshot); backend_xid is its own transaction id (NULL: it has written nothing).
SELECT
    state,
    CASE WHEN backend_xmin IS NULL THEN 0 ELSE 1 END AS xmin_held,
    CASE WHEN backend_xid IS NULL THEN 0 ELSE 1 END AS xid_held,
    age(backend_xmin) AS xmin_age
FROM pg_stat_activity
WHERE pid = ?;
