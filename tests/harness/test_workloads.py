"""Workload scripts split correctly, and every T-SQL batch parses with a real grammar (see tsql_parse)."""
import re
from pathlib import Path

import pytest
from tsql_parse import problems

from contention_book.harness.recording import repo_root
from contention_book.harness.workloads import WorkloadError, load, render, split_postgres, split_tsql

SCRIPTS = sorted((repo_root() / "workloads").glob("*/*/*.sql"))


def test_split_tsql_on_go_lines():
    text = "SELECT 1;\nGO\nSELECT 'GO';\n  go 2\nSELECT 3 -- tail\n"
    assert split_tsql(text) == ["SELECT 1;", "SELECT 'GO';", "SELECT 'GO';", "SELECT 3 -- tail"]


def test_split_postgres_respects_quotes_and_bodies():
    text = ("SELECT ';' AS a; -- c;\nCREATE FUNCTION f() RETURNS int LANGUAGE sql AS $b$ SELECT 1; $b$;\n"
            "/* x; */ SELECT \"a;b\" FROM t;")
    parts = split_postgres(text)
    assert len(parts) == 3 and parts[1].endswith("$b$") and parts[2].endswith('FROM t')


def test_placeholders_take_only_identifiers():
    assert render("SELECT * FROM {{table}}", {"table": "t1"}, "x") == "SELECT * FROM t1"
    with pytest.raises(Exception, match="plain identifier"):
        render("SELECT * FROM {{table}}", {"table": "t1; DROP TABLE x"}, "x")
    with pytest.raises(WorkloadError, match="has no value"):
        render("SELECT {{missing}}", {}, "x")


def test_there_are_scripts():
    engines = {p.parent.name for p in SCRIPTS}
    assert {"sqlserver", "postgres"} <= engines


SAMPLE_VALUES = {"maxdop": "7"}


@pytest.mark.parametrize("path", [p for p in SCRIPTS if p.parent.name == "sqlserver"],
                         ids=lambda p: str(p.relative_to(repo_root())))
def test_tsql_batches_parse(path: Path):
    # placeholders get sample values: names for identifiers, a number where the harness writes one in
    text = re.sub(r"\{\{(\w+)\}\}", lambda m: SAMPLE_VALUES.get(m.group(1), f"sample_{m.group(1)}"), path.read_text())
    for i, batch in enumerate(split_tsql(text)):
        found = problems(batch)
        assert not found, f"{path} batch {i + 1} does not parse as T-SQL: {found}"


@pytest.mark.parametrize("bad", ["SELECT 1 FROM;", "SELECT FROM WHERE;", "WHILE 1 BEGIN SELECT 1;",
                                 "COMMIT TRANSACTION WITH (DELAYED_DURABILITY = MAYBE);",
                                 "UPDATE t SET = 1;"])
def test_the_tsql_check_can_fail(bad):
    assert problems(bad)


@pytest.mark.parametrize("path", [p for p in SCRIPTS if p.parent.name == "postgres"],
                         ids=lambda p: str(p.relative_to(repo_root())))
def test_postgres_statements_split(path: Path):
    chapter = path.parent.parent.name
    statements = load(chapter, "postgres", path.stem)
    assert statements, f"{path}: no statements"
