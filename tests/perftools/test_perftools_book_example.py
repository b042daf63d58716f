"""The perftools page's worked example is run on the shipped recording when the book is built: its
counts are the data's, and the page shows the commands that made them."""
from __future__ import annotations

import json
import shlex
from pathlib import Path

from contention_book.harness import book_pages
from contention_book.harness.recording import data_root, repo_root
from contention_book.perftools import load

PAGE = repo_root() / "book" / "perftools.md"


def test_example_outputs_come_from_the_recording(tmp_path):
    written = book_pages.write_perftools_pages(tmp_path)
    assert {p.name for p in written} == set(book_pages.PERFTOOLS_EXAMPLES) | {"perftools-speed.md"}
    stacks = data_root() / book_pages.PERFTOOLS_EXAMPLE_STACKS
    diff = (tmp_path / "perftools-diff.md").read_text()
    for label, name in (("A", "hash_partitioned"), ("B", "sequential")):
        p = load(stacks / f"{name}.folded.gz", process_root=True)
        head = (f"{label}: $S/{name}.folded.gz [folded]: {len(p.samples):,} sample rows, {p.n_stacks:,} distinct "
                f"stacks, total weight {p.total_weight:,.0f} samples")
        assert head in diff, (head, diff)
    callers = (tmp_path / "perftools-callers.md").read_text()
    assert "postgres!LWLockRelease" in callers and "100.00" in callers
    for text in (diff, callers):
        assert str(repo_root()) not in text and "/work/" not in text  # no machine path on a page


def test_page_shows_the_commands_it_runs_and_no_typed_outputs():
    page = PAGE.read_text()
    assert "at the time of writing" not in page
    for name, argv in book_pages.PERFTOOLS_EXAMPLES.items():
        assert f"```{{include}} chapters/{name}" in page
        assert "perftools " + " ".join(shlex.quote(a) if "!" in a else a for a in argv) in page, argv
    assert "```{include} chapters/perftools-speed.md" in page


def test_speed_table_from_the_benchmark_result(tmp_path, monkeypatch):
    res = {"date": "2026-11-26", "repeat": 5, "machine": "a 2-CPU x86_64 machine",
           "goals": [{"goal": "collapse / inferno-collapse-perf, diverse capture", "figure": 0.61, "limit": 0.8,
                      "ok": True}]}
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / book_pages.PERFTOOLS_BENCH).write_text(json.dumps(res))
    monkeypatch.setattr(book_pages, "repo_root", lambda: tmp_path)
    monkeypatch.setattr(book_pages, "data_root", lambda: data_root())
    book_pages.write_perftools_pages(tmp_path / "out")
    table = (tmp_path / "out" / "perftools-speed.md").read_text()
    assert "| collapse / inferno-collapse-perf, diverse capture | 0.61× | ≤ 0.80× | met |" in table
    assert "median of 5 interleaved runs" in table and "2026-11-26" in table


def test_committed_benchmark_result_has_every_goal():
    bench = Path(repo_root()) / book_pages.PERFTOOLS_BENCH
    res = json.loads(bench.read_text())
    goals = {g["goal"] for g in res["goals"]}
    assert {"collapse peak RSS / file, diverse capture", "summary / pyarrow read_csv, diverse CSV",
            "summary peak RSS / file, diverse CSV", "collapse peak RSS, capture x3 / capture x1",
            "collapse / inferno-collapse-perf, diverse capture"} <= goals
    assert res["repeat"] >= 3 and res["size_mb"] >= 200


def test_the_builds_own_log_lines_never_reach_the_example(tmp_path, monkeypatch):
    """The page once showed "[book] executing notebooks/…": the chapters' threads print while the example's output is
    captured (redirect_stdout is process-wide)."""
    import contention_book.perftools.__main__ as cli

    real = cli.main

    def noisy(argv):
        print("[book] executing notebooks/04-last-page-insert.ipynb -> book/chapters/04-last-page-insert.ipynb")
        return real(argv)

    monkeypatch.setattr(cli, "main", noisy)
    book_pages.write_perftools_pages(tmp_path)
    for name in book_pages.PERFTOOLS_EXAMPLES:
        text = (tmp_path / name).read_text()
        assert "[book]" not in text and "$S/" in text


def test_the_examples_run_again_only_when_what_they_depend_on_changes(tmp_path, monkeypatch):
    """An unchanged build reuses the examples' pages (they cost 1.2 s a build); a changed input runs them again."""
    import contention_book.perftools.__main__ as cli

    real, runs = cli.main, []

    def counted(argv):
        runs.append(argv[0])
        return real(argv)

    monkeypatch.setattr(cli, "main", counted)
    book_pages.write_perftools_pages(tmp_path)
    assert len(runs) == len(book_pages.PERFTOOLS_EXAMPLES)
    book_pages.write_perftools_pages(tmp_path)
    assert len(runs) == len(book_pages.PERFTOOLS_EXAMPLES)  # nothing changed: not run again
    (tmp_path / "perftools-diff.md").unlink()
    book_pages.write_perftools_pages(tmp_path)
    assert len(runs) == 2 * len(book_pages.PERFTOOLS_EXAMPLES) and (tmp_path / "perftools-diff.md").exists()
    real_stamp = book_pages._perftools_examples_stamp
    monkeypatch.setattr(book_pages, "_perftools_examples_stamp", lambda stacks: real_stamp(stacks) + "-changed")
    book_pages.write_perftools_pages(tmp_path)
    assert len(runs) == 3 * len(book_pages.PERFTOOLS_EXAMPLES)


def test_the_stamp_follows_the_inputs_and_perftools_code(tmp_path, monkeypatch):
    stacks = data_root() / book_pages.PERFTOOLS_EXAMPLE_STACKS
    before = book_pages._perftools_examples_stamp(stacks)
    assert before == book_pages._perftools_examples_stamp(stacks)
    copy = tmp_path / "stacks"
    copy.mkdir()
    for f in stacks.glob("*.folded.gz"):
        (copy / f.name).write_bytes(f.read_bytes())
    assert book_pages._perftools_examples_stamp(copy) == before  # the same bytes elsewhere: the same pages
    (copy / "sequential.folded.gz").write_bytes(b"changed")
    assert book_pages._perftools_examples_stamp(copy) != before
