"""Every published recording is exactly what its chapter's published.py writes: same files, same bytes."""
import json

import pytest

from contention_book.chapters import PACKAGES, package
from contention_book.harness.recording import data_root

CASES = [(chapter, rid) for chapter in sorted(PACKAGES)
         for rid in package(chapter, "published").RECORDINGS]


def test_every_chapter_regenerates_every_published_recording_it_shows():
    for chapter in PACKAGES:
        spec = package(chapter, "spec").SPEC
        assert set(spec.published) <= set(package(chapter, "published").RECORDINGS), chapter


@pytest.mark.parametrize("chapter, rid", CASES)
def test_regenerating_reproduces_the_committed_checksums(tmp_path, chapter, rid):
    package(chapter, "published").RECORDINGS[rid](tmp_path / rid)
    fresh = json.loads((tmp_path / rid / "manifest.json").read_text())
    committed = json.loads((data_root() / chapter / rid / "manifest.json").read_text())
    assert {f["path"]: f["sha256"] for f in fresh["files"]} == {f["path"]: f["sha256"] for f in committed["files"]}
    for key in ("citation", "engine", "host", "parameters", "title", "notes", "status"):
        assert fresh.get(key) == committed.get(key), key
