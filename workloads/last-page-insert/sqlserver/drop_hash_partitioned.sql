-- Remove the hash-partitioned table, then its partition scheme and function (in that order:
-- a scheme in use by a table, or a function in use by a scheme, cannot be dropped).
IF OBJECT_ID(N'dbo.lpi_hash', N'U') IS NOT NULL
    DROP TABLE dbo.lpi_hash;
GO
IF EXISTS (SELECT 1 FROM sys.partition_schemes WHERE name = N'lpi_ps_hash')
    DROP PARTITION SCHEME lpi_ps_hash;
GO
IF EXISTS (SELECT 1 FROM sys.partition_functions WHERE name = N'lpi_pf_hash')
    DROP PARTITION FUNCTION lpi_pf_hash;
GO
