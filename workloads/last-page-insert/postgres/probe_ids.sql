-- Keys for the read-cost queries: one from the middle of the key range.
SELECT id FROM lpi_insert
WHERE id >= (SELECT min(id) / 2 + max(id) / 2 FROM lpi_insert)
ORDER BY id LIMIT 1;
