"""Ghost-cleanup accounting: the updates a run did (its key read back) are the updates it was asked for, in a
table of one row.

The runner checks it at the end of every run (one that does not balance fails, naming the point); the loader
checks it again and sets aside a recorded run that does not balance, with its curve and storage rows.  Both
are driven through the SQL Server simulator, which runs the chapter's real SQL Server path in about a second.
"""
from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest

from contention_book.chapters.ghost_cleanup import recordings, run_common, spec
from contention_book.harness.spec import Unbalanced, check_balanced

from sqlserver_sim import run as R
from sqlserver_sim import server as S

RUNS = spec.LAYOUT["runs"]
SMALL = {"updates": "300", "chunk": "50", "repetitions": "1", "cleanup_wait_s": "0", "variants": "read_committed,rcsi"}


def _row(**over):
    row = {"variant": "rcsi", "sessions": 1, "repetition": 0, "updates_asked": 300, "updates_done": 300,
           "live_rows": 1}
    row.update(over)
    return pd.DataFrame([row])


def test_the_identities_are_declared_for_both_engines_and_name_the_point():
    check_balanced(RUNS, _row(), "postgres")
    check_balanced(RUNS, _row(), "sqlserver")
    with pytest.raises(Unbalanced, match=r"rcsi at 1 session.* repetition 0 does not balance: updates done"):
        check_balanced(RUNS, _row(updates_done=299), "sqlserver")
    with pytest.raises(Unbalanced, match="exactly one row"):
        check_balanced(RUNS, _row(live_rows=2), "postgres")


def _record(tmp_path, monkeypatch=None, short_by=0):
    state = S.create(tmp_path / "state.json", version="2019")
    if short_by:
        real = run_common.Run.record_run

        def short(self, variant, result, curve, row_state):  # the key read back says updates went missing
            return real(self, variant, result, curve, row_state.assign(updates_done=row_state["updates_done"] - short_by))

        monkeypatch.setattr(run_common.Run, "record_run", short)
    return R.run_in_process("ghost-cleanup", state, tmp_path / "rec", SMALL, allow=True)


def test_a_run_whose_updates_went_missing_fails_naming_the_point(tmp_path, monkeypatch):
    rc, out, _ = _record(tmp_path, monkeypatch, short_by=1)
    assert rc != 0, out
    assert "does not balance" in out and "read_committed" in out, out
    assert "updates done (the key read back) = updates asked" in out
    manifest = tmp_path / "rec" / "manifest.json"
    assert not manifest.is_file() or json.loads(manifest.read_text())["status"]["state"] != "complete"


def test_a_balanced_run_records_its_counts_and_an_unbalanced_row_is_set_aside_on_load(tmp_path):
    rc, out, _ = _record(tmp_path)
    assert rc == 0, out
    rec_dir = tmp_path / "rec"
    runs = pd.read_csv(rec_dir / "runs.csv")
    assert (runs["updates_done"] == runs["updates_asked"]).all() and (runs["updates_asked"] == 300).all()
    assert (runs["live_rows"] == 1).all()
    view = recordings.load(rec_dir)
    assert "runs_set_aside" not in view.tables

    bad = runs.copy()
    pos = bad.index[bad["variant"] == "rcsi"][0]
    bad.loc[pos, "updates_done"] -= 7
    bad.to_csv(rec_dir / "runs.csv", index=False)
    manifest = json.loads((rec_dir / "manifest.json").read_text())
    for f in manifest["files"]:
        if f["path"] == "runs.csv":
            f["sha256"] = hashlib.sha256((rec_dir / "runs.csv").read_bytes()).hexdigest()
            f["bytes"] = (rec_dir / "runs.csv").stat().st_size
    (rec_dir / "manifest.json").write_text(json.dumps(manifest))

    view = recordings.load(rec_dir)
    assert list(view.runs["variant"]) == ["read_committed"]
    assert len(view.tables["runs_set_aside"]) == 1
    assert set(view.curve["variant"]) == {"read_committed"}            # its curve went with it
    assert set(view.index_stats["variant"]) == {"read_committed"}      # and its storage rows
    note = " ".join(view.recording.manifest.get("notes", []))
    assert f"line {pos + 2} (rcsi at 1 session" in note
    assert "updates done (the key read back) = updates asked fails" in note
