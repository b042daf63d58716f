-- Between runs: every slot free again, the identity table emptied.
-- Interpreted T-SQL on memory-optimized tables needs the SNAPSHOT table hint.
UPDATE dbo.lmax_ring WITH (SNAPSHOT) SET reference_count = 0, message_id = NULL;
DELETE FROM dbo.lmax_sequence WITH (SNAPSHOT);
