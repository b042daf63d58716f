INSERT INTO lpi_insert (payload) VALUES ('row payload: thirty-two bytes ..');
