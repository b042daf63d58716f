-- The options the guard reads before changing them, for the current database.
SELECT
    d.recovery_model_desc,
    d.delayed_durability_desc,
    d.is_read_committed_snapshot_on,
    d.snapshot_isolation_state_desc
FROM sys.databases AS d
WHERE d.database_id = DB_ID();
