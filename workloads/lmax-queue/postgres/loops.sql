-- Server-side loops: one CALL pushes (or pops) several messages, so a run measures the
-- queue's design rather than one client round trip per message.  Each message is still
-- its own transaction (COMMIT inside the loop), as in the one-statement-per-call path and
-- the article's version 2 (one atomic block per message); the article's version 3 ran
-- its whole loop as one atomic block, which has no analogue here.  Needs PostgreSQL 11.
-- Tables and the sequence are looked up when a loop first runs, so this file can be
-- created after either setup script.
--
-- Back-off inside the server: a consumer that finds nothing (or a producer that finds the
-- ring full) rolls back, waits p_backoff seconds with pg_sleep (the wait event
-- Timeout:PgSleep, not a client round trip) and tries again in the same call.
-- pg_sleep waits whole milliseconds at least (it rounds its timeout up).
-- Budget: a call ends once it has run p_budget seconds, after the message it is on or
-- instead of its next wait, even if it has not done all its messages; so a call is over
-- soon after the driver's window ends, whatever the design's speed.  p_budget 0: a call
-- returns at its first miss (and after its first message).

-- Pacing (the pushes only): with p_interval above 0 a producer pushes on a schedule, one
-- message every p_interval seconds, the call's first message due p_lead seconds after the
-- call starts (negative: overdue).  The client keeps the schedule across calls (it knows
-- how many messages it has pushed since the schedule began), so a run is open loop: the
-- producer does not wait for its consumers, it only never runs ahead of its schedule.  An
-- overdue message goes at once; one due at least 1 ms ahead waits with pg_sleep (which
-- waits whole milliseconds), so messages leave in small bursts at most 1 ms apart.
-- p_interval 0 (the default): as fast as the design allows.

-- The signatures before the back-off moved into the server, and before the pacing: dropped,
-- so a database that holds them has one procedure per name and every CALL below resolves to
-- this file's.
DROP PROCEDURE IF EXISTS lmax_push_ring_loop(text, bigint, integer, integer, boolean);
DROP PROCEDURE IF EXISTS lmax_pop_loop(integer, boolean, text, boolean);
DROP PROCEDURE IF EXISTS lmax_pop_ring_loop(integer, bigint, text, boolean, integer);
DROP PROCEDURE IF EXISTS lmax_push_queue_loop(text, integer);
DROP PROCEDURE IF EXISTS lmax_push_ring_loop(text, bigint, integer, double precision, double precision,
                                             integer, integer);
DROP PROCEDURE IF EXISTS lmax_push_queue_loop(text, integer, double precision, integer);


-- Push up to p_pushes messages into the ring, each its own transaction: lock the producers'
-- cursor, check the slot it names is free (the consumers have taken the message a lap
-- before), write the slot, advance the cursor, commit.  Claim and publish commit together,
-- so no claimed sequence is ever left unwritten.  A full ring writes nothing: the producer
-- rolls back (releasing the cursor), backs off and looks again, as a Disruptor producer
-- waits for a free slot.  pushed: the messages committed; full_polls: the looks that found
-- the ring full.
CREATE OR REPLACE PROCEDURE lmax_push_ring_loop(p_message text, p_size bigint, p_pushes integer,
                                                p_backoff double precision, p_budget double precision,
                                                INOUT pushed integer DEFAULT NULL,
                                                INOUT full_polls integer DEFAULT NULL,
                                                p_interval double precision DEFAULT 0,
                                                p_lead double precision DEFAULT 0)
LANGUAGE plpgsql AS $$
DECLARE
    w bigint;
    r bigint;
    ahead double precision;
    first_due timestamptz := clock_timestamp() + make_interval(secs => p_lead);
    deadline timestamptz := clock_timestamp() + make_interval(secs => p_budget);
BEGIN
    pushed := 0;
    full_polls := 0;
    WHILE pushed < p_pushes LOOP
        IF p_interval > 0 THEN
            ahead := extract(epoch FROM first_due - clock_timestamp()) + pushed * p_interval;
            IF ahead >= 0.001 THEN
                EXIT WHEN pushed > 0 AND clock_timestamp() + make_interval(secs => ahead) >= deadline;
                PERFORM pg_sleep(ahead);
            END IF;
        END IF;
        SELECT next INTO w FROM lmax_ring_write WHERE id = 1 FOR UPDATE;
        SELECT next INTO r FROM lmax_ring_read WHERE id = 1;
        IF w >= r + p_size THEN
            ROLLBACK;
            full_polls := full_polls + 1;
            EXIT WHEN clock_timestamp() >= deadline;
            PERFORM pg_sleep(p_backoff);
            CONTINUE;
        END IF;
        UPDATE lmax_ring
        SET message_id = w, pushed_at = clock_timestamp(), message = p_message,
            reference_count = reference_count + 1
        WHERE slot = w % p_size;
        UPDATE lmax_ring_write SET next = w + 1 WHERE id = 1;
        COMMIT;
        pushed := pushed + 1;
        EXIT WHEN clock_timestamp() >= deadline;
    END LOOP;
END
$$;

-- Push up to p_pushes messages onto the insert/delete queue, each its own transaction (the
-- queue is never full: no back-off).  pushed: the messages committed.
CREATE OR REPLACE PROCEDURE lmax_push_queue_loop(p_message text, p_pushes integer, p_budget double precision,
                                                 INOUT pushed integer DEFAULT NULL,
                                                 p_interval double precision DEFAULT 0,
                                                 p_lead double precision DEFAULT 0)
LANGUAGE plpgsql AS $$
DECLARE
    ahead double precision;
    first_due timestamptz := clock_timestamp() + make_interval(secs => p_lead);
    deadline timestamptz := clock_timestamp() + make_interval(secs => p_budget);
BEGIN
    pushed := 0;
    WHILE pushed < p_pushes LOOP
        IF p_interval > 0 THEN
            ahead := extract(epoch FROM first_due - clock_timestamp()) + pushed * p_interval;
            IF ahead >= 0.001 THEN
                EXIT WHEN pushed > 0 AND clock_timestamp() + make_interval(secs => ahead) >= deadline;
                PERFORM pg_sleep(ahead);
            END IF;
        END IF;
        INSERT INTO lmax_queue (pushed_at, message) VALUES (clock_timestamp(), p_message);
        COMMIT;
        pushed := pushed + 1;
        EXIT WHEN clock_timestamp() >= deadline;
    END LOOP;
END
$$;

-- Pop up to p_pops messages, each in its own transaction.  A pop that finds nothing (an
-- empty queue, or a naive consumer that lost the race for the oldest row) backs off and
-- pops again.  ages: the messages' ages in seconds,
-- comma-separated; empty_polls: the pops that found nothing.
CREATE OR REPLACE PROCEDURE lmax_pop_loop(p_pops integer, p_skip_locked boolean,
                                          p_backoff double precision, p_budget double precision,
                                          INOUT ages text DEFAULT NULL, INOUT empty_polls integer DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
    age double precision;
    got double precision[] := '{}';
    deadline timestamptz := clock_timestamp() + make_interval(secs => p_budget);
BEGIN
    empty_polls := 0;
    WHILE cardinality(got) < p_pops LOOP
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
            empty_polls := empty_polls + 1;
            EXIT WHEN clock_timestamp() >= deadline;
            PERFORM pg_sleep(p_backoff);
            CONTINUE;
        END IF;
        got := got || age;
        EXIT WHEN clock_timestamp() >= deadline;
    END LOOP;
    ages := array_to_string(got, ',');
END
$$;

-- Pop up to p_pops messages off the ring, each its own transaction: lock the consumers'
-- cursor (consumers share it, as the Disruptor's work-sharing consumers share a sequence),
-- read the slot it names, and if a producer has published that sequence, advance the
-- cursor and commit.  Locking the cursor first means a consumer that waited for another
-- one re-reads the advanced cursor, never a stale slot.  An empty ring: roll back
-- (releasing the cursor), back off and look again.  ages: the
-- messages' ages in seconds; empty_polls: the looks that found the ring empty; lost: slots
-- found overwritten by a later lap (a producer that broke the gating; zero unless the
-- design is broken).
CREATE OR REPLACE PROCEDURE lmax_pop_ring_loop(p_pops integer, p_size bigint,
                                               p_backoff double precision, p_budget double precision,
                                               INOUT ages text DEFAULT NULL, INOUT empty_polls integer DEFAULT NULL,
                                               INOUT lost integer DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
    mid bigint;
    at timestamptz;
    got double precision[] := '{}';
    deadline timestamptz := clock_timestamp() + make_interval(secs => p_budget);
BEGIN
    empty_polls := 0;
    lost := 0;
    WHILE cardinality(got) + lost < p_pops LOOP
        SELECT c.next INTO n FROM lmax_ring_read AS c WHERE c.id = 1 FOR UPDATE;
        SELECT r.message_id, r.pushed_at INTO mid, at FROM lmax_ring AS r WHERE r.slot = n % p_size;
        IF mid IS NULL OR mid < n THEN
            ROLLBACK;
            empty_polls := empty_polls + 1;
            EXIT WHEN clock_timestamp() >= deadline;
            PERFORM pg_sleep(p_backoff);
            CONTINUE;
        END IF;
        UPDATE lmax_ring_read SET next = n + 1 WHERE id = 1;
        COMMIT;
        IF mid = n THEN
            got := got || extract(epoch FROM clock_timestamp() - at)::double precision;
        ELSE
            lost := lost + 1;
        END IF;
        EXIT WHEN clock_timestamp() >= deadline;
    END LOOP;
    ages := array_to_string(got, ',');
END
$$;
