"""Last-page accounting: the rows a point inserted are the rows counted in the table afterwards.

The runner checks it at the end of every point (a point that does not balance fails the run, naming it); the
loader checks it again and sets aside any row of a recording that does not balance, with a note.  Both are
driven here through the SQL Server simulator, which runs the chapter's real SQL Server path in about a second.
"""
from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest

from contention_book.chapters.last_page_insert import recordings, run_sqlserver, spec
from contention_book.harness.spec import Unbalanced, check_balanced

from sqlserver_sim import run as R
from sqlserver_sim import server as S

RUNS = spec.LAYOUT["runs"]


def _row(**over):
    row = {"variant": "sequential", "sessions": 4, "repetition": 1, "rows_inserted": 1000, "rows_counted": 1000}
    row.update(over)
    return pd.DataFrame([row])


def test_the_identity_is_declared_for_both_engines_and_names_the_point():
    check_balanced(RUNS, _row(), "postgres")
    check_balanced(RUNS, _row(), "sqlserver")
    with pytest.raises(Unbalanced, match=r"sequential at 4 sessions repetition 1 does not balance: rows inserted = "
                                         r"rows counted"):
        check_balanced(RUNS, _row(rows_counted=999), "postgres")
    with pytest.raises(Unbalanced, match="cannot check"):
        check_balanced(RUNS, _row().drop(columns=["rows_counted"]), "sqlserver")


def _record(tmp_path, monkeypatch=None, lose=0):
    state = S.create(tmp_path / "state.json", version="2022")
    if lose:
        real, calls = run_sqlserver.count_rows, {"n": 0}

        def short(conn, engine, **ids):  # every second count is the one after a window: rows went missing
            calls["n"] += 1
            return real(conn, engine, **ids) - (lose if calls["n"] % 2 == 0 else 0)

        monkeypatch.setattr(run_sqlserver, "count_rows", short)
    return R.run_in_process("last-page-insert", state, tmp_path / "rec", {"variants": "sequential,hash_partitioned"},
                            allow=True)


def test_a_point_whose_rows_went_missing_fails_the_run_naming_it(tmp_path, monkeypatch):
    rc, out, _ = _record(tmp_path, monkeypatch, lose=3)
    assert rc != 0, out
    assert "does not balance" in out and "sequential at 1 sessions repetition 0" in out, out
    assert "rows inserted = rows counted in the table afterwards" in out
    assert not (tmp_path / "rec" / "manifest.json").is_file() or \
        json.loads((tmp_path / "rec" / "manifest.json").read_text())["status"]["state"] != "complete"


def test_a_balanced_run_records_both_counts_and_an_unbalanced_row_is_set_aside_on_load(tmp_path):
    rc, out, _ = _record(tmp_path)
    assert rc == 0, out
    rec_dir = tmp_path / "rec"
    runs = pd.read_csv(rec_dir / "runs.csv")
    assert (runs["rows_inserted"] == runs["rows_counted"]).all() and (runs["rows_inserted"] > 0).all()
    view = recordings.load(rec_dir)
    assert len(view.tables.get("runs_by_repetition", view.runs)) == len(runs) and "runs_set_aside" not in view.tables

    bad = runs.copy()
    pos = bad.index[(bad["variant"] == "hash_partitioned") & (bad["sessions"] == 2)][0]
    bad.loc[pos, "rows_counted"] -= 1
    bad.to_csv(rec_dir / "runs.csv", index=False)
    manifest = json.loads((rec_dir / "manifest.json").read_text())
    for f in manifest["files"]:
        if f["path"] == "runs.csv":
            f["sha256"] = hashlib.sha256((rec_dir / "runs.csv").read_bytes()).hexdigest()
            f["bytes"] = (rec_dir / "runs.csv").stat().st_size
    (rec_dir / "manifest.json").write_text(json.dumps(manifest))

    view = recordings.load(rec_dir)
    kept = view.tables.get("runs_by_repetition", view.runs)
    assert len(kept) == len(runs) - 1
    assert not ((kept["variant"] == "hash_partitioned") & (kept["sessions"] == 2)).any()
    assert len(view.tables["runs_set_aside"]) == 1
    note = " ".join(view.recording.manifest.get("notes", []))
    assert f"line {pos + 2} (hash_partitioned at 2 sessions repetition 0)" in note
    assert "rows inserted = rows counted in the table afterwards fails" in note
