-- One driver call: a chunk of pushes by the variant's loop procedure.
-- Parameters: the pushes in the chunk, the queue's size.
EXEC dbo.{{procedure}} @count = ?, @queue_size = ?;
