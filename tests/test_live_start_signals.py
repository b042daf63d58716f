"""A stop signal at any moment of the embedded cluster's start leaves the machine as it was.

The run owns the cluster from the moment it asks for it: a signal inside initdb or ``pg_ctl start`` lets that
step finish, then the run stops the cluster again (and removes it, if the run was the one making it).  Signals go
(1) to ``make chapter ... SOURCE=live ENGINE=postgres``'s process group at fixed instants after it starts, as a
terminal's Ctrl-C does, and (2) straight to the runner at the moment initdb or ``pg_ctl start`` is running.
After each: no process of the run is left, no postgres on its cluster, no recording, and the cluster's home
holds what it held before.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from contention_book.harness.recording import repo_root

pytestmark = [pytest.mark.live, pytest.mark.slow]

LONG = ["updates=400000", "capture_stacks=false", "variants=baseline", "repetitions=1"]


@pytest.fixture
def home():
    where = Path(tempfile.mkdtemp(prefix="contention-book-sig-"))
    os.chmod(where, 0o755)  # the postgres OS user must reach the cluster under it
    yield where
    from contention_book.harness.embedded_pg import EmbeddedPostgres

    if (where / "pg" / "data" / "PG_VERSION").exists():
        EmbeddedPostgres(root=where / "pg").stop()
    shutil.rmtree(where, ignore_errors=True)


def _env(home: Path) -> dict:
    return {**os.environ, "CONTENTION_BOOK_PG_ROOT": str(home / "pg"), "CONTENTION_BOOK_QUIET_WAIT_S": "0"}


def _processes_naming(text: str) -> list[str]:
    """'pid cmdline' of every live process whose command line or environment names ``text``."""
    found = []
    needle = text.encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or proc.name == str(os.getpid()):
            continue
        try:
            if (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                continue
            cmd = (proc / "cmdline").read_bytes()
            if needle in cmd or needle in (proc / "environ").read_bytes():
                words = cmd.replace(b"\0", b" ").decode(errors="replace").strip()
                found.append(f"{proc.name} {words}")
        except (OSError, IndexError):
            continue
    return found


def _snapshot(root: Path) -> dict[str, bytes | None]:
    """What the cluster's home holds that a run could change: its files (the lock file aside) and the cluster's
    identity (PG_VERSION, password); the data files themselves change whenever PostgreSQL runs."""
    if not root.exists():
        return {}
    out: dict[str, bytes | None] = {p.name: None for p in root.iterdir() if p.name not in ("run.lock", "server.log")}
    for name in ("password", "data/PG_VERSION"):
        if (root / name).exists():
            out[name] = (root / name).read_bytes()
    return out


def _assert_as_it_was(home: Path, before: dict, out: str) -> None:
    root = home / "pg"
    deadline = time.monotonic() + 10  # a process that is exiting is given a moment
    while _processes_naming(str(root)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _processes_naming(str(root)), (_processes_naming(str(root)), out)
    assert not (root / "data" / "postmaster.pid").exists(), out
    assert not (root / "started_by_run").exists(), out
    if "[harness] embedded PostgreSQL started" in out:  # the signal came after the start: the run's cluster, made
        assert (root / "data" / "PG_VERSION").exists(), out  # and used, is kept stopped for the next run
    else:
        assert _snapshot(root) == before, (sorted(_snapshot(root)), sorted(before), out)
    assert not (home / "rec").exists() or "incomplete" in (home / "rec" / "manifest.json").read_text()
    assert not list(home.glob(".rec.*.partial")), out
    assert "Traceback" not in out, out


def _signal_group_at(proc: subprocess.Popen, at_s: float, sig: int, started: float) -> None:
    time.sleep(max(0.0, started + at_s - time.monotonic()))
    assert proc.poll() is None, proc.stdout.read()
    os.killpg(proc.pid, sig)


# Through make, at fixed instants after it starts: Python's start-up, the book's own checks, the runner's start,
# initdb, pg_ctl start and the wait for connections all fall somewhere in the first seconds.
INSTANTS = [(0.3, signal.SIGINT), (0.8, signal.SIGTERM), (1.4, signal.SIGINT), (2.0, signal.SIGTERM),
            (2.6, signal.SIGINT), (3.2, signal.SIGTERM)]


@pytest.mark.parametrize("at_s, sig", INSTANTS, ids=[f"{s.name}-at-{t}s" for t, s in INSTANTS])
def test_a_signal_in_the_first_seconds_of_make_chapter_leaves_nothing(home, at_s, sig):
    before = _snapshot(home / "pg")
    started = time.monotonic()
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "chapter", "CH=ghost-cleanup", "SOURCE=live", "ENGINE=postgres",
         f"RECORD_TO={home / 'rec'}", f"PARAMS={' '.join(LONG)}"],
        cwd=repo_root(), env=_env(home), start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
    _signal_group_at(proc, at_s, sig, started)
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode != 0, out
    _assert_as_it_was(home, before, out)
    assert not list(Path(tempfile.gettempdir()).glob(f"contention-book-make-{proc.pid}.outcome"))


def _runner(home: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "contention_book.run", "ghost-cleanup", "--engine", "postgres", "--record-to",
           str(home / "rec"), *[a for p in LONG for a in ("--param", p)]]
    return subprocess.Popen(cmd, env=_env(home), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait_for_step(proc: subprocess.Popen, root: Path, words: tuple[str, ...], timeout: float = 120) -> None:
    """Until a child of the run on this cluster whose command line holds every one of ``words`` is running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the run ended before {' '.join(words)} ran:\n{proc.stdout.read()}"
        if any(all(w in line.split() or any(t.endswith("/" + w) for t in line.split()) for w in words)
               for line in _processes_naming(str(root / "data"))):
            return
        time.sleep(0.005)
    raise AssertionError(f"{' '.join(words)} never ran")


STEPS = [("initdb", ("initdb",), False), ("pg_ctl start", ("pg_ctl", "start"), False),
         ("pg_ctl start, cluster made earlier", ("pg_ctl", "start"), True)]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
@pytest.mark.parametrize("step, words, made_before", STEPS, ids=[s[0] for s in STEPS])
def test_a_signal_inside_initdb_or_pg_ctl_start_leaves_nothing(home, step, words, made_before, sig):
    if made_before:  # a stopped cluster the run did not make: it must stay, stopped and unchanged
        from contention_book.harness.embedded_pg import EmbeddedPostgres

        EmbeddedPostgres(root=home / "pg").init()
    before = _snapshot(home / "pg")
    proc = _runner(home)
    _wait_for_step(proc, home / "pg", words)
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode == 128 + sig, out
    assert "start stopped part-way" in out, out
    _assert_as_it_was(home, before, out)
    again = subprocess.run([sys.executable, "-m", "contention_book.run", "ghost-cleanup", "--engine", "postgres",
                            "--record-to", str(home / "again"), "--param", "updates=500", "--param",
                            "capture_stacks=false", "--param", "variants=baseline", "--param", "cleanup_wait_s=0",
                            "--param", "repetitions=1"], env=_env(home), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr  # and the next run needs no manual step
