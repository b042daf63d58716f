-- One chunk of the update loop: @todo single-row key updates, each its own transaction,
-- committed with delayed durability so the log flush is not what we measure.
-- TOP (1) removes the Halloween-protection spool; TABLOCKX makes the per-row update
-- lock requests redundant (they are still requested, then found covered).
-- The client times each chunk, which gives the update-rate curve over the run.
SET NOCOUNT, XACT_ABORT ON;
DECLARE @todo integer = ?;
DECLARE @done integer = 0;
WHILE @done < @todo
BEGIN
    BEGIN TRANSACTION;
    UPDATE TOP (1) g
    SET g.id = g.id + 1
    FROM dbo.GhostTest AS g WITH (TABLOCKX);
    COMMIT TRANSACTION WITH (DELAYED_DURABILITY = ON);
    SET @done += 1;
END;
