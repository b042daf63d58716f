-- Server-side loops: one CALL pushes (or pops) several messages, so a run measures the
-- queue's design rather than one client round trip per message.  Each message is still
-- its own transaction (COMMIT inside the loop), as in the one-statement-per-call path and
-- the article's natively compiled whole loop (v3).  Needs PostgreSQL 11 or later.
-- Tables and the sequence are looked up when a loop first runs, so this file can be
-- created after either setup script.

-- Push p_pushes messages into the ring: next sequence value, overwrite its slot in place.
CREATE OR REPLACE PROCEDURE lmax_push_ring_loop(p_message text, p_size bigint, p_pushes integer)
LANGUAGE plpgsql AS $$
DECLARE
    s bigint;
BEGIN
    FOR i IN 1 .. p_pushes LOOP
        s := nextval('lmax_seq');
        UPDATE lmax_ring
        SET message_id = s, pushed_at = clock_timestamp(), message = p_message,
            reference_count = reference_count + 1
        WHERE slot = s % p_size;
        COMMIT;
    END LOOP;
END
$$;

-- Push p_pushes messages onto the insert/delete queue.
CREATE OR REPLACE PROCEDURE lmax_push_queue_loop(p_message text, p_pushes integer)
LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. p_pushes LOOP
        INSERT INTO lmax_queue (pushed_at, message) VALUES (clock_timestamp(), p_message);
        COMMIT;
    END LOOP;
END
$$;

-- Pop up to p_pops messages, each in its own transaction; stop at the first pop that finds
-- nothing (an empty queue, or a naive consumer that lost the race for the oldest row).
-- Returns the messages' ages in seconds, comma-separated, and whether the last pop missed.
CREATE OR REPLACE PROCEDURE lmax_pop_loop(p_pops integer, p_skip_locked boolean,
                                          INOUT ages text DEFAULT NULL, INOUT missed boolean DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
    age double precision;
    got double precision[] := '{}';
BEGIN
    missed := false;
    FOR i IN 1 .. p_pops LOOP
        age := NULL;
        IF p_skip_locked THEN
            DELETE FROM lmax_queue
            WHERE id = (SELECT id FROM lmax_queue ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
            RETURNING extract(epoch FROM clock_timestamp() - pushed_at) INTO age;
        ELSE
            DELETE FROM lmax_queue
            WHERE id = (SELECT min(id) FROM lmax_queue)
            RETURNING extract(epoch FROM clock_timestamp() - pushed_at) INTO age;
        END IF;
        COMMIT;
        IF age IS NULL THEN
            missed := true;
            EXIT;
        END IF;
        got := got || age;
    END LOOP;
    ages := array_to_string(got, ',');
END
$$;

-- Pop up to p_pops messages off the ring (the loop form of pop_ring.sql), each its own
-- transaction.  ages: their ages in seconds; missed: the ring ran empty; lost: messages a
-- producer overwrote before any consumer read them.
CREATE OR REPLACE PROCEDURE lmax_pop_ring_loop(p_pops integer, p_size bigint,
                                               INOUT ages text DEFAULT NULL, INOUT missed boolean DEFAULT NULL,
                                               INOUT lost integer DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
    seq bigint;
    id bigint;
    at timestamptz;
    got double precision[] := '{}';
BEGIN
    missed := false;
    lost := 0;
    FOR i IN 1 .. p_pops LOOP
        seq := NULL;
        UPDATE lmax_ring_read AS c
        SET next = c.next + 1
        FROM lmax_ring AS r
        WHERE c.id = 1 AND r.slot = c.next % p_size AND r.message_id >= c.next
        RETURNING c.next - 1, r.message_id, r.pushed_at INTO seq, id, at;
        COMMIT;
        IF seq IS NULL THEN
            missed := true;
            EXIT;
        END IF;
        IF id = seq THEN
            got := got || extract(epoch FROM clock_timestamp() - at)::double precision;
        ELSE
            lost := lost + 1;
        END IF;
    END LOOP;
    ages := array_to_string(got, ',');
END
$$;
