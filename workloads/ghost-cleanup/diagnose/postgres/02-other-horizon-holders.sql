-- Besides sessions, replication slots and prepared transactions also hold the horizon back;
-- they survive disconnects and restarts, so look here when no session explains it.
-- Sources: https://www.postgresql.org/docs/current/view-pg-replication-slots.html and https://www.postgresql.org/docs/current/view-pg-prepared-xacts.html
SELECT 'replication slot' AS holder, slot_name AS name, xmin, catalog_xmin,
       age(xmin) AS xmin_age_in_transactions
FROM pg_replication_slots
WHERE xmin IS NOT NULL OR catalog_xmin IS NOT NULL
UNION ALL
SELECT 'prepared transaction', gid, transaction, NULL, age(transaction)
FROM pg_prepared_xacts
ORDER BY xmin_age_in_transactions DESC NULLS LAST;
