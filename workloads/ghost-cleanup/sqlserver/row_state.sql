-- The accounting of a run: the key starts at 0 and each committed update adds 1, so the
-- key read back is the number of updates done; the table must still hold one row.
SET NOCOUNT ON;
SELECT updates_done = MAX(g.id), live_rows = COUNT_BIG(*) FROM dbo.GhostTest AS g;
