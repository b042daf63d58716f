"""The pyodbc surface the harness uses, answered by the simulator (tests/sqlserver_sim/server.py).

``connect("Driver={ODBC Driver 18 for SQL Server};Server=sim;SimState=/path/state.json;...")`` opens a
session on the simulated server whose state is in that file.  Errors are ``pyodbc.Error`` subclasses
with ``args == (sqlstate, message)`` as pyodbc raises them.

Driver behaviour followed: ODBC Driver 18 encrypts by default (Encrypt=yes) and then refuses a
certificate it cannot validate unless TrustServerCertificate=yes (learn.microsoft.com/sql/connect/odbc/
linux-mac/... "ODBC Driver 18 ... breaking change: Encrypt defaults to yes"); its message is the
OpenSSL one, "SSL Provider: [error:0A000086:SSL routines::certificate verify failed:self-signed
certificate]" (SQLSTATE 08001).  FreeTDS needs TDS_Version 7.3 or later for datetime2 and friends
(freetds.org userguide, "Choosing a TDS protocol version").
"""
from __future__ import annotations

import re
import time
from pathlib import Path

from . import server as S

SQL_DRIVER_NAME = 6
SQL_DBMS_NAME = 17
SQL_DBMS_VER = 18
threadsafety = 1
version = "5.1.0-sim"


class Error(Exception):
    pass


class DatabaseError(Error):
    pass


class OperationalError(DatabaseError):
    pass


class ProgrammingError(DatabaseError):
    pass


class InterfaceError(Error):
    pass


def _pairs(conn_str: str) -> dict[str, str]:
    out = {}
    for part in conn_str.split(";"):
        if "=" in part:
            k, v = part.split("=", 1)
            out.setdefault(k.strip().lower(), v.strip().strip("{}"))
    return out


def connect(conn_str: str, autocommit: bool = False, timeout: int = 0, **_kw) -> "Connection":
    kv = _pairs(conn_str)
    path = kv.get("simstate")
    if not path or not Path(path).exists():
        raise OperationalError("08001", "[Microsoft][ODBC Driver 18 for SQL Server]TCP Provider: Error code 0x2749 "
                                        "(10057) (SQLDriverConnect)")
    driver = kv.get("driver", "")
    with S._locked(Path(path)) as state:
        if "odbc driver 18" in driver.lower() and kv.get("encrypt", "yes").lower() in ("yes", "mandatory", "strict") \
                and state.get("certificate", "trusted") != "trusted" \
                and kv.get("trustservercertificate", "no").lower() != "yes":
            raise OperationalError("08001", "[Microsoft][ODBC Driver 18 for SQL Server]SSL Provider: [error:0A000086:"
                                            "SSL routines::certificate verify failed:self-signed certificate] "
                                            "(-1) (SQLDriverConnect)")
        database = kv.get("database") or "master"
        if database not in state["databases"]:
            raise ProgrammingError("42000", f"[Microsoft][ODBC Driver 18 for SQL Server][SQL Server]Cannot open "
                                            f"database \"{database}\" requested by the login. The login failed. "
                                            "(4060) (SQLDriverConnect)")
        spid = state["next_spid"]
        state["next_spid"] += 1
        state["sessions"][str(spid)] = {"database": database, "pid": __import__("os").getpid()}
    return Connection(Path(path), S.Session(spid, database), autocommit, driver)


class Connection:
    def __init__(self, path: Path, session: S.Session, autocommit: bool, driver: str):
        self.path, self.session, self.autocommit, self.driver = path, session, autocommit, driver
        self.closed = False

    def getinfo(self, what: int):
        if what == SQL_DBMS_NAME:
            return "Microsoft SQL Server"
        if what == SQL_DRIVER_NAME:
            return "libtdsodbc.so" if "freetds" in self.driver.lower() else "libmsodbcsql-18.3.so.2.1"
        if what == SQL_DBMS_VER:
            return S.load(self.path)["version"]
        raise InterfaceError("HY096", f"getinfo({what}) is not simulated")

    def cursor(self) -> "Cursor":
        if self.closed:
            raise ProgrammingError("HY000", "Attempt to use a closed connection.")
        return Cursor(self)

    def commit(self) -> None:
        pass

    def rollback(self) -> None:
        pass

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            with S._locked(self.path) as state:
                state["sessions"].pop(str(self.session.spid), None)
                for key in [k for k, v in state["applocks"].items() if v["spid"] == self.session.spid]:
                    del state["applocks"][key]
        except FileNotFoundError:
            pass


class Cursor:
    def __init__(self, conn: Connection):
        self.conn = conn
        self.description = None
        self.messages: list[tuple[str, str]] = []
        self.rowcount = -1
        self._sets: list = []
        self._rows: list = []

    def execute(self, sql: str, *params):
        if len(params) == 1 and isinstance(params[0], (list, tuple)):
            params = tuple(params[0])
        sess = self.conn.session
        if self.conn.closed:
            raise ProgrammingError("HY000", "Attempt to use a closed connection.")
        if sess.dead:
            raise OperationalError("08S01", "[Microsoft][ODBC Driver 18 for SQL Server]Communication link failure "
                                            "(0) (SQLExecDirectW)")
        slow, fail = 0.0, None
        with S._locked(self.conn.path) as state:
            if sess.spid in state.get("killed", []):  # ended by another session's ALTER DATABASE ... ROLLBACK IMMEDIATE
                sess.dead = True
                raise OperationalError("08S01", "[Microsoft][ODBC Driver 18 for SQL Server]Communication link "
                                                "failure (0) (SQLExecDirectW)")
            state["step"] += 1
            norm = S._norm(sql)
            for f in state["faults"]:
                hit = False
                if "step" in f:
                    hit = state["step"] == f["step"]
                elif re.search(f["match"], norm):
                    counts = state["match_counts"]
                    counts[f["match"]] = counts.get(f["match"], 0) + 1
                    hit = f.get("nth", 0) in (0, counts[f["match"]])
                if not hit:
                    continue
                state["log"].append({"fault": f, "sql": norm[:200]})
                if f["kind"] == "drop":
                    sess.dead = True
                    state["sessions"].pop(str(sess.spid), None)
                    fail = OperationalError("08S01", "[Microsoft][ODBC Driver 18 for SQL Server]Communication link "
                                                     "failure (0) (SQLExecDirectW)")
                elif f["kind"] == "error":
                    fail = ProgrammingError("42000", "[Microsoft][ODBC Driver 18 for SQL Server][SQL Server]"
                                                     "injected failure (50000) (SQLExecDirectW)")
                elif f["kind"] == "slow":
                    slow = float(f.get("seconds", 1))
        if fail is not None:  # raised after the state (with the fault's log entry) was written
            raise fail
        if slow:
            time.sleep(slow)
        with S._locked(self.conn.path) as state:
            try:
                sets, msgs = S.execute(state, sess, sql, params)
            except S.UnknownStatement:
                raise
            except S.SimError as exc:
                raise ProgrammingError(*exc.args) from None
        self.messages = [("[01000] (0)", m) for m in msgs]
        self._sets = list(sets)
        self._next()
        return self

    def _next(self) -> bool:
        if not self._sets:
            self.description, self._rows = None, []
            return False
        cols, rows = self._sets.pop(0)
        self.description = [(c, None, None, None, None, None, True) for c in cols]
        self._rows = [Row(r, cols) for r in rows]
        return True

    def nextset(self) -> bool:
        return self._next()

    def fetchone(self):
        if self.description is None:
            raise ProgrammingError("24000", "No results.  Previous SQL was not a query.")
        return self._rows.pop(0) if self._rows else None

    def fetchall(self):
        if self.description is None:
            raise ProgrammingError("24000", "No results.  Previous SQL was not a query.")
        rows, self._rows = self._rows, []
        return rows

    def cancel(self) -> None:
        pass

    def close(self) -> None:
        pass


class Row(tuple):
    def __new__(cls, values, cols):
        r = super().__new__(cls, values)
        r.cursor_description = cols
        return r
