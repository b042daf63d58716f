CALL ghost_update_chunk(?);
