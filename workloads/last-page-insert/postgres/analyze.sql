ANALYZE lpi_insert;
