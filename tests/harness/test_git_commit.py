"""The provenance a recording carries: the commit, and "-dirty" only when the run's code differs from it."""
from __future__ import annotations

import subprocess

import pytest

from contention_book.harness import live


def _git(root, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    (tmp_path / "src").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "src" / "code.py").write_text("x = 1\n")
    (tmp_path / "data" / "old.csv").write_text("a\n1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "start")
    monkeypatch.setattr(live.rec, "repo_root", lambda: tmp_path)
    return tmp_path


def test_a_clean_tree_names_its_commit(repo):
    commit = live.git_commit()
    assert commit and len(commit) == 12 and not commit.endswith("-dirty")


def test_recordings_written_under_data_do_not_make_the_code_dirty(repo):
    (repo / "data" / "old.csv").write_text("a\n2\n")
    (repo / "data" / "new").mkdir()
    (repo / "data" / "new" / "runs.csv").write_text("a\n")
    assert not live.git_commit().endswith("-dirty")


@pytest.mark.parametrize("change", ["edit", "untracked"])
def test_changed_or_new_code_is_dirty(repo, change):
    if change == "edit":
        (repo / "src" / "code.py").write_text("x = 2\n")
    else:
        (repo / "src" / "new.py").write_text("y = 1\n")
    assert live.git_commit().endswith("-dirty")
