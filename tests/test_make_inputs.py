"""Values given to make are data: never run by a shell, never echoed, a connection string never printed."""
import os
import subprocess
from pathlib import Path

import pytest

from contention_book.harness.recording import repo_root

pytestmark = pytest.mark.slow


def make(*args, env=None):
    return subprocess.run(["make", "--no-print-directory", *args], cwd=repo_root(), capture_output=True, text=True,
                          timeout=300, env={**os.environ, **(env or {})})


def make_merged(*args, env=None):
    """make with stdout and stderr in one stream, in the order a terminal shows them; (exit status, lines)."""
    out = subprocess.run(["make", "--no-print-directory", *args], cwd=repo_root(), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=300, env={**os.environ, **(env or {})})
    return out.returncode, [line for line in out.stdout.splitlines() if line.strip()]


def assert_refusal_is_last(status, lines, *words):
    """Non-zero for scripts; the refusal is the last line; make's own "Error N" nowhere."""
    assert status != 0, lines
    assert lines and all(w in lines[-1] for w in words), lines
    assert not any("Error " in line and line.startswith("make") for line in lines), lines
    assert "Traceback" not in "\n".join(lines), lines


def test_a_connection_string_as_target_is_refused_without_being_printed():
    secret = "Sup3r-S3cret-Pw"
    out = make("chapter", "CH=ghost-cleanup", "SOURCE=live", "ENGINE=postgres", f"TARGET=Driver=x;Pwd={secret}")
    assert out.returncode != 0
    assert "looks like a connection string" in out.stdout + out.stderr
    assert secret not in out.stdout + out.stderr


def test_shell_metacharacters_in_params_stay_data(tmp_path):
    marker = tmp_path / "ran"
    out = make("chapter", "CH=ghost-cleanup", "SOURCE=live", "ENGINE=postgres",
               f"PARAMS=database=lab;touch {marker}")
    assert not marker.exists(), "a value reached a shell"
    assert out.returncode != 0 and "expected NAME=VALUE" in out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr


def test_a_recording_path_with_a_quote_is_a_path(tmp_path):
    odd = tmp_path / "o'brien-recording"
    out = make("chapter", "CH=ghost-cleanup", f"RECORDING={odd}")
    assert out.returncode != 0
    assert "o'brien-recording" in out.stdout + out.stderr and "no manifest.json found" in out.stdout + out.stderr


def test_a_bad_value_is_refused_before_anything_starts():
    out = make("chapter", "CH=ghost-cleanup", "SOURCE=live", "ENGINE=postgres", "PARAMS=database=lab;DROP updates=abc",
               env={"CONTENTION_BOOK_PG_ROOT": "/nonexistent/never-created"})
    text = out.stdout + out.stderr
    assert out.returncode != 0 and "Traceback" not in text
    assert "parameter" in text and ("database='lab;DROP'" in text or "updates='abc'" in text)
    assert "embedded PostgreSQL started" not in text and not os.path.exists("/nonexistent/never-created")


def test_every_refusal_is_the_last_line_and_make_adds_no_error_line(tmp_path):
    secret = "Sup3r-S3cret-Pw"
    status, lines = make_merged("chapter", "CH=ghost-cleanup", "SOURCE=live", "ENGINE=postgres",
                                f"TARGET=Driver=x;Pwd={secret}")
    assert_refusal_is_last(status, lines, "looks like a connection string")
    assert secret not in "\n".join(lines)
    status, lines = make_merged("record", "CH=ghost-cleanup", "ENGINE=postgres", f"TARGET=Driver=x;Pwd={secret}")
    assert_refusal_is_last(status, lines, "looks like a connection string")
    status, lines = make_merged("chapter", "CH=no-such-chapter")
    assert_refusal_is_last(status, lines, "unknown chapter 'no-such-chapter'", "ghost-cleanup")
    status, lines = make_merged("chapter")
    assert_refusal_is_last(status, lines, "give CH=<chapter>")
    status, lines = make_merged("chapter", "CH=ghost-cleanup", "PARAMS=a b=")
    assert_refusal_is_last(status, lines, "expected NAME=VALUE")


@pytest.mark.parametrize("source", ["recorded", "live"])
def test_an_unknown_parameter_is_named_unknown_with_the_closest_name_whatever_the_source(source):
    live = ["SOURCE=live", "ENGINE=postgres"] if source == "live" else []
    status, lines = make_merged("chapter", "CH=ghost-cleanup", *live, "PARAMS=updatez=5",
                                env={"CONTENTION_BOOK_PG_ROOT": "/nonexistent/never-created"})
    assert_refusal_is_last(status, lines, "unknown parameter 'updatez'", "did you mean 'updates'?")
    assert not os.path.exists("/nonexistent/never-created")


def test_a_known_live_parameter_on_a_recorded_chapter_says_it_needs_a_live_run():
    status, lines = make_merged("chapter", "CH=ghost-cleanup", "PARAMS=updates=5")
    assert_refusal_is_last(status, lines, "updates applies to live runs only")


@pytest.mark.parametrize("where", ["under a file", "a read-only file system"])
def test_record_to_that_cannot_be_written_is_refused_up_front_saying_why(tmp_path, where):
    if where == "under a file":
        (tmp_path / "plain-file").write_text("x")
        record_to, why = tmp_path / "plain-file" / "rec", "is a file, not a folder"
    else:
        record_to, why = Path("/proc/self/contention-book-rec"), "cannot write in /proc/self"
    status, lines = make_merged("chapter", "CH=ghost-cleanup", "SOURCE=live", "ENGINE=postgres",
                                f"RECORD_TO={record_to}", env={"CONTENTION_BOOK_PG_ROOT": "/nonexistent/never-created"})
    assert_refusal_is_last(status, lines, "RECORD_TO", str(record_to), why, "expected a folder this user can write")
    assert not os.path.exists("/nonexistent/never-created")


def test_a_refusal_the_runner_finds_later_is_quoted_last(tmp_path):
    """The runner's own refusal (here: its recording appeared after the book's checks) ends make's output too."""
    from contention_book.harness.launch import LiveRunFailed, run_live

    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "manifest.json").write_text("{}")
    with pytest.raises(LiveRunFailed) as err:
        run_live("ghost-cleanup", "postgres", params={"updates": "5"}, record_to=str(taken))
    assert "refused (exit 2)" in str(err.value) and "already exists" in str(err.value)


def test_a_word_in_a_recordings_number_column_ends_make_chapter_naming_file_line_and_column(tmp_path):
    """The chapter renders a damaged copy of its reference recording: the first cell that loads it names the
    file, line and column (never a KeyError or TypeError further down), and that is make's last line."""
    import csv
    import hashlib
    import json
    import shutil

    from contention_book.harness.recording import data_root

    dest = tmp_path / "damaged"
    shutil.copytree(data_root() / "latch-fairness" / "measured-native-reference", dest)
    with open(dest / "runs.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    rows[1][rows[0].index("jain_index")] = "lots"
    with open(dest / "runs.csv", "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)
    manifest = json.loads((dest / "manifest.json").read_text())
    for entry in manifest["files"]:
        if entry["path"] == "runs.csv":
            entry["sha256"] = hashlib.sha256((dest / "runs.csv").read_bytes()).hexdigest()
            entry["bytes"] = (dest / "runs.csv").stat().st_size
    (dest / "manifest.json").write_text(json.dumps(manifest))
    status, lines = make_merged("chapter", "CH=latch-fairness", f"RECORDING={dest}")
    assert_refusal_is_last(status, lines, "RecordingError", "file runs.csv line 2 column jain_index: 'lots'")
    assert not any("KeyError" in line or "TypeError" in line for line in lines), lines


def test_page_sends_the_executed_chapter_to_a_file_and_leaves_the_book_alone(tmp_path):
    """PAGE=: the page to the reader's file, no HTML, and the book's own executed chapter untouched (the live
    signal tests render through it while the browser tests read the built book).  In the book build's work unit
    (tests/conftest.py): the build itself rewrites that page."""
    from contention_book.harness import book

    assert book.argv_from_make({"CH": "ghost-cleanup", "PAGE": "x.ipynb"})[-3:] == ["--output", "x.ipynb", "--no-html"]
    assert "--no-html" not in book.argv_from_make({"CH": "ghost-cleanup"})
    own = book.executed_path(book.notebooks()["latch-fairness"])
    before = own.stat().st_mtime_ns if own.exists() else None
    page = tmp_path / "mine.ipynb"
    status, lines = make_merged("chapter", "CH=latch-fairness", f"PAGE={page}")
    assert status == 0, lines
    assert page.exists() and not any("[book] HTML:" in line for line in lines), lines
    assert (own.stat().st_mtime_ns if own.exists() else None) == before
