-- Tasks waiting for a page latch on a page of this database (the parameter is '<db_id>:%').
SELECT wt.session_id, wt.wait_type, wt.wait_duration_ms, wt.resource_description
FROM sys.dm_os_waiting_tasks AS wt
WHERE wt.wait_type LIKE N'PAGELATCH[_]%'
  AND wt.resource_description LIKE ?;
