-- Keep autovacuum off the test table for this run, so only the VACUUM control vacuums it mid-loop.  A storage
-- parameter of the run's own table: setup.sql drops and re-creates ghost_test for every run, in the harness's own
-- database, so the setting goes with the table; no server setting changes.
ALTER TABLE ghost_test SET (autovacuum_enabled = off);
