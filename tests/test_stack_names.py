"""Every measured PostgreSQL recording's CPU stacks name their frames (issue 34).

A stack whose frames read ``postgres![unknown]`` says where the time went only as far as its last named
caller; chapter 4's worked example once opened with "[unknown], about 44% of the samples".  The goal, per
stacks file (samples counted as stored, the process as the first frame): samples whose leaf frame is
``[unknown]`` at most 5%, samples with any ``[unknown]`` frame at most 10%.  Off-CPU and wake-up stacks
(``*.offcpu-folded.gz``, ``*.wakeup-folded.gz``) are not CPU profiles and are not counted here.

"Any frame" counts the frames from the process's own entry point (``PostgresMain``, ``AuxiliaryProcessMain``,
``BackgroundWorkerMain``) down.  What lies above it is the postmaster's stack at the moment it forked the
process, which the child inherits: PostgreSQL 15's postmaster starts the walwriter from its SIGCHLD handler
(``reaper``), so the walwriter's stacks begin ``[unknown];__restore_rt;reaper;[unknown];AuxiliaryProcessMain``:
two unnamed frames of the fork, none of the walwriter's work.  The references were re-made on
``make pg-named``'s server (PG_BINDIR=.cache/pg15-named/bin scripts/remake_references.py ...).
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data"
LEAF_MAX, ANY_MAX = 0.05, 0.10
ENTRY_POINTS = ("PostgresMain", "AuxiliaryProcessMain", "BackgroundWorkerMain")


def _stacks_files() -> list[Path]:
    out = []
    for manifest in sorted(DATA.glob("*/*/manifest.json")):
        m = json.loads(manifest.read_text())
        if m.get("kind") != "measured" or m.get("engine", {}).get("name") != "postgres":
            continue
        out += sorted((manifest.parent / "stacks").glob("*.folded.gz"))
    return out


def _own(frames: list[str]) -> list[str]:
    """The frames from the process's own entry point down (all of them when none is on the stack)."""
    for i, fr in enumerate(frames):
        if fr.split("!")[-1] in ENTRY_POINTS:
            return frames[i:]
    return frames


def unknown_shares(path: Path) -> tuple[float, float, float]:
    """(samples, share whose leaf is [unknown], share with any [unknown] frame from the process's entry point
    down) of a folded file."""
    total = leaf = any_ = 0.0
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            stack, _, w = line.rstrip("\n").rpartition(" ")
            if not stack:
                raise AssertionError(f"{path}, line {n}: expected 'frame;frame;... COUNT'; found {line!r}")
            frames = stack.split(";")[1:]  # the first frame is the process
            weight = float(w)
            total += weight
            if frames and frames[-1].endswith("[unknown]"):
                leaf += weight
            if any(fr.endswith("[unknown]") for fr in _own(frames)):
                any_ += weight
    return total, (leaf / total if total else 0.0), (any_ / total if total else 0.0)


FILES = _stacks_files()


def test_there_are_postgres_stacks_to_check():
    assert FILES, f"no measured PostgreSQL recording under {DATA} has stacks/*.folded.gz"


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parts[-4]}/{p.parts[-3]}/{p.name}" for p in FILES])
def test_stacks_name_their_frames(path: Path):
    total, leaf, any_ = unknown_shares(path)
    assert total > 0, f"{path}: no samples"
    assert leaf <= LEAF_MAX and any_ <= ANY_MAX, (
        f"{path}: {leaf:.1%} of {total:,.0f} samples end in an [unknown] frame (at most {LEAF_MAX:.0%}) and "
        f"{any_:.1%} have one anywhere (at most {ANY_MAX:.0%})")


def test_the_counting_itself(tmp_path):
    p = tmp_path / "x.folded.gz"
    p.write_bytes(gzip.compress(b"postgres (1);main;postgres![unknown] 3\npostgres (1);main;postgres![unknown];f 1\n"
                                b"postgres (1);main;g 6\n"))
    assert unknown_shares(p) == (10.0, 0.3, 0.4)
    # above the process's entry point: the postmaster's frames at the fork, not counted; below it: counted
    q = tmp_path / "w.folded.gz"
    q.write_bytes(gzip.compress(b"postgres (2);[unknown];reaper;postgres![unknown];postgres!AuxiliaryProcessMain;"
                                b"postgres!WalWriterMain 8\npostgres (2);postgres!AuxiliaryProcessMain;"
                                b"postgres![unknown];WaitLatch 2\n"))
    assert unknown_shares(q) == (10.0, 0.0, 0.2)
