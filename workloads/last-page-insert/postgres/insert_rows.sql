CALL lpi_insert_rows(?);
