-- One row per call; the key comes from IDENTITY.
INSERT INTO dbo.{{table}} (col1) VALUES (REPLICATE('x', 32));
