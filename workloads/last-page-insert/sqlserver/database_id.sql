SELECT DB_ID() AS database_id;
