"""A reader's smallest run renders: the least every --help-params value allows, and subsets of the variants.

Each recording is made by the real runner (the embedded PostgreSQL, or the C programs) in seconds and the
chapter's notebook is executed on it.  A verdict whose deciding point the recording lacks must say "not
testable with this recording" and name the point; nothing may crash.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from contention_book.chapters.lmax_queue import claims, recordings, spec, tables
from contention_book.harness.chapter_registry import runners
from contention_book.harness import book
from contention_book.harness.params import parse
from contention_book.harness.runner import RunLog, run_chapter

RUNNERS = runners("lmax-queue")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_book import glue_keys, referenced_glue  # noqa: E402

SMALLEST = {  # the least each parameter accepts (checked against the spec below)
    "postgres": {"sessions": "1", "duration_s": "0.01", "repetitions": "1", "queue_size": "2",
                 "pushes_per_call": "1", "messages_per_session": "1", "warmup_s": "0"},
    "native": {"sessions": "1", "repetitions": "1", "queue_size": "2", "messages_per_session": "1",
               "increments": "1000"},
}


def test_the_smallest_values_are_the_ones_help_params_allows():
    for engine, values in SMALLEST.items():
        for param in spec.PARAMS:
            if param.name in values and param.minimum is not None:
                assert float(values[param.name]) == param.minimum, (engine, param.name)
        parse(spec.SPEC.params, dict(values), engine)  # accepted as they are


def _record(engine, variants, dest, target=None):
    lines = []
    params = {**SMALLEST[engine], "variants": variants}
    if engine == "postgres":
        params["database"] = "contention_test"
    return run_chapter(spec.SPEC, RUNNERS, params, engine=engine, target=target, record_to=str(dest),
                       log=RunLog(lines.append))


def _render(path, tmp_path):
    out = book.execute("lmax-queue", {"recording": str(path)}, output=tmp_path / "out.ipynb")
    missing = referenced_glue(out) - glue_keys(out)
    assert not missing, f"prose refers to values the notebook did not glue: {sorted(missing)}"
    errors = [o for c in json.loads(out.read_text())["cells"] for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, errors


@pytest.mark.live
@pytest.mark.parametrize("variants", ["ring", "naive,skip_locked"])
def test_a_smallest_postgres_run_renders(pg, tmp_path, variants):
    from conftest import TEST_ENV_VAR

    path = _record("postgres", variants, tmp_path / "rec", target=TEST_ENV_VAR)
    _render(path, tmp_path)
    shown = recordings.load_shown(str(path))
    rows = claims.verdicts(shown)
    if "ring" not in variants:  # the ring's claims name the point the recording lacks
        row = rows[rows["claim"] == claims.C["delayed"]]
        assert row["verdict"].iloc[0].startswith("not testable with this recording: ring")


@pytest.mark.live
def test_a_smallest_native_run_of_one_queue_renders(tmp_path):
    path = _record("native", "ring", tmp_path / "rec")
    _render(path, tmp_path)
    rows = claims.verdicts(recordings.load_shown(str(path)))
    row = rows[rows["claim"] == claims.C["ring_1p"]]
    assert row["verdict"].iloc[0].startswith("not testable with this recording"), row["verdict"].iloc[0]


@pytest.mark.live
def test_a_paced_run_keeps_its_schedule(pg, tmp_path):
    """After the sweep, the ring and the queue table again at one rate: half the slower one's delivery, each
    producer never ahead of its schedule, every paced point balanced, and the page's sentence (the book's own
    build renders the reference's paced points)."""
    from conftest import TEST_ENV_VAR

    lines = []
    params = {"sessions": "1", "duration_s": "0.5", "repetitions": "1", "variants": "ring,naive",
              "pushes_per_call": "100", "paced_share": "0.5", "database": "contention_test"}
    path = run_chapter(spec.SPEC, RUNNERS, params, engine="postgres", target=TEST_ENV_VAR,
                       record_to=str(tmp_path / "rec"), log=RunLog(lines.append))
    g = recordings.load(str(path))
    paced = g.by_repetition("paced")
    assert sorted(paced["variant"]) == ["naive", "ring"]
    rate = float(paced["push_rate"].iloc[0])
    flat_out = g.runs[g.runs["sessions"] == 1].groupby("variant")["dequeue_per_s"].median()
    assert rate <= 0.5 * flat_out.min()
    assert (paced["pushed"] / paced["elapsed_s"] <= 1.05 * rate + 1).all()  # never ahead of the schedule
    assert (paced["pushed"] == paced["dequeued"] + paced["backlog"] - paced["backlog_start"] + paced["lost"]).all()
    assert any("on a schedule" in line for line in lines)
    assert "at a fixed push rate" not in tables.paced_sentence(g)
