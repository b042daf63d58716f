-- The insert target: a wide row clustered (here: primary-key indexed) on a bigint key, as in the article.
DROP TABLE IF EXISTS logcache_insert;
CREATE TABLE logcache_insert (
    c1 bigint    NOT NULL PRIMARY KEY,
    c2 timestamp NULL,
    c3 char(111) NULL,
    c4 integer   NULL,
    c5 integer   NULL,
    c6 bigint    NULL
);

-- The ostress role: a procedure that commits each singleton insert on its own, like usp_Insert's
-- autocommitted INSERTs.  Keys start at p_base, which the caller derives from its session number.
CREATE OR REPLACE PROCEDURE logcache_insert_rows(p_base bigint, p_rows integer)
LANGUAGE plpgsql
AS $$
DECLARE
    i integer := 0;
BEGIN
    WHILE i < p_rows LOOP
        INSERT INTO logcache_insert (c1) VALUES (p_base + i);
        COMMIT;
        i := i + 1;
    END LOOP;
END
$$;
