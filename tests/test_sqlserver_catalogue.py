"""The documented catalogue (tests/sqlserver_sim/catalogue.json) and the diagnose queries resolved through it.

Every system object and column the project names must be in the catalogue with its page; every diagnose query
(workloads/*/diagnose/sqlserver/*.sql) is sent through the simulator's one path (parse, resolve against the
catalogue, permission) on each version and platform the matrix covers, and what a platform lacks is refused
there, as its page says (sys.dm_db_page_info, sys.fn_PageResCracker and sys.indexes.optimize_for_sequential_key
arrived in SQL Server 2019).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sqlserver_sim import fake_pyodbc
from sqlserver_sim import query as Q
from sqlserver_sim import run as R
from sqlserver_sim import server as S

REPO = Path(__file__).resolve().parents[1]
DIAGNOSE = sorted((REPO / "workloads").glob("*/diagnose/sqlserver/*.sql"))
SQL_FILES = sorted((REPO / "workloads").glob("*/sqlserver/*.sql")) + DIAGNOSE
VERSIONS = ["2016sp2", "2017", "2019", "2022", "mi"]
TABLES = ["CREATE TABLE dbo.GhostTest (id integer NOT NULL, CONSTRAINT PK_GhostTest PRIMARY KEY CLUSTERED (id));",
          "CREATE TABLE dbo.lmax_disk_queue (id bigint IDENTITY(1, 1) NOT NULL, pushed_at datetime2 NOT NULL, "
          "message char(300) NOT NULL, CONSTRAINT pk_lmax_disk_queue PRIMARY KEY CLUSTERED (id));"]
# (diagnose file, versions where the server refuses it, error number): from the pages' "applies to"
LACKING = {
    "02-waited-page-to-index.sql": ({"2016sp2", "2017"}, 208),
    "05-identity-clustered-indexes.sql": ({"2016sp2", "2017"}, 207),
}


def test_every_object_and_column_the_project_names_is_in_the_catalogue():
    cat = Q.catalogue()["objects"]
    texts = [p.read_text(encoding="utf-8") for p in SQL_FILES]
    for p in (REPO / "src" / "contention_book").rglob("*.py"):  # inline SQL: adjacent string literals joined
        text = p.read_text(encoding="utf-8")
        if "sys." in text and ("FROM" in text or "JOIN" in text):
            texts.append(" ".join(s for s in re.findall(r'"((?:[^"\\]|\\.)*)"', text)
                                  if not re.search(r"\b(?:error|exc|self)\.|\.error\b", s)))
    missing = []
    for text in texts:
        objects, aliases, cols = Q.references(text)
        missing += [o for o in objects if o not in cat]
        missing += [f"{aliases[a]}.{c}" for a, c in cols if c.lower() not in cat[aliases[a]]["columns"]]
    assert not missing, sorted(set(missing))
    for name, entry in cat.items():
        assert entry["page"].startswith("https://learn.microsoft.com/"), name
        assert entry["kind"] in ("dmv", "catalog", "procedure", "function"), name


def test_catalogue_entries_read_this_session_carry_their_ms_date():
    for name, entry in Q.catalogue()["objects"].items():
        if entry["read_this_session"]:
            assert re.fullmatch(r"\d\d/\d\d/\d{4}", entry["ms_date"] or ""), name


def test_every_sqlserver_diagnose_query_cites_its_pages_at_the_top():
    for path in DIAGNOSE:
        head = path.read_text(encoding="utf-8").splitlines()[:6]
        assert head[0].startswith("-- Source") and any("https://learn.microsoft.com/" in h for h in head), path


def test_log_wait_deltas_leave_the_log_writers_idle_wait_out():
    text = (REPO / "workloads/logcache-spinlock/diagnose/sqlserver/02-log-wait-deltas.sql").read_text()
    code = "\n".join(line.split("--")[0] for line in text.splitlines())
    assert "LOGMGR_QUEUE" not in code and "WRITELOG" in code


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("path", DIAGNOSE, ids=[f"{p.parts[-4]}/{p.name}" for p in DIAGNOSE])
def test_diagnose_queries_resolve_on_each_version_or_are_refused_as_documented(tmp_path, path, version):
    state = S.create(tmp_path / "s.json", version=version, phenomena=False)
    st = S.load(state)
    st["databases"]["lab"] = S._db(st["next_db_id"])
    Path(state).write_text(json.dumps(st))
    conn = fake_pyodbc.connect(R.connection_string(state, extra="Database=lab;"), autocommit=True)
    from contention_book.harness import workloads

    refused, number = LACKING.get(path.name, (set(), None))
    for table in TABLES:  # the tables the ghost and queue files read (each stops with THROW 50000 without its table)
        conn.cursor().execute(table)
    errors = []
    for batch in workloads.split_tsql(path.read_text(encoding="utf-8")):
        try:
            conn.cursor().execute(batch)
        except fake_pyodbc.ProgrammingError as exc:
            errors.append(str(exc))
            break
    if version in refused:
        assert errors and f"({number})" in errors[0], errors
    else:
        assert not errors, errors


def test_the_phenomena_switch_is_what_moves_the_contention_statistics(tmp_path):
    """Off, a chapter runs end to end but no latch, spinlock or wait statistic moves; on, the chapter's rows appear."""
    off = S.create(tmp_path / "off.json", version="2022", phenomena=False)
    rc, out, _ = R.run_in_process("latch-fairness", off, tmp_path / "rec_off", {"variants": "fair"})
    assert rc == 0, out
    assert S.load(off)["stats"]["latch"] == {} and S.load(off)["stats"]["spinlock"] == {}
    on = S.create(tmp_path / "on.json", version="2022")
    rc, out, _ = R.run_in_process("latch-fairness", on, tmp_path / "rec_on", {"variants": "fair"})
    assert rc == 0, out
    assert S.load(on)["stats"]["latch"]["NESTING_TRANSACTION_FULL"][0] > 0
