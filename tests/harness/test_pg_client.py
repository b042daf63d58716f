"""harness.pg_client: the libpq client's translation of the pyodbc surface, and the client choice on a target."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from contention_book.harness import pg_client
from contention_book.harness.pg_client import CLIENT_ENV, Error, _LOADERS, _dump, conninfo, numbered
from contention_book.harness.targets import Target, TargetError, parse_connection_string


@pytest.mark.parametrize("sql, expected, count", [
    ("SELECT ?, ?", "SELECT $1, $2", 2),
    ("SELECT '?', \"a?\", $$?$$, $f$ ? $f$ -- ?\n, ? /* ? */", "SELECT '?', \"a?\", $$?$$, $f$ ? $f$ -- ?\n, $1 /* ? */", 1),
    ("SELECT 'it''s ?', ?", "SELECT 'it''s ?', $1", 1),
    ("SELECT 100 % 7, ?", "SELECT 100 % 7, $1", 1),  # no psycopg-style %s escaping: libpq takes $n
    ("INSERT INTO t VALUES ('x')", "INSERT INTO t VALUES ('x')", 0),
])
def test_placeholders_outside_literals_comments_and_dollar_quotes_become_numbered(sql, expected, count):
    assert numbered(sql) == (expected, count)


def test_conninfo_maps_odbc_keys_first_wins_and_quotes():
    pairs = parse_connection_string("Driver={PostgreSQL Unicode};Server=127.0.0.1;Port=5433;Database=lab;Uid=book;"
                                    "Pwd={it's;x};CommLog=0;Debug=0;Database=other;")
    text = conninfo(pairs, timeout=7).decode()
    assert "host='127.0.0.1'" in text and "port='5433'" in text and "dbname='lab'" in text
    assert "user='book'" in text and "password='it\\'s;x'" in text and "connect_timeout='7'" in text
    assert "other" not in text and "Driver" not in text


def test_conninfo_refuses_an_unknown_key_by_name():
    with pytest.raises(Error) as err:
        conninfo([("Server", "h"), ("Sslrootcertx", "y")])
    assert err.value.args[0] == "08001" and "'Sslrootcertx'" in err.value.args[1] and "ODBC client" in err.value.args[1]
    assert f"{CLIENT_ENV}=odbc" in err.value.args[1]


def test_values_dump_as_postgresql_text():
    assert _dump(None) is None
    assert _dump(True) == b"t" and _dump(0) == b"0" and _dump(2.5) == b"2.5"
    assert _dump(b"\x01\xff") == b"\\x01ff" and _dump(Decimal("1.10")) == b"1.10"
    assert _dump(dt.date(2024, 2, 29)) == b"2024-02-29" and _dump("é") == "é".encode()


def test_loaders_return_what_psqlodbc_returns():
    assert _LOADERS[16](b"t") == "1" and _LOADERS[16](b"f") == "0"  # BoolsAsChar
    assert _LOADERS[20](b"12") == 12 and _LOADERS[1700](b"1.5") == Decimal("1.5")
    assert _LOADERS[1700](b"NaN").is_nan()
    assert _LOADERS[17](b"\\x01ff") == b"\x01\xff"
    assert _LOADERS[1184](b"2026-11-26 17:41:09.415227+01") == dt.datetime(2026, 11, 26, 16, 41, 9, 415227)
    assert _LOADERS[1114](b"infinity") == "infinity"


def test_client_choice(monkeypatch):
    t = Target(name="X", source="env", engine="postgres", _conn_str="Server=h;")
    monkeypatch.delenv(CLIENT_ENV, raising=False)
    assert t.client_name() == "psycopg"  # PostgreSQL's default is libpq
    assert Target(name="X", source="env", engine="sqlserver").client_name() == "odbc"  # SQL Server: always ODBC
    assert Target(name="X", source="env", engine=None).client_name() == "odbc"  # engine unknown: ODBC detects it
    monkeypatch.setenv(CLIENT_ENV, "odbc")
    assert t.client_name() == "odbc"  # psqlODBC on request
    monkeypatch.setenv(CLIENT_ENV, " PSYCOPG ")
    assert t.client_name() == "psycopg"
    assert Target(name="X", source="env", engine="sqlserver").client_name() == "odbc"
    assert Target(name="X", source="env", engine="postgres", client="odbc").client_name() == "odbc"  # explicit wins
    monkeypatch.setenv(CLIENT_ENV, "libpq")
    with pytest.raises(TargetError, match="CONTENTION_BOOK_PG_CLIENT='libpq': expected one of odbc, psycopg"):
        t.client_name()


def test_a_dsn_cannot_be_read_by_libpq_and_the_error_names_both_ways_out(monkeypatch):
    monkeypatch.delenv(CLIENT_ENV, raising=False)
    t = Target(name="MYDSN", source="dsn", engine="postgres", _conn_str="DSN=MYDSN")  # the default client
    with pytest.raises(TargetError, match="ODBC DSN, which libpq cannot read") as err:
        t.connect()
    assert "environment variable" in str(err.value) and f"{CLIENT_ENV}=odbc" in str(err.value)


def test_describe_names_psycopg_and_libpq():
    text = pg_client.describe()
    assert text.startswith("psycopg 3.") and "libpq " in text


def test_a_failed_libpq_connect_names_the_target_and_the_client_never_the_password(monkeypatch):
    monkeypatch.delenv(CLIENT_ENV, raising=False)
    monkeypatch.setenv("PG_NOWHERE_LIBPQ", "Server=127.0.0.1;Port=1;Database=x;Uid=u;Pwd=never-print-this-pw;")
    from contention_book.harness.targets import resolve_target

    with pytest.raises(TargetError) as err:
        resolve_target("PG_NOWHERE_LIBPQ", "postgres").connect(timeout=2)
    text = str(err.value)
    assert "'PG_NOWHERE_LIBPQ' (psycopg client, libpq): could not connect" in text, text
    assert "never-print-this-pw" not in text
