import pytest

from contention_book.harness import redaction
from contention_book.harness.targets import (TargetError, check_identifier, parse_connection_string, resolve_target,
                             with_database)


def test_parse_braces_and_semicolons():
    pairs = parse_connection_string("Driver={ODBC Driver 18 for SQL Server};Server=tcp:x,1433;PWD={a;b}}c};")
    assert pairs == [("Driver", "ODBC Driver 18 for SQL Server"), ("Server", "tcp:x,1433"), ("PWD", "a;b}c")]


def test_password_is_registered_and_redacted():
    parse_connection_string("Server=x;Uid=u;Pwd=S3cret-Value;")
    assert "S3cret-Value" not in redaction.redact("login failed, Pwd=S3cret-Value; and S3cret-Value again")


def test_with_database_replaces_the_first_key():
    out = with_database("DSN=x;Database=master;UID=u", "contention_lab")
    assert "master" not in out and out.endswith("Database=contention_lab;")


def test_connection_string_is_refused_as_a_target():
    with pytest.raises(TargetError, match="looks like a connection string"):
        resolve_target("Driver={x};Server=y;PWD=z")


def test_env_var_target(monkeypatch):
    monkeypatch.setenv("MY_TEST_TARGET", "Driver={PostgreSQL Unicode};Server=127.0.0.1;Pwd=hidden-pw-123;")
    t = resolve_target("MY_TEST_TARGET", "postgres")
    assert t.source == "env" and "hidden-pw-123" not in repr(t) and "hidden-pw-123" not in str(t)


def test_dsn_target():
    t = resolve_target("SOME_DSN_NAME")
    assert t.source == "dsn" and t.connection_string() == "DSN=SOME_DSN_NAME;"


def test_unknown_engine():
    with pytest.raises(TargetError, match="expected one of sqlserver, postgres"):
        resolve_target("X", "oracle")


@pytest.mark.parametrize("bad", ["a b", "x;drop", "1abc", "a" * 64, "", "name]"])
def test_identifiers_are_validated(bad):
    with pytest.raises(TargetError, match="expected a plain identifier"):
        check_identifier(bad, "database")


def test_connect_error_is_redacted(monkeypatch):
    monkeypatch.setenv("BAD_TARGET", "Driver={No Such Driver};Server=nowhere;Pwd=never-print-me;")
    with pytest.raises(TargetError) as err:
        resolve_target("BAD_TARGET").connect()
    assert "never-print-me" not in str(err.value) and "BAD_TARGET" in str(err.value)
