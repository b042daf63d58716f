"""A private PostgreSQL cluster so every reader (and CI) can run a chapter live.

The cluster lives under ``.cache/pg`` in the checkout (or where
``CONTENTION_BOOK_PG_ROOT`` says), listens on 127.0.0.1
only, on a free port, and uses password authentication with a password kept
in a 0600 file there.  Its connection string is handed over through an
environment variable, so it never becomes a notebook parameter.  As root,
PostgreSQL's tools run as the ``postgres`` OS user (initdb refuses root).
"""
from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import shutil
import socket
import subprocess
import time
from pathlib import Path

from . import redaction
from .checkout import repo_root  # not .recording: the run's locks are taken before pandas loads

ENV_VAR = "CONTENTION_BOOK_EMBEDDED_PG"
ROOT_ENV = "CONTENTION_BOOK_PG_ROOT"  # another home for the cluster than .cache/pg
SUPERUSER = "book"


class EmbeddedPostgresError(RuntimeError):
    pass


# Extensions loaded at start when their library is installed: pg_wait_sampling samples wait events inside the
# server (Debian: postgresql-<version>-pg-wait-sampling), so the wait analyses need not poll from a client.
PRELOAD = ("pg_wait_sampling",)


def preload_libraries(bindir: Path) -> list[str]:
    """Which of PRELOAD are installed beside these server binaries (``pg_config --pkglibdir``)."""
    libdir = bindir.parent / "lib"
    pg_config = bindir / "pg_config"
    if pg_config.exists():
        out = subprocess.run([str(pg_config), "--pkglibdir"], capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip():
            libdir = Path(out.stdout.strip())
    return [name for name in PRELOAD if (libdir / f"{name}.so").exists()]


def _bindir() -> Path:
    """The server binaries: PG_BINDIR, Debian's newest version, or pg_ctl on PATH."""
    if os.environ.get("PG_BINDIR"):
        return Path(os.environ["PG_BINDIR"])
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
                        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
                        reverse=True)
    found = shutil.which("pg_ctl")
    if found and (Path(found).parent / "initdb").exists():
        candidates.append(Path(found))
    if not candidates:
        raise EmbeddedPostgresError(
            "no PostgreSQL server binaries found (pg_ctl): install them, e.g. "
            "`apt-get install postgresql postgresql-contrib`"
        )
    return candidates[0].parent


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EmbeddedPostgres:
    def __init__(self, root: Path | None = None, password: str | None = None):
        self.root = Path(root or self.default_root())
        self.data = self.root / "data"
        self.pwfile = self.root / "password"
        self.port: int | None = None
        self._secret = password
        self.bindir = _bindir()
        self._as_postgres = os.geteuid() == 0

    @staticmethod
    def default_root() -> Path:
        """Where the cluster lives: CONTENTION_BOOK_PG_ROOT, else .cache/pg in the checkout."""
        return Path(os.environ.get(ROOT_ENV) or repo_root() / ".cache" / "pg")

    # -- process plumbing ----------------------------------------------------
    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        # Its own session, so a terminal's Ctrl-C does not reach it; and a stop signal to this process lets the
        # step (initdb, pg_ctl start or stop) finish, so the cluster is never left half made or half started.
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
        try:
            out, err = child.communicate()
        except BaseException:
            try:
                child.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                child.kill()
            raise
        proc = subprocess.CompletedProcess(cmd, child.returncode, out, err)
        if check and proc.returncode != 0:
            raise EmbeddedPostgresError(
                f"{args[0]} failed (exit {proc.returncode}): {redaction.redact(proc.stderr.strip()[-2000:])}"
            )
        return proc

    def _chown(self, path: Path) -> None:
        if self._as_postgres:
            shutil.chown(path, "postgres", "postgres")

    @property
    def password(self) -> str:
        if self._secret is None:
            self._secret = self.pwfile.read_text().strip()
        redaction.register(self._secret)
        return self._secret

    # -- lifecycle -----------------------------------------------------------
    def init(self) -> None:
        if (self.data / "PG_VERSION").exists():
            if self._secret is not None and self.pwfile.exists() and self.pwfile.read_text().strip() != self._secret:
                raise EmbeddedPostgresError(f"{self.root}: an existing cluster has another password; remove it first")
            return
        self.root.mkdir(parents=True, exist_ok=True)
        self._chown(self.root)
        secret = self._secret or secrets.token_urlsafe(18)
        self.pwfile.write_text(secret + "\n")
        os.chmod(self.pwfile, 0o600)
        self._chown(self.pwfile)
        self._secret = secret
        redaction.register(secret)
        self._run("initdb", "-D", str(self.data), "-U", SUPERUSER, "--auth=scram-sha-256",
                  f"--pwfile={self.pwfile}", "-E", "UTF8", "--locale=C.UTF-8")

    def running(self) -> bool:
        return self._run("pg_ctl", "status", "-D", str(self.data), check=False).returncode == 0

    def start(self, max_connections: int = 100) -> "EmbeddedPostgres":
        self.init()
        if self.running():
            self.port = int((self.data / "postmaster.pid").read_text().splitlines()[3])
            return self
        self.port = _free_port()
        self.preloaded = preload_libraries(self.bindir)
        opts = (f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.root} "
                f"-c shared_preload_libraries={','.join(self.preloaded)} "
                f"-c max_connections={max(100, int(max_connections))} -c fsync=on")
        log = self.root / "server.log"
        self._run("pg_ctl", "start", "-D", str(self.data), "-w", "-t", "60", "-l", str(log), "-o", opts)
        return self

    def stop(self) -> None:
        if (self.data / "PG_VERSION").exists() and self.running():
            self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "fast", "-w")
        self.owner_file.unlink(missing_ok=True)

    def stop_stale(self) -> bool:
        """Stop what a killed run left of this cluster.  True: a whole cluster, stopped.  False: the run was killed
        while initdb made it (pg_ctl then finds only initdb's single-user bootstrap server, which it cannot stop):
        that initdb and its server are ended here, and the half-made folder must go."""
        r = self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "fast", "-w", check=False)
        if r.returncode == 0:
            self.owner_file.unlink(missing_ok=True)
            return True
        m = re.search(r"single-user server is running \(PID: (\d+)\)", f"{r.stdout}{r.stderr}")
        if not m:
            raise EmbeddedPostgresError(f"pg_ctl stop failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()}")
        # initdb first (killed, it cleans nothing up behind us), then its bootstrap server
        for pid in [*_processes_naming("initdb", str(self.data)), int(m.group(1))]:
            _end_process(pid)
        self.owner_file.unlink(missing_ok=True)
        return False

    # -- which run started it ----------------------------------------------------
    @property
    def owner_file(self) -> Path:
        return self.root / "started_by_run"

    def stale_owner(self) -> int | None:
        """The pid of the run that started this cluster, if that run is gone (killed before it could stop it)."""
        try:
            pid = int(self.owner_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            return None
        return None

    def settle(self, timeout_s: float = 120.0) -> None:
        """Wait for this process's initdb or pg_ctl on this cluster to end, even one whose start was interrupted
        (a signal inside Popen loses the handle, not the child); so what is stopped next is what stays stopped."""
        proc = Path("/proc")
        if not proc.is_dir():
            return
        me, needle = str(os.getpid()), str(self.data).encode()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            busy = []
            for entry in proc.iterdir():
                if not entry.name.isdigit():
                    continue
                try:
                    stat = (entry / "stat").read_text()
                    state, ppid = stat.rsplit(")", 1)[1].split()[:2]
                    if ppid != me:
                        continue
                    if state == "Z":
                        os.waitpid(int(entry.name), os.WNOHANG)
                    elif needle in (entry / "cmdline").read_bytes():
                        busy.append(entry.name)
                except (OSError, ValueError, ChildProcessError):
                    continue
            if not busy:
                return
            time.sleep(0.05)

    def release(self, created: bool) -> None:
        """Undo an interrupted or failed start of a cluster this run asked for: stop it and, if this run made
        it (there was no cluster before), remove it, so the machine is as it was."""
        self.settle()
        self.stop()
        if created:
            shutil.rmtree(self.data, ignore_errors=True)
            for leftover in (self.pwfile, self.root / "server.log"):
                leftover.unlink(missing_ok=True)

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    # -- connecting ----------------------------------------------------------
    def connection_string(self, database: str = "postgres") -> str:
        # CommLog/Debug off: psqlODBC's logs must not collect anything about this session.
        return (f"Driver={{PostgreSQL Unicode}};Server=127.0.0.1;Port={self.port};Database={database};"
                f"Uid={SUPERUSER};Pwd={self.password};CommLog=0;Debug=0;")

    def export(self, var: str = ENV_VAR) -> str:
        """Put the connection string in an environment variable; return the variable's *name*."""
        os.environ[var] = self.connection_string()
        return var

    def server_pids(self) -> list[int]:
        """All processes of the cluster (postmaster and its children), for perf."""
        pid = int((self.data / "postmaster.pid").read_text().splitlines()[0])
        children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
        return [pid, *map(int, children)]


@contextlib.contextmanager
def embedded(var: str = ENV_VAR, stop_after: bool = True, log=print, max_connections: int = 100):
    """Start (or reuse) the embedded cluster for the block; yields the env var name.

    A cluster left running by a run that was killed is stopped first, so
    nothing that run changed (a pinned walwriter, its connections) carries
    over.  One that someone else started is reused and left running.
    """
    pg = EmbeddedPostgres()
    created = not (pg.data / "PG_VERSION").exists()
    was_running = False if created else pg.running()
    stale = pg.stale_owner() if was_running else None
    if stale is not None:
        log(f"[harness] stopping the embedded PostgreSQL that run pid {stale} started and left running "
            "(that run was killed)")
        if not pg.stop_stale():
            log("[harness] that run was killed while it made the cluster: the half-made cluster is removed")
            shutil.rmtree(pg.data, ignore_errors=True)
            created = True
        was_running = False
    owned = False
    try:  # the run owns the cluster from the moment it asks for it: a signal in initdb or pg_ctl start included
        if not was_running:  # claimed before starting: a run killed while the cluster starts is still known
            owned = True
            pg.root.mkdir(parents=True, exist_ok=True)
            pg.owner_file.write_text(f"{os.getpid()}\n")
        pg.start(max_connections=max_connections)
        if not was_running:
            log(f"[harness] embedded PostgreSQL started on 127.0.0.1:{pg.port} (data in {pg.data})")
        # wait until it accepts connections
        deadline = time.monotonic() + 30
        while pg._run("pg_isready", "-h", "127.0.0.1", "-p", str(pg.port), check=False).returncode != 0:
            if time.monotonic() > deadline:
                raise EmbeddedPostgresError("embedded PostgreSQL did not become ready within 30 s")
            time.sleep(0.2)
    except BaseException:
        if owned:
            pg.release(created)
            log("[harness] embedded PostgreSQL start stopped part-way: " + (
                "the cluster it was making is removed" if created else "the cluster is stopped again"))
        raise
    try:
        yield pg.export(var)
    finally:
        if stop_after and owned:
            pg.stop()
            log("[harness] embedded PostgreSQL stopped")


def sweep_killed(prefix: str, log=print) -> list[Path]:
    """Stop and remove the temporary clusters (``<tmp>/<prefix>*/pg``) whose run was killed before it could.

    A test session or a benchmark makes its cluster in a fresh temporary folder and records its own pid there
    (``claim_temporary``); a SIGTERM or SIGKILL skips its teardown, and the cluster would run on.  The next one
    to start sweeps what such runs left: a folder whose recorded run is alive (a parallel test worker) is kept.
    """
    import tempfile

    swept = []
    for folder in sorted(Path(tempfile.gettempdir()).glob(f"{prefix}*")):
        pg = EmbeddedPostgres(root=folder / "pg")
        stale = pg.stale_owner()
        if stale is None:
            continue
        try:
            if (pg.data / "PG_VERSION").exists() and pg.running():
                pg.stop_stale()
        except EmbeddedPostgresError as exc:
            log(f"[harness] {folder}: could not stop the cluster run pid {stale} left ({exc}); left in place")
            continue
        shutil.rmtree(folder, ignore_errors=True)
        log(f"[harness] removed {folder}: its run (pid {stale}) was killed and left its cluster behind")
        swept.append(folder)
    return swept


def claim_temporary(pg: "EmbeddedPostgres") -> None:
    """Record this process as the owner of a cluster in a temporary folder, before it starts (see sweep_killed)."""
    pg.root.mkdir(parents=True, exist_ok=True)
    pg.owner_file.write_text(f"{os.getpid()}\n")


def _processes_naming(program: str, argument: str) -> list[int]:
    """Pids of running ``program`` processes whose command line holds ``argument`` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if args and Path(args[0].decode(errors="replace")).name == program and \
                any(argument in a.decode(errors="replace") for a in args[1:]):
            found.append(int(entry.name))
    return found


def _end_process(pid: int, grace_s: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after ``grace_s``; a process already gone is fine."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
