"""The Extended Events wait session: its T-SQL parses, it is a guarded server change, its ring buffer is read."""
import pytest
from tsql_parse import assert_parses

from contention_book.harness import sqlserver_xevents as xe
from contention_book.harness.guard import ServerChangeNotAllowed, StateGuard

# A ring_buffer document of the shape SQL Server returns (made here; two waits of session 55, one idle wait).
RING = """<RingBufferTarget truncated="0" processingTime="3" totalEventsProcessed="3" eventCount="3"
 droppedCount="0" memoryUsed="1024">
<event name="wait_info" package="sqlos" timestamp="2026-11-25T06:00:00.100Z">
 <data name="wait_type"><type name="wait_types" package="sqlos"/><value>66</value><text>PAGELATCH_EX</text></data>
 <data name="opcode"><value>1</value><text>End</text></data>
 <data name="duration"><value>12</value></data><data name="signal_duration"><value>1</value></data>
 <action name="session_id" package="sqlserver"><value>55</value></action>
</event>
<event name="wait_info" package="sqlos" timestamp="2026-11-25T06:00:00.200Z">
 <data name="wait_type"><value>66</value><text>PAGELATCH_EX</text></data>
 <data name="duration"><value>8</value></data><data name="signal_duration"><value>0</value></data>
 <action name="session_id" package="sqlserver"><value>55</value></action>
</event>
<event name="wait_info" package="sqlos" timestamp="2026-11-25T06:00:00.300Z">
 <data name="wait_type"><value>1</value><text>WRITELOG</text></data>
 <data name="duration"><value>5</value></data><data name="signal_duration"><value>0</value></data>
 <action name="session_id" package="sqlserver"><value>56</value></action>
</event>
</RingBufferTarget>"""


def test_statements_parse_and_name_only_the_runs_sessions():
    name = xe.session_name(4242)
    create, start = xe.create_statements(name, [56, 55, 55])
    # The documented syntax takes a list, SET { target_parameter_name = <value> [ ,...n ] } (CREATE EVENT
    # SESSION page); the sqlfluff grammar takes one parameter only, so each is parsed on its own.
    assert "SET max_events_limit = (1000000), max_memory = (16384)" in create
    for one in ("SET max_events_limit = (1000000)", "SET max_memory = (16384)"):
        assert_parses(create.replace("SET max_events_limit = (1000000), max_memory = (16384)", one),
                      "CREATE EVENT SESSION")
    assert_parses(start, "ALTER EVENT SESSION")
    assert_parses(xe.drop_statements(name)[0], "DROP EVENT SESSION")
    assert_parses(xe.read_statement(name), "ring buffer read")
    assert "[sqlserver].[session_id] = (55) OR [sqlserver].[session_id] = (56)" in create
    assert "[opcode] = (1)" in create and "STARTUP_STATE = OFF" in create


def test_bad_names_and_sessions_are_refused():
    with pytest.raises(ValueError, match="expected contention_book_waits_"):
        xe.create_statements("x]; DROP LOGIN sa; --", [55])
    with pytest.raises(ValueError, match="at least one session_id"):
        xe.create_statements(xe.session_name(1), [])
    with pytest.raises(ValueError, match="1 to 32767"):
        xe.create_statements(xe.session_name(1), [0])


class _Conn:
    """Enough of a pyodbc connection for the guard: remembers what ran."""

    def __init__(self, log, exists=False):
        self.log, self.exists = log, exists

    def cursor(self):
        return self

    def execute(self, sql, *args):
        self.log.append(sql)
        return self

    def fetchone(self):
        return (1 if self.exists else 0,)

    def nextset(self):
        return False

    def close(self):
        pass


def test_the_session_is_a_server_change_opt_in_and_dropped_on_every_exit():
    ran = []
    change = xe.change(xe.session_name(7), [55])
    with pytest.raises(ServerChangeNotAllowed):
        with StateGuard(lambda db: _Conn(ran), [change], log=lambda *_: None):
            pass
    assert not ran  # nothing ran without the opt-in
    with pytest.raises(KeyboardInterrupt):
        with StateGuard(lambda db: _Conn(ran), [xe.change(xe.session_name(7), [55])], allow_server_changes=True,
                        log=lambda *_: None):
            raise KeyboardInterrupt
    assert any(s.startswith("CREATE EVENT SESSION") for s in ran)
    assert "DROP EVENT SESSION [contention_book_waits_7] ON SERVER;" in ran[-1]


class _CutShort(_Conn):
    """The server creates the session, then the client is interrupted before it hears back (a signal mid-call)."""

    def execute(self, sql, *args):
        out = super().execute(sql, *args)
        if sql.startswith("CREATE EVENT SESSION"):
            raise KeyboardInterrupt
        return out


def test_a_create_cut_short_by_a_signal_is_still_dropped():
    ran = []
    with pytest.raises(KeyboardInterrupt):
        with StateGuard(lambda db: _CutShort(ran), [xe.change(xe.session_name(7), [55])], allow_server_changes=True,
                        log=lambda *_: None, retry_wait_s=0):
            pass
    assert ran[-2].startswith("CREATE EVENT SESSION")
    assert "DROP EVENT SESSION [contention_book_waits_7] ON SERVER;" in ran[-1]


def test_an_existing_session_of_that_name_is_not_taken_over():
    with pytest.raises(RuntimeError, match="already exists"):
        with StateGuard(lambda db: _Conn([], exists=True), [xe.change(xe.session_name(7), [55])],
                        allow_server_changes=True, log=lambda *_: None):
            pass


def test_ring_buffer_waits_and_shares():
    frame, counters = xe.parse_ring_buffer(RING)
    assert counters["droppedCount"] == 0 and counters["totalEventsProcessed"] == 3
    assert list(frame["wait_type"]) == ["PAGELATCH_EX", "PAGELATCH_EX", "WRITELOG"]
    shares = xe.shares(frame).set_index("wait")
    assert shares.loc["PAGELATCH_EX", "waits"] == 2 and shares.loc["PAGELATCH_EX", "wait_ms"] == 20
    assert shares.loc["PAGELATCH_EX", "share"] == pytest.approx(0.8)
    with pytest.raises(ValueError, match="expected <RingBufferTarget>"):
        xe.parse_ring_buffer("<Other/>")
    with pytest.raises(ValueError, match="expected data wait_type"):
        xe.parse_ring_buffer("<RingBufferTarget><event timestamp='t'><data name='duration'><value>1</value></data>"
                             "</event></RingBufferTarget>")
