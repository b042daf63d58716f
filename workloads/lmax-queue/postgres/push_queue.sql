-- One push onto the naive queue; the parameter is the message.
INSERT INTO lmax_queue (pushed_at, message) VALUES (clock_timestamp(), ?);
