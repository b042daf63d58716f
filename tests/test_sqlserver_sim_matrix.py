"""Every chapter's SQL Server path through the live runner, against the simulator, across version x edition x login.

Each run either writes a complete recording that its chapter renders (key numbers and verdicts), or is
refused by the preflight within 5 s with a message naming what is missing.  Either way the simulated
server is left exactly as it was (trace flags, affinity, database options).
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from sqlserver_sim import run as R
from sqlserver_sim import server as S

# Every version with both logins on Developer; Express and Standard (licensing limits, memory quotas) on the
# oldest and newest version with the documented login, and on 2019; Enterprise on 2019 and 2022 with each
# login; the two Azure services.  95 runs, about two and a half minutes.
BOX = ([(v, "developer", l) for v in ("2016sp2", "2017", "2019", "2022") for l in ("sysadmin", "documented")]
       + [(v, e, "documented") for v in ("2016sp2", "2022") for e in ("express", "standard")]
       + [("2019", "express", "sysadmin"), ("2019", "standard", "documented"),
          ("2019", "enterprise", "documented"), ("2022", "enterprise", "sysadmin")])
AZURE = [("sqldb", "azure", "sysadmin"), ("mi", "azure", "sysadmin"), ("mi", "azure", "documented")]
CHAPTERS = list(R.SMALL)
SERVER_CHANGE_VARIANTS = {"ghost-cleanup": "rcsi_open_txn_tf7006", "latch-fairness": "unfair",
                          "logcache-spinlock": "no_logwriter_core"}


def expected(chapter: str, version: str, login: str) -> str | None:
    """None: a complete recording; otherwise text the refusal must contain (from the Azure T-SQL differences)."""
    if version == "sqldb":
        return "Azure SQL Database (EngineEdition 5)"
    if version == "mi":
        return {"ghost-cleanup": "SET RECOVERY", "latch-fairness": "SET RECOVERY",
                "logcache-spinlock": "ADD FILE with a FILENAME"}.get(chapter)
    return None


def expected_variant_runs(chapter: str, version: str, login: str) -> bool | None:
    """Does the server-changing variant run (allowed, sysadmin or the grant, new enough)?  None: no such variant."""
    v = SERVER_CHANGE_VARIANTS.get(chapter)
    if v is None:
        return None
    major = int(S.VERSIONS[version]["ProductVersion"].split(".")[0])
    if chapter == "ghost-cleanup":
        return login == "sysadmin" and major >= 16
    if chapter == "latch-fairness":
        return login == "sysadmin" and major >= 15
    return login == "sysadmin"  # ALTER SETTINGS is not among the documented grants of the plain login


def recording_paths(obj, depth: int = 0) -> set[Path]:
    """Every recording directory a chapter's Shown object holds."""
    found = set()
    if depth > 3 or obj is None:
        return found
    if isinstance(getattr(obj, "path", None), Path):
        found.add(obj.path.resolve())
    items = obj.values() if isinstance(obj, dict) else (
        vars(obj).values() if hasattr(obj, "__dict__") else [])
    for value in items:
        if not isinstance(value, (str, int, float, pd.DataFrame)):
            found |= recording_paths(value, depth + 1)
    return found


@pytest.mark.parametrize("version,edition,login", BOX + AZURE, ids=lambda x: str(x))
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chapter_completes_or_is_refused_at_once(chapter, version, edition, login, tmp_path):
    state = S.create(tmp_path / "state.json", version=version, edition=edition if edition != "azure" else "developer",
                     login=login)
    before = S.load(state)
    rc, out, seconds = R.run_in_process(chapter, state, tmp_path / "rec", allow=True)
    after = S.load(state)
    assert S.lasting_changes(after, before) == {}, out
    assert not after.get("without_lock_timeout"), "statements sent before SET LOCK_TIMEOUT on their connection"
    refusal = expected(chapter, version, login)
    if refusal:
        assert rc == 2, out
        assert seconds < 5, f"refused after {seconds:.1f} s"
        assert refusal in out and "nothing was changed" in out, out
        assert not (tmp_path / "rec").exists()
        return
    assert rc == 0, out
    manifest = json.loads((tmp_path / "rec" / "manifest.json").read_text())
    assert manifest["status"]["state"] == "complete"
    shown = R.render(chapter, tmp_path / "rec")
    assert (tmp_path / "rec").resolve() in recording_paths(shown["shown"])
    assert shown["key_numbers"] and len(shown["verdicts"])
    runs = pd.read_csv(tmp_path / "rec" / "runs.csv")
    runs_it = expected_variant_runs(chapter, version, login)
    if runs_it is not None:
        variant = SERVER_CHANGE_VARIANTS[chapter]
        assert (variant in set(runs["variant"])) == runs_it, out
        if not runs_it:
            assert f"note: {variant} left out of the default variants" in out, out
