"""Sphinx started before the chapters are written waits for each, and renders what was written last."""
import sys
import time

from contention_book.harness.sphinx_gate import GatedSphinx


def _project(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text("extensions = ['contention_book.harness.sphinx_gate']\n")
    (src / "index.rst").write_text("Index\n=====\n\n.. toctree::\n\n   early\n   late\n")
    (src / "early.rst").write_text("Early\n=====\n\nWritten before Sphinx started.\n")
    (src / "late.rst").write_text("Late\n====\n\nA stand-in.\n")
    return src, [sys.executable, "-m", "sphinx", "-q", "-W", "-b", "html", str(src), str(tmp_path / "out")]


def test_a_pending_page_is_read_after_it_is_written_not_before(tmp_path):
    src, command = _project(tmp_path)
    gate = GatedSphinx(["late"], command)
    gate.start()
    time.sleep(1.5)  # Sphinx has started, read what it could, and waits for "late"
    (src / "late.rst").write_text("Late\n====\n\nThe page as the chapter wrote it.\n")
    gate.written("late")
    assert gate.finish() == 0
    html = (tmp_path / "out" / "late.html").read_text()
    assert "The page as the chapter wrote it." in html and "A stand-in" not in html
    assert "Written before Sphinx started." in (tmp_path / "out" / "early.html").read_text()


def test_names_told_before_the_start_are_passed_on_and_a_gone_builder_does_not_hang_sphinx(tmp_path):
    src, command = _project(tmp_path)
    (src / "late.rst").write_text("Late\n====\n\nWritten before the start.\n")
    gate = GatedSphinx(["late", "early"], command)
    gate.written("late")  # before start(): kept, then sent
    gate.start()
    started = time.monotonic()
    assert gate.finish() == 0  # "early" was never told: the end of standard input lets Sphinx go on
    assert time.monotonic() - started < 60
    assert "Written before the start." in (tmp_path / "out" / "late.html").read_text()


def test_without_pending_pages_the_extension_changes_nothing(tmp_path):
    import subprocess

    src, command = _project(tmp_path)
    proc = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "A stand-in." in (tmp_path / "out" / "late.html").read_text()


def test_the_gated_child_writes_on_every_cpu_once_reading_is_done(monkeypatch):
    """Reading stays serial (the gate waits for each chapter); once every page is read the chapters are done, and
    the pages are written by two processes where there are two CPUs (Sphinx decides that after env-updated)."""
    from types import SimpleNamespace

    from contention_book.harness import sphinx_gate

    app = SimpleNamespace(parallel=1)
    monkeypatch.setattr(sphinx_gate.os, "cpu_count", lambda: 2)
    sphinx_gate._write_in_parallel(app, None)
    assert app.parallel == 2
    monkeypatch.setattr(sphinx_gate.os, "cpu_count", lambda: 1)
    sphinx_gate._write_in_parallel(app, None)
    assert app.parallel == 1
