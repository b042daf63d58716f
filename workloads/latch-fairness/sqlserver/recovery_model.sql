-- The recovery model of the current database (the guard restores it afterwards).
SELECT recovery_model_desc
FROM sys.databases
WHERE database_id = DB_ID();
