"""A reader's smallest runs render: the chapter's notebook on live PostgreSQL runs made with the smallest values its
--help-params allows, and with a subset of its variants.  Claims whose deciding point the run lacks say "not
testable with this recording" and name the point; nothing crashes."""
from __future__ import annotations

import json

import pytest

from contention_book.chapters.last_page_insert import claims, recordings, spec
from contention_book.harness.chapter_registry import runners
from contention_book.harness import book
from contention_book.harness.runner import RunLog, run_chapter

RUNNERS = runners("last-page-insert")

SMALLEST = {"sessions": "1", "variants": "sequential", "duration_s": "0.01", "repetitions": "1",
            "rows_per_session": "1", "rows_per_call": "1", "partitions": "2", "wait_hz": "0.1", "pin_hz": "0",
            "warmup_s": "0", "capture_stacks": "false", "database": "contention_test"}
SUBSET = {"sessions": "1,2", "variants": "hash_partitioned,random_key", "duration_s": "0.3", "repetitions": "1",
          "rows_per_call": "10", "partitions": "2", "pin_hz": "0", "warmup_s": "0", "capture_stacks": "false",
          "database": "contention_test"}


def _smallest_allowed():
    """SMALLEST really is the smallest each numeric parameter allows."""
    by_name = {p.name: p for p in spec.SPEC.params}
    for name, value in SMALLEST.items():
        p = by_name[name]
        if p.kind in ("int", "float") and p.minimum is not None:
            assert float(value) == float(p.minimum), (name, value, p.minimum)
        if p.kind == "ints":
            assert min(int(v) for v in value.split(",")) == p.minimum


def _record(tmp_path, name, params):
    from conftest import TEST_ENV_VAR

    return run_chapter(spec.SPEC, RUNNERS, dict(params), engine="postgres", target=TEST_ENV_VAR,
                       record_to=str(tmp_path / name), log=RunLog(lambda _line: None))


def _render(tmp_path, path):
    out = book.execute(spec.CHAPTER, {"recording": str(path)}, output=tmp_path / f"{path.name}.ipynb")
    nb = json.loads(out.read_text())
    errors = [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    return nb


@pytest.mark.live
def test_the_smallest_run_renders_and_names_what_it_lacks(pg, tmp_path):
    _smallest_allowed()
    path = _record(tmp_path, "smallest", SMALLEST)
    view = recordings.load(path)
    assert (view.runs["rows_inserted"] == view.runs["rows_counted"]).all()
    rows = claims.verdicts(recordings.load_shown(str(path))).set_index("claim")
    assert rows.loc[claims.C["hash_rate"], "verdict"].startswith("not testable with this recording")
    assert rows.loc[claims.C["queue"], "verdict"] == ("not testable with this recording: no point with "
                                                      + ("2" if view.cpus == 2 else f"2 to {view.cpus}")
                                                      + " sessions (concurrent, not oversubscribed)")
    assert rows.loc[claims.C["splits"], "verdict"].startswith("not testable with this recording: index statistics")
    _render(tmp_path, path)


@pytest.mark.live
def test_a_run_without_the_baseline_renders(pg, tmp_path):
    path = _record(tmp_path, "subset", SUBSET)
    rows = claims.verdicts(recordings.load_shown(str(path))).set_index("claim")
    for key in ("hash_rate", "splits"):
        assert rows.loc[claims.C[key], "verdict"].startswith("not testable with this recording"), key
    assert "sequential" in rows.loc[claims.C["hash_rate"], "verdict"]
    _render(tmp_path, path)


def test_a_sql_server_run_renders(tmp_path):
    """A reader's SQL Server run (through the simulator, every variant, 3 repetitions) renders, its latch share read
    from the server's wait deltas and the partition-elimination size compared with all partitions."""
    from sqlserver_sim import run as R
    from sqlserver_sim import server as S

    state = S.create(tmp_path / "state.json", version="2022")
    rc, out, _ = R.run_in_process(spec.CHAPTER, state, tmp_path / "sqlserver", {"repetitions": "3"}, allow=True)
    assert rc == 0, out
    shown = recordings.load_shown(str(tmp_path / "sqlserver"))
    rows = claims.verdicts(shown).set_index("claim")
    assert rows.loc[claims.C["elimination"], "verdict"] == "reproduced"
    assert "of the sessions' time" in rows.loc[claims.C["queue"], "measured"]
    assert rows["tested_on"].str.startswith("SQL Server 16.0").all()
    _render(tmp_path, tmp_path / "sqlserver")
