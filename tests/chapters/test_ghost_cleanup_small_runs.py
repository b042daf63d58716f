"""Any recording renders: the ghost chapter on live PostgreSQL runs made with the smallest values its
--help-params allows (one update, one repetition) and with subsets of its variants.  A claim whose deciding run
is missing says "not testable with this recording" and names it; no prose prints "nan"."""
from __future__ import annotations

import json
import re

import pytest

from contention_book.chapters.ghost_cleanup import claims, recordings, spec
from contention_book.harness.chapter_registry import runners
from contention_book.harness import book
from contention_book.harness.runner import RunLog, run_chapter

RUNNERS = runners("ghost-cleanup")

SUBSETS = {
    "every-variant": list(spec.VARIANTS["postgres"]),
    "nothing-held-only": ["baseline"],
    "repeatable-read-only": ["open_snapshot"],
    "read-committed-and-vacuum": ["idle_read_committed", "vacuum_each_chunk"],
}


@pytest.fixture(scope="module")
def small_runs(pg, tmp_path_factory):
    from conftest import TEST_ENV_VAR

    root = tmp_path_factory.mktemp("ghost-small")
    out = {}
    for name, variants in SUBSETS.items():
        raw = {"updates": 1, "repetitions": 1, "capture_stacks": False, "variants": variants,
               "database": "contention_test"}
        out[name] = run_chapter(spec.SPEC, RUNNERS, raw, engine="postgres", target=TEST_ENV_VAR,
                                record_to=str(root / name), log=RunLog(lambda *_: None))
    return out


def _markdown_outputs(path) -> str:
    nb = json.loads(path.read_text())
    return "\n".join("".join(o["data"]["text/markdown"]) for c in nb["cells"] for o in c.get("outputs", [])
                     if "text/markdown" in o.get("data", {}))


@pytest.mark.live
@pytest.mark.slow
@pytest.mark.parametrize("name", list(SUBSETS))
def test_a_smallest_run_renders(small_runs, name, tmp_path):
    path = small_runs[name]
    view = recordings.load(path)
    assert (view.runs["updates_done"] == 1).all() and (view.runs["live_rows"] == 1).all()
    rows = claims.verdicts(recordings.load_shown(str(path))).set_index("claim")["verdict"]
    # PostgreSQL cannot show SQL Server's 2019 → 2022 change, whatever the subset
    assert rows[claims.CLAIMS["unpinned"]].startswith("not testable here")
    if "vacuum_each_chunk" not in SUBSETS[name]:
        assert rows[claims.CLAIMS["unheld_ghosts"]].startswith("not testable with this recording")
    # one chunk per run: no curve to fit, one repetition: no interval; neither may crash or print "nan"
    assert rows[claims.CLAIMS["steeper"]].startswith("not testable with this recording")
    out = book.execute("ghost-cleanup", {"recording": str(path)}, output=tmp_path / f"{name}.ipynb")
    text = _markdown_outputs(out)
    assert "In short" in text
    assert not re.search(r"\bnan\b", text, re.IGNORECASE), text
