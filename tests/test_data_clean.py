"""Issue 31 item 16: what is published under data/ names no folder of the machine that recorded it, and every
measured recording was made from a committed tree (its manifest's git commit is not "-dirty").

Text files are read as they are; gzip files (stacks, samples) are read decompressed; zips are listed and read
member by member.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import re
import zipfile
from pathlib import Path

import pytest

ROOT = Path(os.environ.get("CONTENTION_BOOK_ROOT") or Path(__file__).resolve().parents[1]).resolve()
DATA = ROOT / "data"
MACHINE_PATH = re.compile(r"(?<![\w.:/])(?:/root/|/home/|/tmp/|/Users/|/var/folders/|/work/|[A-Za-z]:\\\\Users\\\\)"
                          r"|\.cache/pg\b")


def _texts(path: Path):
    """(name, text) of a data file, gzip and zip members opened; binary files with no text give nothing."""
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    if path.suffix == ".zip":
        with zipfile.ZipFile(io.BytesIO(raw)) as z:
            for member in z.namelist():
                yield f"{path}!{member}", z.read(member).decode("utf-8", "replace")
        return
    if b"\0" in raw[:4096]:
        return
    yield str(path), raw.decode("utf-8", "replace")


def _files():
    return sorted(p for p in DATA.rglob("*") if p.is_file())


def test_no_file_under_data_names_a_machine_path():
    files = _files()
    assert files, f"no files under {DATA}"
    bad = []
    for path in files:
        for name, text in _texts(path):
            for m in MACHINE_PATH.finditer(text):
                line = text[:m.start()].count("\n") + 1
                bad.append(f"{Path(name).relative_to(ROOT) if name.startswith(str(ROOT)) else name}:{line}: "
                           f"{text[max(0, m.start() - 30):m.end() + 30]!r}")
    assert not bad, "\n".join(bad[:40])


def test_no_measured_recording_was_made_from_an_uncommitted_tree():
    manifests = sorted(DATA.glob("*/*/manifest.json"))
    assert manifests
    bad = []
    for manifest in manifests:
        m = json.loads(manifest.read_text(encoding="utf-8"))
        if m.get("kind") != "measured":
            continue
        text = json.dumps(m)
        for dirty in re.findall(r'"[^"]*-dirty"', text):
            bad.append(f"{manifest.relative_to(ROOT)}: {dirty}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("text, found", [("data in /home/me/x/.cache/pg/data", True), ("see /tmp/rec2/x", True),
                                         ("https://example.org/tmp/x and rows/s", False),
                                         ("--record-to data/ghost-cleanup/r1", False)])
def test_the_path_pattern_finds_machine_paths_and_nothing_else(text, found):
    assert bool(MACHINE_PATH.search(text)) is found
