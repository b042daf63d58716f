-- The ring buffer on In-Memory OLTP (written for this book from the article's description).
-- lmax_ring: one row per slot, pre-created, hash primary key on the slot.
-- lmax_sequence: an identity column on a memory-optimized table, the
-- non-blocking sequence: inserting a row and reading SCOPE_IDENTITY() takes
-- no latch, unlike a SEQUENCE object.  Its filler column is there because a natively
-- compiled module supports "INSERT VALUES (one row per statement) and INSERT ... SELECT",
-- not INSERT ... DEFAULT VALUES (https://learn.microsoft.com/sql/relational-databases/
-- in-memory-oltp/supported-features-for-natively-compiled-t-sql-modules).
DROP PROCEDURE IF EXISTS dbo.lmax_loop_v1;
DROP PROCEDURE IF EXISTS dbo.lmax_loop_v2;
DROP PROCEDURE IF EXISTS dbo.lmax_loop_v3;
DROP PROCEDURE IF EXISTS dbo.lmax_push_v1;
DROP PROCEDURE IF EXISTS dbo.lmax_push_v2;
DROP PROCEDURE IF EXISTS dbo.lmax_get_slot;
DROP TABLE IF EXISTS dbo.lmax_ring;
DROP TABLE IF EXISTS dbo.lmax_sequence;
GO
CREATE TABLE dbo.lmax_ring (
    slot            bigint    NOT NULL,
    message_id      bigint    NULL,
    pushed_at       datetime2 NOT NULL,
    message         char(300) COLLATE Latin1_General_100_BIN2 NOT NULL,
    reference_count int       NOT NULL,
    CONSTRAINT pk_lmax_ring PRIMARY KEY NONCLUSTERED HASH (slot) WITH (BUCKET_COUNT = 2097152)
) WITH (MEMORY_OPTIMIZED = ON, DURABILITY = SCHEMA_AND_DATA);
GO
CREATE TABLE dbo.lmax_sequence (
    id bigint IDENTITY(1, 1) NOT NULL,
    filler bit NOT NULL,
    CONSTRAINT pk_lmax_sequence PRIMARY KEY NONCLUSTERED HASH (id) WITH (BUCKET_COUNT = 524288)
) WITH (MEMORY_OPTIMIZED = ON, DURABILITY = SCHEMA_AND_DATA);
GO
-- Pre-create every slot; the parameter is the queue's size.
DECLARE @queue_size bigint = ?;
INSERT INTO dbo.lmax_ring (slot, message_id, pushed_at, message, reference_count)
SELECT TOP (@queue_size) ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) - 1, NULL, SYSDATETIME(), '', 0
FROM sys.all_columns AS a CROSS JOIN sys.all_columns AS b;
GO
-- v1, part 1: the next slot, from the identity table.
CREATE PROCEDURE dbo.lmax_get_slot @queue_size bigint, @slot bigint OUTPUT
WITH NATIVE_COMPILATION, SCHEMABINDING
AS BEGIN ATOMIC WITH (TRANSACTION ISOLATION LEVEL = SNAPSHOT, LANGUAGE = N'us_english')
    INSERT INTO dbo.lmax_sequence (filler) VALUES (0);
    SET @slot = CAST(SCOPE_IDENTITY() AS bigint) % @queue_size;
END;
GO
-- v1, part 2: write the message into a free slot (reference_count 0); @pushed = rows written.
CREATE PROCEDURE dbo.lmax_push_v1 @slot bigint, @pushed int OUTPUT
WITH NATIVE_COMPILATION, SCHEMABINDING
AS BEGIN ATOMIC WITH (TRANSACTION ISOLATION LEVEL = SNAPSHOT, LANGUAGE = N'us_english')
    UPDATE dbo.lmax_ring
    SET pushed_at = SYSDATETIME(), message = 'Hello World', message_id = @slot,
        reference_count = reference_count + 1
    WHERE slot = @slot AND reference_count = 0;
    SET @pushed = @@ROWCOUNT;
END;
GO
-- v1: an interpreted loop calling both natively compiled procedures per message.
-- The slot is taken in a transaction that is rolled back: identity values are
-- not given back, so the sequence table stays empty.  Stops early when a slot
-- is taken (the ring is full).
CREATE PROCEDURE dbo.lmax_loop_v1 @count int, @queue_size bigint
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @i int = 0, @slot bigint, @pushed int;
    WHILE @i < @count
    BEGIN
        BEGIN TRANSACTION;
        EXEC dbo.lmax_get_slot @queue_size, @slot OUTPUT;
        ROLLBACK TRANSACTION;
        EXEC dbo.lmax_push_v1 @slot, @pushed OUTPUT;
        IF @pushed = 0
            SET @i = @count;
        ELSE
            SET @i = @i + 1;
    END;
END;
GO
-- v2: the slot is taken inside the natively compiled push.
CREATE PROCEDURE dbo.lmax_push_v2 @queue_size bigint, @pushed int OUTPUT
WITH NATIVE_COMPILATION, SCHEMABINDING
AS BEGIN ATOMIC WITH (TRANSACTION ISOLATION LEVEL = SNAPSHOT, LANGUAGE = N'us_english')
    DECLARE @slot bigint;
    INSERT INTO dbo.lmax_sequence (filler) VALUES (0);
    SET @slot = CAST(SCOPE_IDENTITY() AS bigint) % @queue_size;
    UPDATE dbo.lmax_ring
    SET pushed_at = SYSDATETIME(), message = 'Hello World', message_id = @slot,
        reference_count = reference_count + 1
    WHERE slot = @slot AND reference_count = 0;
    SET @pushed = @@ROWCOUNT;
END;
GO
CREATE PROCEDURE dbo.lmax_loop_v2 @count int, @queue_size bigint
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @i int = 0, @pushed int;
    WHILE @i < @count
    BEGIN
        EXEC dbo.lmax_push_v2 @queue_size, @pushed OUTPUT;
        IF @pushed = 0
            SET @i = @count;
        ELSE
            SET @i = @i + 1;
    END;
END;
GO
-- v3: the whole loop natively compiled.  It is one atomic block: a write
-- conflict with another session aborts the whole loop, and nothing inside a
-- natively compiled procedure can catch that and retry.  One session only.
CREATE PROCEDURE dbo.lmax_loop_v3 @count int, @queue_size bigint
WITH NATIVE_COMPILATION, SCHEMABINDING
AS BEGIN ATOMIC WITH (TRANSACTION ISOLATION LEVEL = SNAPSHOT, LANGUAGE = N'us_english')
    DECLARE @i int = 0, @pushed int = 0;
    WHILE @i < @count
    BEGIN
        EXEC dbo.lmax_push_v2 @queue_size, @pushed OUTPUT;
        IF @pushed = 0
            SET @i = @count;
        ELSE
            SET @i = @i + 1;
    END;
END;
