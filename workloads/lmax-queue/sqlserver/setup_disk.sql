-- The disk-based baselines (written for this book from the article's description).
-- lmax_disk_queue: the naive queue; producers insert at the end of an
-- ascending key, consumers delete the oldest row and OUTPUT it, so both ends
-- of the index are hot: the "last page problem storm".
-- lmax_disk_ring: fixed slots updated in place, the slot taken from a
-- SEQUENCE object, whose generator is protected by the
-- METADATA_SEQUENCE_GENERATOR latch.  The leading key column spreads
-- neighbouring slots over different pages, the article's cure for PAGELATCH waits.
DROP PROCEDURE IF EXISTS dbo.lmax_disk_push_loop;
DROP PROCEDURE IF EXISTS dbo.lmax_disk_ring_loop;
DROP TABLE IF EXISTS dbo.lmax_disk_queue;
DROP TABLE IF EXISTS dbo.lmax_disk_ring;
DROP SEQUENCE IF EXISTS dbo.lmax_disk_seq;
GO
CREATE SEQUENCE dbo.lmax_disk_seq AS bigint START WITH 0 INCREMENT BY 1;
GO
CREATE TABLE dbo.lmax_disk_queue (
    id        bigint IDENTITY(1, 1) NOT NULL,
    pushed_at datetime2 NOT NULL,
    message   char(300) NOT NULL,
    CONSTRAINT pk_lmax_disk_queue PRIMARY KEY CLUSTERED (id)
);
GO
CREATE TABLE dbo.lmax_disk_ring (
    spread          tinyint   NOT NULL,
    slot            bigint    NOT NULL,
    message_id      bigint    NULL,
    pushed_at       datetime2 NOT NULL,
    message         char(300) NOT NULL,
    reference_count int       NOT NULL,
    CONSTRAINT pk_lmax_disk_ring PRIMARY KEY CLUSTERED (spread, slot)
);
GO
-- Pre-create every slot; the parameter is the queue's size.
DECLARE @queue_size bigint = ?;
INSERT INTO dbo.lmax_disk_ring (spread, slot, message_id, pushed_at, message, reference_count)
SELECT n % 10, n, NULL, SYSDATETIME(), '', 0
FROM (SELECT TOP (@queue_size) ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) - 1 AS n
      FROM sys.all_columns AS a CROSS JOIN sys.all_columns AS b) AS slots;
GO
CREATE PROCEDURE dbo.lmax_disk_push_loop @count int, @queue_size bigint
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @i int = 0;
    WHILE @i < @count
    BEGIN
        INSERT INTO dbo.lmax_disk_queue (pushed_at, message) VALUES (SYSDATETIME(), 'Hello World');
        SET @i = @i + 1;
    END;
END;
GO
CREATE PROCEDURE dbo.lmax_disk_ring_loop @count int, @queue_size bigint
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @i int = 0, @seq bigint, @slot bigint;
    WHILE @i < @count
    BEGIN
        SET @seq = NEXT VALUE FOR dbo.lmax_disk_seq;
        SET @slot = @seq % @queue_size;
        UPDATE dbo.lmax_disk_ring
        SET pushed_at = SYSDATETIME(), message = 'Hello World', message_id = @seq,
            reference_count = reference_count + 1
        WHERE spread = @slot % 10 AND slot = @slot;
        SET @i = @i + 1;
    END;
END;
