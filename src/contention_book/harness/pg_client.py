"""PostgreSQL through libpq (psycopg 3's binding), with the small pyodbc surface the harness uses.

Why: psqlODBC costs about twice pgbench's client CPU per call, and on a
small machine every client microsecond is taken from the server under test.
This client talks to libpq directly: each statement with parameters (and
each one run twice) becomes a server-side prepared statement, executed with
``PQexecPrepared``, the GIL released while it runs.

It keeps what the chapters rely on from pyodbc over psqlODBC: ``?``
parameters given positionally (``cur.execute(sql, a, b)``), ``execute``
returning the cursor, ``description``/``fetchone``/``fetchall``/``nextset``,
``cur.connection``, ``cancel``, ``autocommit`` (an implicit transaction when
off), errors whose ``args`` are ``(sqlstate, message)``, and values typed as
psqlODBC returns them (booleans as ``'1'``/``'0'``, json, arrays, uuids and
intervals as text, timestamps without a time zone).
"""
from __future__ import annotations

import datetime as _dt
import re
import select
from decimal import Decimal
from typing import Any, Iterable, Sequence

CLIENTS = ("odbc", "psycopg")
CLIENT_ENV = "CONTENTION_BOOK_PG_CLIENT"
DEFAULT_CLIENT = "psycopg"  # PostgreSQL's client unless CLIENT_ENV (or Target.client) says "odbc"
MAX_STATEMENTS = 500  # statement texts remembered (and prepared) per connection; beyond, each runs unprepared

# ODBC connection-string keys (psqlODBC's spellings, any case) -> libpq keywords
ODBC_TO_LIBPQ = {"server": "host", "servername": "host", "host": "host", "port": "port", "database": "dbname",
                 "uid": "user", "username": "user", "user": "user", "pwd": "password", "password": "password",
                 "sslmode": "sslmode", "connect_timeout": "connect_timeout"}
# keys that only configure psqlODBC itself, or the DSN's driver: nothing to pass on
ODBC_ONLY = {"driver", "dsn", "commlog", "debug", "usedeclarefetch", "fetch", "readonly", "protocol", "showoidcolumn",
             "fakeoidindex", "rowversioning", "showsystemtables", "boolsaschar", "maxvarcharsize",
             "maxlongvarcharsize", "usesserversideprepare", "useserversideprepare", "byteaaslongvarbinary"}


class Error(Exception):
    """A failed call: ``args`` are ``(sqlstate, message)``, as pyodbc gives them (harness.driver.classify reads it)."""


def conninfo(pairs: Iterable[tuple[str, str]], timeout: int | None = None) -> bytes:
    """A libpq conninfo string from an ODBC connection string's pairs; unknown keys are refused by name."""
    out: dict[str, str] = {}
    for key, value in pairs:
        low = key.strip().lower()
        if low in ODBC_TO_LIBPQ:
            out.setdefault(ODBC_TO_LIBPQ[low], value)  # the first key wins, as in ODBC
        elif low not in ODBC_ONLY:
            raise Error("08001", f"connection string key {key!r}: the psycopg client does not know it (expected "
                                 f"one of {', '.join(sorted(ODBC_TO_LIBPQ))}); use the ODBC client for this target "
                                 f"({CLIENT_ENV}=odbc)")
    if timeout and "connect_timeout" not in out:
        out["connect_timeout"] = str(int(timeout))
    out["client_encoding"] = "UTF8"

    def quote(v: str) -> str:
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return " ".join(f"{k}={quote(v)}" for k, v in out.items()).encode()


# -- placeholders --------------------------------------------------------------
_TOKENS = re.compile(r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|--[^\n]*|/\*.*?\*/|(\$[A-Za-z_0-9]*\$).*?\1|(\?)""", re.S)


def numbered(sql: str) -> tuple[str, int]:
    """``?`` placeholders outside literals, identifiers, comments and dollar quotes as ``$1, $2, ...``."""
    count = 0

    def sub(m: re.Match) -> str:
        nonlocal count
        if m.group(2) is None:
            return m.group(0)
        count += 1
        return f"${count}"
    return _TOKENS.sub(sub, sql), count


# -- values ----------------------------------------------------------------------
def _dump(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return b"t" if value else b"f"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return b"\\x" + bytes(value).hex().encode()
    if isinstance(value, (_dt.date, _dt.time)):
        return value.isoformat().encode()
    if isinstance(value, float):
        return repr(value).encode()
    return str(value).encode()


def _oid(value: Any) -> int:
    """A parameter's type (0: let the server infer it) when the text alone does not tell the server."""
    for kind, oid in ((bool, 16), (int, 20), (float, 701), (Decimal, 1700), (str, 25), ((bytes, bytearray), 17),
                      (_dt.datetime, 1114), (_dt.date, 1082), (_dt.time, 1083)):
        if isinstance(value, kind):
            return oid
    return 0


def _state(res) -> bytes:
    from psycopg import pq

    return res.error_field(pq.DiagnosticField.SQLSTATE) or b""


def _timestamp(data: bytes):
    try:
        value = _dt.datetime.fromisoformat(data.decode())
    except ValueError:  # infinity, BC dates: as text, as psqlODBC gives them
        return data.decode()
    if value.tzinfo is not None:
        value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return value


def _text_or(convert):
    def load(data: bytes):
        try:
            return convert(data.decode())
        except ValueError:
            return data.decode()
    return load


_LOADERS = {
    16: lambda b: "1" if b == b"t" else "0",  # bool, as psqlODBC (BoolsAsChar) returns it
    17: lambda b: bytes.fromhex(b[2:].decode()) if b[:2] == b"\\x" else b,  # bytea
    20: int, 21: int, 23: int, 26: int, 28: int,  # int8 int2 int4 oid xid
    700: float, 701: float, 1700: _text_or(Decimal),
    1082: _text_or(_dt.date.fromisoformat), 1083: _text_or(_dt.time.fromisoformat),
    1114: _timestamp, 1184: _timestamp,
}


def _text(data: bytes) -> str:
    return data.decode()


def rows(res) -> list[tuple]:
    """A result's rows, each value typed as psqlODBC would return it (see _LOADERS)."""
    loaders = [_LOADERS.get(res.ftype(i), _text) for i in range(res.nfields)]
    get = res.get_value
    return [tuple(None if (v := get(r, c)) is None else f(v) for c, f in enumerate(loaders))
            for r in range(res.ntuples)]


def first_row(res) -> tuple | None:
    """The first row of a result that has rows (typed as :func:`rows` types them), else None."""
    if res is None or res.status != 2 or res.ntuples == 0:  # TUPLES_OK
        return None
    loaders = [_LOADERS.get(res.ftype(i), _text) for i in range(res.nfields)]
    return tuple(None if (v := res.get_value(0, c)) is None else f(v) for c, f in enumerate(loaders))


def dump(params: Sequence[Any]) -> list[bytes | None] | None:
    """Parameter values as libpq takes them (text format), None for none."""
    return [_dump(p) for p in params] if params else None


# -- cursor and connection --------------------------------------------------------------
class Cursor:
    """One statement's results at a time; ``execute`` returns the cursor, as pyodbc's does."""

    arraysize = 1

    def __init__(self, connection: "Connection"):
        self.connection = connection
        self._results: list = []
        self._index = 0
        self._row = 0
        self._rows: list | None = None

    # results
    def _current(self):
        return self._results[self._index] if self._index < len(self._results) else None

    @property
    def description(self):
        res = self._current()
        if res is None or res.status != 2:  # TUPLES_OK
            return None
        return [(res.fname(i).decode(), res.ftype(i), None, None, None, None, None) for i in range(res.nfields)]

    @property
    def rowcount(self) -> int:
        res = self._current()
        if res is None:
            return -1
        n = res.command_tuples
        return -1 if n is None else n

    def _load(self):
        if self._rows is None:
            res = self._current()
            if res is None or res.status != 2:
                raise Error("HY010", "no results: the previous statement returned no rows")
            self._rows = rows(res)
        return self._rows

    def fetchone(self):
        rows = self._load()
        if self._row >= len(rows):
            return None
        self._row += 1
        return rows[self._row - 1]

    def fetchmany(self, size: int | None = None):
        rows = self._load()
        n = size or self.arraysize
        out = rows[self._row:self._row + n]
        self._row += len(out)
        return out

    def fetchall(self):
        rows = self._load()
        out = rows[self._row:]
        self._row = len(rows)
        return out

    def __iter__(self):
        return iter(self.fetchall())

    def nextset(self) -> bool:
        if self._index + 1 >= len(self._results):
            self._index = len(self._results)
            return False
        self._index += 1
        self._row, self._rows = 0, None
        return True

    # statements
    def execute(self, sql: str, *params: Any) -> "Cursor":
        if len(params) == 1 and isinstance(params[0], (list, tuple)):
            params = tuple(params[0])  # pyodbc takes execute(sql, a, b) and execute(sql, (a, b)) alike
        self._results = self.connection._run(sql, params)
        self._index = self._row = 0
        self._rows = None
        return self

    def executemany(self, sql: str, seq: Iterable[Sequence[Any]]) -> None:
        for params in seq:
            self.execute(sql, *params)

    def cancel(self) -> None:
        self.connection.cancel()

    def close(self) -> None:
        self._results, self._rows = [], None


class Connection:
    """A libpq connection with pyodbc's autocommit, commit, rollback, cursor, cancel and close."""

    def __init__(self, pgconn, autocommit: bool = True):
        from psycopg import pq

        self.pgconn = pgconn
        self.autocommit = autocommit
        self._pq = pq
        self._cancel = pgconn.get_cancel()
        self._statements: dict[str, list] = {}  # sql -> [prepared name or None, $n text, runs]
        self._prepared = 0
        self.closed = False

    def cursor(self) -> Cursor:
        if self.closed:
            raise Error("08003", "the connection is closed")
        return Cursor(self)

    def execute(self, sql: str, *params: Any) -> Cursor:
        """A new cursor with the statement run on it, as pyodbc's ``Connection.execute``."""
        return self.cursor().execute(sql, *params)

    def _fail(self, res) -> Error:
        pq = self._pq
        if res is not None and res.status == pq.ExecStatus.FATAL_ERROR:
            state = (res.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode()
            message = (res.error_message or b"").decode("utf-8", "replace").strip()
        else:
            state = ""
            message = (self.pgconn.error_message or b"").decode("utf-8", "replace").strip() or "no result"
        if not state and self.pgconn.status != pq.ConnStatus.OK:
            # the connection is gone: libpq's own words carry no SQLSTATE, and PQexec* return only the last result,
            # so the server's FATAL (why it closed) is in the connection's message, read by driver.classify
            state = "08006"
            message = (self.pgconn.error_message or b"").decode("utf-8", "replace").strip() or message
        return Error(state or "HY000", f"[{state or 'HY000'}] {message}")

    def _check(self, res):
        if res is None or res.status not in (1, 2, 0):  # COMMAND_OK, TUPLES_OK, EMPTY_QUERY
            raise self._fail(res)
        return res

    def _begin(self) -> None:
        if not self.autocommit and self.pgconn.transaction_status == self._pq.TransactionStatus.IDLE:
            self._check(self.pgconn.exec_(b"BEGIN"))

    def prepared(self, sql: str, params: Sequence[Any]) -> bytes:
        """The name of a server-side prepared statement for ``sql`` on this connection (prepared now if it is
        not yet), for a caller that sends it itself (harness.pg_loop); ``params`` are a call's values, whose
        types the server is told where it cannot infer them.  A text that cannot be prepared is an error."""
        if self.closed:
            raise Error("08003", "the connection is closed")
        text, count = numbered(sql)
        if count != len(params):
            raise Error("07002", f"[07002] the statement has {count} parameter marker(s) but {len(params)} "
                                 "value(s) were given")
        entry = self._statements.setdefault(sql, [None, text.encode(), 0])
        if entry[0] is None:
            name = f"cb{self._prepared}".encode()
            res = self.pgconn.prepare(name, entry[1], None)
            if res.status != 1 and params and _state(res) in (b"42P18", b"42725"):
                res = self.pgconn.prepare(name, entry[1], [_oid(p) for p in params])
            if res.status != 1:
                raise self._fail(res)
            self._prepared += 1
            entry[0] = name
        return entry[0]

    def _run(self, sql: str, params: Sequence[Any]) -> list:
        if self.closed:
            raise Error("08003", "the connection is closed")
        entry = self._statements.get(sql)
        if entry is None:
            text, count = numbered(sql)
            if count != len(params):
                raise Error("07002", f"[07002] the statement has {count} parameter marker(s) but {len(params)} "
                                     "value(s) were given")
            entry = [None, text.encode(), 0]  # prepared name, text, runs (-1: cannot be prepared)
            if len(self._statements) < MAX_STATEMENTS:
                self._statements[sql] = entry
        name, text, runs = entry
        values = [_dump(p) for p in params] if params else None
        pg = self.pgconn
        try:
            self._begin()
            if name is None and runs >= 0 and (params or runs >= 1) and self._prepared < MAX_STATEMENTS:
                # parameters, or the second run of the same text: a server-side prepared statement from now on
                name = f"cb{self._prepared}".encode()
                res = pg.prepare(name, text, None)
                if res.status != 1 and params and _state(res) in (b"42P18", b"42725"):
                    # the server could not infer a parameter's type from the text alone: tell it, as psqlODBC does
                    res = pg.prepare(name, text, [_oid(p) for p in params])
                if res.status == 1:
                    self._prepared += 1
                    entry[0] = name
                elif params or _state(res) != b"42601":
                    raise self._fail(res)
                else:  # 42601: several statements cannot be one prepared statement; they run as a simple query
                    entry[2] = runs = -1
                    name = None
            if runs >= 0:
                entry[2] = runs + 1
            if name is not None:
                return [self._check(pg.exec_prepared(name, values, None))]
            if params:
                return [self._check(pg.exec_params(text, values, None))]
            return self._simple(text)
        except Error:
            raise
        except Exception:  # noqa: BLE001 - libpq could not send or read: the connection is gone
            raise self._fail(None) from None

    def _simple(self, text: bytes) -> list:
        """Simple query protocol: several statements in one text, each result kept (``nextset``)."""
        pg = self.pgconn
        pg.send_query(text)
        results, error = [], None
        while True:
            while pg.is_busy():  # wait outside the GIL (libpq's get_result would block holding it)
                select.select([pg.socket], [], [])
                pg.consume_input()
            if (res := pg.get_result()) is None:
                break
            if error is None and res.status not in (0, 1, 2):
                error = self._fail(res)
            results.append(res)
        if error is not None:
            raise error
        if not results:
            raise self._fail(None)
        return results

    def commit(self) -> None:
        if self.pgconn.transaction_status != self._pq.TransactionStatus.IDLE:
            self._check(self.pgconn.exec_(b"COMMIT"))

    def rollback(self) -> None:
        if self.pgconn.transaction_status != self._pq.TransactionStatus.IDLE:
            self._check(self.pgconn.exec_(b"ROLLBACK"))

    def cancel(self) -> None:
        """Ask the server to cancel the running statement (safe from another thread, as pyodbc's cancel)."""
        self._cancel.cancel()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.pgconn.finish()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def connect(pairs: Iterable[tuple[str, str]], autocommit: bool = True, timeout: int | None = 15) -> Connection:
    """Connect with libpq; a failure raises :class:`Error` with SQLSTATE 08001 and libpq's words."""
    from psycopg import pq

    pgconn = pq.PGconn.connect(conninfo(pairs, timeout))
    if pgconn.status != pq.ConnStatus.OK:
        message = (pgconn.error_message or b"").decode("utf-8", "replace").strip()
        pgconn.finish()
        raise Error("08001", f"[08001] {message}")
    return Connection(pgconn, autocommit=autocommit)


def describe() -> str:
    """Which client this is, for a recording's manifest: ``psycopg 3.3.9 (libpq 18.0, binary)``."""
    import psycopg
    from psycopg import pq

    v = pq.version()  # 180006 is 18.6; 90624 was 9.6.24
    minor = v % 100 if v >= 100000 else v // 100 % 100
    return f"psycopg {psycopg.__version__} (libpq {v // 10000}.{minor}, {pq.__impl__})"
