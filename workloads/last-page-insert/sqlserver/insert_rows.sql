-- The same single-row insert as a server-side loop: one call inserts the bound number of
-- rows, each in its own autocommit transaction, so no client round trip sits between rows.
SET NOCOUNT ON;
DECLARE @todo int = ?;
DECLARE @done int = 0;
WHILE @done < @todo
BEGIN
    INSERT INTO dbo.{{table}} (col1) VALUES (REPLICATE('x', 32));
    SET @done = @done + 1;
END;
