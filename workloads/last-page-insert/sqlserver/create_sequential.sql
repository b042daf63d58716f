-- The hot last page: an ever-increasing int clustered primary key.  Every insert goes to
-- the rightmost leaf of the clustered index until that page is full.
IF OBJECT_ID(N'dbo.lpi_sequential', N'U') IS NOT NULL
    DROP TABLE dbo.lpi_sequential;
GO
CREATE TABLE dbo.lpi_sequential (
    ID   int IDENTITY(1, 1) NOT NULL,
    col1 varchar(50) NOT NULL,
    CONSTRAINT PK_lpi_sequential PRIMARY KEY CLUSTERED (ID)
);
GO
