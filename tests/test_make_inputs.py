"""Values given to make are data: never run by a shell, never echoed, a connection string never printed."""
import os
import subprocess

import pytest

from contention_book.harness.recording import repo_root

pytestmark = pytest.mark.slow


def make(*args, env=None):
    return subprocess.run(["make", "--no-print-directory", *args], cwd=repo_root(), capture_output=True, text=True,
                          timeout=300, env={**os.environ, **(env or {})})


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
