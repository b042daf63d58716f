"""Chapter 3: ghost cleanup under row versioning (document 002, Paul White 2024).

A one-row table whose key is updated N times, one transaction each.  Under
locking read committed the deleted key becomes a ghost that the background
task removes almost at once; under RCSI it is a *version ghost* that nobody
may remove while an older transaction could need it, and every later update
has to step over it.  The k-th update skips the k-1 ghosts before it, so the
work grows with N²/2.  PostgreSQL's analogue: dead tuples that a held-back
xmin horizon keeps from being pruned.

This module runs the variants live (SQL Server or PostgreSQL), writes a
recording, and turns any recording of this chapter into the frames and
figures the notebook shows.
"""
from __future__ import annotations

import contextlib
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from harness import recording as rec
from harness import workloads
from harness.driver import run_sessions
from harness.guard import Change, StateGuard
from harness.live import default_destination, invocation, live_target, measured_writer
from harness.targets import Target, check_identifier, ensure_own_database, major_version
from harness.sqlserver_dmv import trace_flag_change

CHAPTER = "ghost-cleanup"
NOTEBOOK = "03-ghost-cleanup.ipynb"
PUBLISHED = ("published-white-2024-sql2019", "published-white-2024-sql2022")
DEFAULT_MEASURED = "measured-postgres-reference"

VARIANTS = {
    "postgres": ("baseline", "open_snapshot"),
    "sqlserver": ("read_committed", "rcsi", "rcsi_open_txn", "rcsi_open_txn_tf7006"),
}
BASELINE = {"postgres": "baseline", "sqlserver": "read_committed"}
LABELS = {
    "read_committed": "read committed (locking)",
    "rcsi": "RCSI",
    "rcsi_open_txn": "RCSI + open RCSI transaction",
    "rcsi_open_txn_tf7006": "RCSI + open transaction, TF 7006",
    "baseline": "no other activity",
    "open_snapshot": "open REPEATABLE READ snapshot",
}

RUNS_COLUMNS = ("variant", "sessions", "elapsed_s", "operations", "throughput")
CURVE_COLUMNS = ("variant", "updates_done", "elapsed_s", "us_per_update")
INDEX_COLUMNS = ("variant", "phase", "level", "pages", "used_pct", "avg_size", "rows", "ghosts", "versions",
                 "ghost_versions")
RELATION_COLUMNS = ("variant", "phase", "relation", "pages", "live_tuples", "dead_tuples")
COUNTER_COLUMNS = ("variant", "counter", "per_second")

FILES = {
    "runs": "runs.csv",
    "curve": "samples/update_rate.csv",
    "index": "dmv/index_physical_stats.csv",
    "relation": "dmv/relation_stats.csv",
    "counters": "dmv/perf_counters.csv",
}


# =============================================================================
# Live runs
# =============================================================================
def chunk_sizes(updates: int, chunk: int) -> list[int]:
    """Split ``updates`` into chunks of ``chunk`` (the last one shorter)."""
    if updates < 1 or chunk < 1:
        raise ValueError(f"updates and chunk must be positive, got updates={updates}, chunk={chunk}")
    full, rest = divmod(updates, chunk)
    return [chunk] * full + ([rest] if rest else [])


def curve_from_timeline(variant: str, timeline: pd.DataFrame, chunks: Sequence[int]) -> pd.DataFrame:
    """Per-chunk rows of the slowdown curve: when it ended, and µs per update in it."""
    tl = timeline.sort_values("op").reset_index(drop=True)
    sizes = np.asarray([chunks[int(op)] for op in tl["op"]], dtype=float)
    return pd.DataFrame({
        "variant": variant,
        "chunk": tl["op"].astype(int),
        "updates_done": np.cumsum(sizes).astype(int),
        "elapsed_s": tl["end_s"],
        "chunk_s": tl["latency_s"],
        "us_per_update": tl["latency_s"] / sizes * 1e6,
        "updates_per_s": sizes / tl["latency_s"],
    })


def _query(conn, chapter_script: str, engine: str, **ids: str) -> pd.DataFrame:
    cur = conn.cursor()
    cur.execute(workloads.load(CHAPTER, engine, chapter_script, **ids)[-1])
    cols = [d[0] for d in cur.description]
    return pd.DataFrame.from_records([tuple(r) for r in cur.fetchall()], columns=cols)


class _Run:
    """State shared by the variants of one live run."""

    def __init__(self, target: Target, database: str, writer: rec.RecordingWriter, updates: int, chunk: int,
                 cleanup_wait_s: float, stacks: bool, allow_server_changes: bool, log: Callable[[str], None]):
        self.t, self.db, self.w = target, database, writer
        self.chunks = chunk_sizes(updates, chunk)
        self.cleanup_wait_s = cleanup_wait_s
        self.stacks = stacks
        self.allow_server_changes = allow_server_changes
        self.log = log
        self.engine = target.engine

    def connect(self, autocommit: bool = True):
        return self.t.connect(self.db, autocommit=autocommit)

    def drive(self, variant: str, setup_session, before_window=None):
        """Run the chunks in one session; return (RunResult, curve frame)."""
        call = workloads.load(CHAPTER, self.engine, "update_chunk")[0]
        chunks = self.chunks
        result = run_sessions(
            lambda: self.connect(),
            lambda cur, _s, op: _drain(cur.execute(call, chunks[op])),
            sessions=1, operations_per_session=len(chunks), setup_session=setup_session,
            keep_timeline=True, progress=f"{variant} ({sum(chunks):,} updates)", on_ready=before_window,
        )
        if result.errors:
            raise RuntimeError(f"variant {variant}: {result.errors} chunk(s) failed: "
                               f"{result.per_session[0].error_samples}")
        return result, curve_from_timeline(variant, result.timeline(), chunks)

    def record_run(self, variant: str, result, curve: pd.DataFrame) -> None:
        updates = int(sum(self.chunks))
        self.w.append_csv(FILES["runs"], pd.DataFrame([{
            "variant": variant, "repetition": 0, "sessions": 1, "elapsed_s": result.elapsed_s,
            "operations": updates, "throughput": updates / result.elapsed_s, "chunks": len(self.chunks),
            "errors": result.errors,
        }]))
        self.w.append_csv(FILES["curve"], curve)
        self.log(f"[{CHAPTER}] {variant}: {updates:,} updates in {result.elapsed_s:.2f} s "
                 f"({updates / result.elapsed_s:,.0f}/s)")


def _drain(cur) -> None:
    while cur.nextset():
        pass


# -- PostgreSQL -----------------------------------------------------------------
def _pg_stats(run: _Run, conn, variant: str, phase: str) -> pd.DataFrame:
    table = _query(conn, "table_stats", "postgres").assign(relation="ghost_test", relation_kind="heap")
    index = _query(conn, "index_stats", "postgres").assign(relation="ghost_test_pkey", relation_kind="btree")
    frame = pd.concat([table, index], ignore_index=True)
    frame.insert(0, "phase", phase)
    frame.insert(0, "variant", variant)
    for col in RELATION_COLUMNS:
        if col not in frame:
            frame[col] = np.nan
    return frame


def _run_postgres_variant(run: _Run, variant: str) -> None:
    with contextlib.closing(run.connect()) as conn:
        holder = None
        capture = None
        backend = {}
        try:
            workloads.run_script(conn, CHAPTER, "postgres", "setup")
            if variant == "open_snapshot":
                holder = run.connect(autocommit=False)
                workloads.run_script(holder, CHAPTER, "postgres", "open_snapshot")
                if _query(conn, "open_snapshot_check", "postgres").iloc[0, 0] < 1:
                    raise RuntimeError("open_snapshot: the holding transaction does not show a backend_xmin")
                run.log(f"[{CHAPTER}] open_snapshot: a REPEATABLE READ transaction holds the xmin horizon")

            def session(cur, _i):
                workloads.run_script(cur.connection, CHAPTER, "postgres", "session")
                backend["pid"] = cur.execute("SELECT pg_backend_pid()").fetchone()[0]

            def start_capture():
                nonlocal capture
                if run.stacks:
                    capture = _start_stacks(run, variant, [backend["pid"]])

            result, curve = run.drive(variant, session, start_capture)
            _finish_stacks(run, variant, capture)
            capture = None
            run.record_run(variant, result, curve)
            stats = [_pg_stats(run, conn, variant, "after_run")]
        finally:
            if capture is not None:
                _finish_stacks(run, variant, capture)
            if holder is not None:
                holder.rollback()
                holder.close()
        workloads.run_script(conn, CHAPTER, "postgres", "cleanup")
        stats.append(_pg_stats(run, conn, variant, "after_cleanup"))
    run.w.append_csv(FILES["relation"], pd.concat(stats, ignore_index=True))


def _start_stacks(run: _Run, variant: str, pids: list[int]):
    """Start perf on the backend; perf's own problems never stop the run (see perftools.capture)."""
    from perftools.capture import StackRecorder

    # PERF names another perf binary (or a missing one, to check the run goes on without stacks)
    recorder = StackRecorder(pids, run.w.file_path(f"stacks/{variant}.folded.gz"), perf=os.environ.get("PERF", "perf"))
    recorder.start()
    return recorder


def _finish_stacks(run: _Run, variant: str, recorder) -> None:
    if recorder is None:
        return
    status = recorder.stop()
    if status.ok:
        run.log(f"[{CHAPTER}] {variant}: {status.samples:,} stack samples recorded")
    else:
        run.w.add_note(f"stacks for {variant}: not recorded: {status.why}")
        path = run.w.file_path(f"stacks/{variant}.folded.gz")
        if path.exists():
            path.unlink()


# -- SQL Server -----------------------------------------------------------------
def _database_options_change(db: str, version: str, rcsi: bool) -> Change:
    """Recovery, delayed durability, ADR, SI and RCSI of the harness's own database."""
    check_identifier(db, "database")
    has_adr = major_version(version) >= 15

    def read(conn):
        cols = ("recovery_model_desc, delayed_durability_desc, is_read_committed_snapshot_on, "
                "snapshot_isolation_state_desc" + (", is_accelerated_database_recovery_on" if has_adr else ""))
        row = conn.cursor().execute(f"SELECT {cols} FROM sys.databases WHERE name = ?", db).fetchone()
        return {"recovery": row[0], "delayed_durability": row[1], "rcsi": bool(row[2]),
                "snapshot": row[3], "adr": bool(row[4]) if has_adr else None}

    def statements(state: dict) -> list[str]:
        out = [f"ALTER DATABASE [{db}] SET RECOVERY {state['recovery']}",
               f"ALTER DATABASE [{db}] SET DELAYED_DURABILITY = {state['delayed_durability']}",
               f"ALTER DATABASE [{db}] SET ALLOW_SNAPSHOT_ISOLATION {'ON' if state['snapshot'] == 'ON' else 'OFF'}",
               f"ALTER DATABASE [{db}] SET READ_COMMITTED_SNAPSHOT {'ON' if state['rcsi'] else 'OFF'} "
               "WITH ROLLBACK IMMEDIATE"]
        if state.get("adr") is not None:
            out.append(f"ALTER DATABASE [{db}] SET ACCELERATED_DATABASE_RECOVERY = {'ON' if state['adr'] else 'OFF'}")
        return out

    wanted = {"recovery": "SIMPLE", "delayed_durability": "ALLOWED", "snapshot": "OFF", "rcsi": rcsi,
              "adr": False if has_adr else None}
    return Change(
        description=f"database {db}: SIMPLE recovery, delayed durability ALLOWED, ADR and snapshot isolation OFF, "
                    f"READ_COMMITTED_SNAPSHOT {'ON' if rcsi else 'OFF'}",
        scope="database", read=read, apply=lambda prior: statements(wanted), restore=statements,
    )


def sqlserver_changes(variant: str, db: str, version: str) -> list[Change]:
    changes = [_database_options_change(db, version, rcsi=variant != "read_committed")]
    if variant == "rcsi_open_txn_tf7006":
        changes.append(trace_flag_change(7006))
    return changes


def _counters(conn) -> pd.DataFrame:
    return _query(conn, "perf_counters", "sqlserver")


def counter_rates(before: pd.DataFrame, after: pd.DataFrame, seconds: float) -> pd.DataFrame:
    """Per-second rates from two reads of cumulative counters (type 272696576); raw values as they are."""
    key = ["object_name", "counter_name", "instance_name"]
    both = before.merge(after, on=key + ["cntr_type"], suffixes=("_before", "_after"))
    per_second = both["cntr_type"] == 272696576
    delta = (both["cntr_value_after"] - both["cntr_value_before"]).clip(lower=0)  # a reset reads as 0, not negative
    both["delta"] = np.where(per_second, delta, np.nan)
    both["per_second"] = np.where(per_second, delta / seconds, np.nan)
    both["value"] = np.where(per_second, np.nan, both["cntr_value_after"])
    both["counter"] = both["counter_name"]
    return both[["counter", "object_name", "instance_name", "cntr_type", "delta", "per_second", "value"]]


def _run_sqlserver_variant(run: _Run, variant: str, version: str) -> None:
    if variant == "rcsi_open_txn_tf7006" and major_version(version) < 16:
        run.log(f"[{CHAPTER}] {variant}: skipped, trace flag 7006 matters only on SQL Server 2022 (16.x) or later")
        run.w.add_note(f"{variant} skipped: server is {version}, the variant needs 16.x or later")
        return
    changes = sqlserver_changes(variant, run.db, version)
    with StateGuard(lambda database: run.t.connect(database), changes,
                    allow_server_changes=run.allow_server_changes, log=run.log), \
            contextlib.closing(run.connect()) as conn:
        holder = None
        try:
            workloads.run_script(conn, CHAPTER, "sqlserver", "setup")
            if variant.startswith("rcsi_open_txn"):
                holder = run.connect()
                workloads.run_script(holder, CHAPTER, "sqlserver", "open_transaction")
                if _query(conn, "open_transaction_check", "sqlserver").iloc[0, 0] < 1:
                    raise RuntimeError(f"{variant}: the open transaction is not in "
                                       "sys.dm_tran_active_snapshot_database_transactions")
            before = _counters(conn)
            result, curve = run.drive(variant, None)
            after = _counters(conn)
            run.record_run(variant, result, curve)
            stats = [_query(conn, "index_stats", "sqlserver").assign(phase="after_run")]
            rates = counter_rates(before, after, result.elapsed_s)
            if rates.empty:
                run.w.add_note("performance counters for skipped ghosts and lock requests not found")
            run.w.append_csv(FILES["counters"], rates.assign(variant=variant))
        finally:
            if holder is not None:
                holder.cursor().execute("IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION")
                holder.close()
        run.log(f"[{CHAPTER}] {variant}: waiting {run.cleanup_wait_s:.0f} s for the ghost cleanup task")
        time.sleep(run.cleanup_wait_s)
        stats.append(_query(conn, "index_stats", "sqlserver").assign(phase="after_cleanup"))
    frame = pd.concat(stats, ignore_index=True)
    frame.insert(0, "variant", variant)
    run.w.append_csv(FILES["index"], frame[list(INDEX_COLUMNS)])


def run_live(
    *,
    target: str | None = None,
    engine: str = "postgres",
    updates: int = 123_456,
    chunk: int | None = None,
    variants: Sequence[str] | None = None,
    allow_server_changes: bool = False,
    record_to: str | None = None,
    database: str = "contention_lab",
    cleanup_wait_s: float = 10.0,
    stacks: bool = True,
    command: str | None = None,
    log: Callable[[str], None] = print,
) -> Path:
    """Run the chapter's variants against ``target`` and return the new recording's path."""
    if engine not in VARIANTS:
        raise ValueError(f"engine {engine!r}: expected one of {', '.join(VARIANTS)}")
    variants = list(variants or VARIANTS[engine])
    unknown = [v for v in variants if v not in VARIANTS[engine]]
    if unknown:
        raise ValueError(f"variants {unknown}: expected some of {', '.join(VARIANTS[engine])} for {engine}")
    chunk = int(chunk or max(1, math.ceil(updates / 100)))
    parameters = {"engine": engine, "updates": int(updates), "chunk": chunk, "variants": variants,
                  "database": database, "cleanup_wait_s": cleanup_wait_s}
    check_identifier(database, "database")
    with live_target(target, engine) as tgt:
        ensure_own_database(tgt, database, log=log)
        dest = default_destination(CHAPTER, record_to, engine)
        command = command or invocation(NOTEBOOK, {"source": "live", "engine": engine, "updates": updates,
                                                   "target": target or ""})
        writer = measured_writer(tgt, CHAPTER, parameters, command, dest,
                                 title="Ghost cleanup: one row, its key updated over and over")
        with writer:
            run = _Run(tgt, database, writer, updates, chunk, cleanup_wait_s, stacks, allow_server_changes, log)
            version = writer.manifest["engine"]["version"]  # read once, by measured_writer
            if engine == "postgres":
                with contextlib.closing(tgt.connect(database)) as conn:
                    settings = dict(conn.cursor().execute(
                        "SELECT name, setting FROM pg_settings WHERE name IN "
                        "('autovacuum', 'autovacuum_naptime', 'shared_buffers', 'block_size', 'synchronous_commit')"
                    ).fetchall())
                writer.update(engine={"settings": settings})
            for variant in variants:
                if engine == "postgres":
                    _run_postgres_variant(run, variant)
                else:
                    _run_sqlserver_variant(run, variant, version)
    log(f"[{CHAPTER}] recording written: {dest}")
    return dest


# =============================================================================
# Reading recordings
# =============================================================================
@dataclass
class GhostRecording:
    recording: rec.Recording
    runs: pd.DataFrame
    curve: pd.DataFrame | None = None
    index_stats: pd.DataFrame | None = None
    relation_stats: pd.DataFrame | None = None
    counters: pd.DataFrame | None = None
    stacks: dict[str, Path] = field(default_factory=dict)

    @property
    def engine(self) -> str:
        return self.recording.engine["name"]

    @property
    def label(self) -> str:
        eng = self.recording.engine
        if eng["name"] == "sqlserver":
            return f"SQL Server {eng['version']} ({self.recording.kind})"
        return f"PostgreSQL {eng['version'].split()[0]} ({self.recording.kind})"


def load(ref: str | Path) -> GhostRecording:
    """Open a recording of this chapter by id or directory, checking every file it needs."""
    r = rec.Recording.open(rec.resolve(CHAPTER, ref))
    if r.chapter != CHAPTER:
        raise rec.RecordingError(f"recording {r.path}: chapter is {r.chapter!r}, expected {CHAPTER!r}")
    out = GhostRecording(r, r.csv(FILES["runs"], RUNS_COLUMNS))
    if r.has(FILES["curve"]):
        out.curve = r.csv(FILES["curve"], CURVE_COLUMNS)
    if r.has(FILES["index"]):
        out.index_stats = r.csv(FILES["index"], INDEX_COLUMNS)
    if r.has(FILES["relation"]):
        out.relation_stats = r.csv(FILES["relation"], RELATION_COLUMNS)
    if r.has(FILES["counters"]):
        out.counters = r.csv(FILES["counters"], COUNTER_COLUMNS)
    out.stacks = {Path(f).name.split(".")[0]: r.path / f for f in r.files
                  if f.startswith("stacks/") and f.endswith(".folded.gz")}
    if out.index_stats is None and out.relation_stats is None:
        raise rec.RecordingError(
            f"recording {r.path}: has neither {FILES['index']} nor {FILES['relation']}; "
            "expected the storage statistics of the test table")
    return out


def load_published() -> list[GhostRecording]:
    return [load(pid) for pid in PUBLISHED]


# =============================================================================
# Analysis
# =============================================================================
def elapsed_table(recordings: Sequence[GhostRecording]) -> pd.DataFrame:
    """Elapsed time per variant and its ratio to the recording's own baseline."""
    rows = []
    for g in recordings:
        runs = g.runs
        if "delayed_durability" in runs:
            runs = runs[runs["delayed_durability"].astype(str).str.lower().isin(("true", "1"))]
        per_variant = runs.groupby("variant", sort=False)["elapsed_s"].median()
        base = per_variant.get(BASELINE[g.engine], np.nan)
        for variant, elapsed in per_variant.items():
            note = ""
            if "elapsed_note" in runs:
                notes = runs.loc[runs["variant"] == variant, "elapsed_note"].dropna()
                note = str(notes.iloc[0]) if len(notes) else ""
            rows.append({"recording": g.label, "kind": g.recording.kind, "engine": g.engine, "variant": variant,
                         "setting": LABELS.get(variant, variant), "elapsed_s": float(elapsed),
                         "vs_baseline": float(elapsed / base) if base and not np.isnan(base) else np.nan,
                         "note": note})
    return pd.DataFrame(rows)


def curve_growth(curve: pd.DataFrame) -> pd.DataFrame:
    """Does time per update grow with the updates before it?  A straight-line fit per variant.

    If each update must step over every version it cannot remove, µs per update
    grows linearly with updates done (so the total grows quadratically).  The
    slope is µs per update gained per 1,000 updates; ``r2`` says how straight.
    """
    rows = []
    for variant, part in curve.groupby("variant", sort=False):
        x = part["updates_done"].to_numpy(float)
        y = part["us_per_update"].to_numpy(float)
        if len(x) < 3:
            continue
        slope, intercept = np.polyfit(x, y, 1)
        fitted = slope * x + intercept
        ss_res = float(np.sum((y - fitted) ** 2))
        ss_tot = float(np.sum((y - y.mean()) ** 2)) or float("nan")
        tenth = max(1, len(y) // 10)
        rows.append({"variant": variant, "setting": LABELS.get(variant, variant),
                     "first_us": float(np.median(y[:tenth])), "last_us": float(np.median(y[-tenth:])),
                     "growth": float(np.median(y[-tenth:]) / np.median(y[:tenth])),
                     "slope_us_per_1000": float(slope * 1000), "r2": 1 - ss_res / ss_tot})
    return pd.DataFrame(rows)


def storage_long(g: GhostRecording) -> pd.DataFrame:
    """Pages and dead/ghost counts per variant and phase, in one long frame for plotting."""
    if g.index_stats is not None:
        s = g.index_stats
        leaf = s[s["level"] == 0]
        total_pages = s.groupby(["variant", "phase"], sort=False)["pages"].sum().rename("pages")
        dead = leaf.groupby(["variant", "phase"], sort=False)[["ghosts", "ghost_versions"]].sum()
        dead["not_removed"] = dead[["ghosts", "ghost_versions"]].max(axis=1)
        out = pd.concat([total_pages, dead["not_removed"]], axis=1).reset_index()
        out["levels"] = s.groupby(["variant", "phase"], sort=False)["level"].max().to_numpy() + 1
    else:
        s = g.relation_stats
        pages = s.groupby(["variant", "phase"], sort=False)["pages"].sum().rename("pages")
        heap = s[s["relation"] == "ghost_test"].set_index(["variant", "phase"])["dead_tuples"].rename("not_removed")
        out = pd.concat([pages, heap], axis=1).reset_index()
        levels = s[s["relation"] == "ghost_test_pkey"].set_index(["variant", "phase"])["tree_level"] + 1
        out["levels"] = levels.reindex(pd.MultiIndex.from_frame(out[["variant", "phase"]])).to_numpy()
    out.insert(0, "recording", g.label)
    out["setting"] = out["variant"].map(lambda v: LABELS.get(v, v))
    return out


HELD = {"postgres": "open_snapshot", "sqlserver": "rcsi_open_txn"}
UNHELD = {"postgres": "baseline", "sqlserver": "rcsi"}


def ghost_visits(updates: int) -> int:
    """Ghosts stepped over in all if none can be removed: the k-th update skips k-1."""
    return updates * (updates - 1) // 2


def measured_numbers(g: GhostRecording) -> dict[str, Any]:
    """The same keys for any recording: ``base`` is the variant without, ``held`` with, the open transaction.

    A key whose variant is not in the recording is NaN, so the prose still renders.
    """
    el = elapsed_table([g]).set_index("variant")
    base, held = UNHELD[g.engine], HELD[g.engine]
    nan = float("nan")
    nums: dict[str, Any] = {"m_engine": g.label, "m_updates": int(g.runs["operations"].max()),
                            "m_base_label": LABELS[base], "m_held_label": LABELS[held]}
    for role, variant in (("base", base), ("held", held)):
        nums[f"m_{role}_s"] = float(el.loc[variant, "elapsed_s"]) if variant in el.index else nan
    nums["m_held_x"] = nums["m_held_s"] / nums["m_base_s"]
    nums["m_ghost_visits"] = ghost_visits(nums["m_updates"])
    growth = curve_growth(g.curve).set_index("variant") if g.curve is not None else pd.DataFrame()
    storage = storage_long(g).set_index(["variant", "phase"])
    for role, variant in (("base", base), ("held", held)):
        for col in ("first_us", "last_us", "growth", "r2"):
            nums[f"m_{role}_{col}"] = float(growth.loc[variant, col]) if variant in growth.index else nan
        for phase in ("after_run", "after_cleanup"):
            row = storage.loc[(variant, phase)] if (variant, phase) in storage.index else None
            nums[f"m_{role}_{phase}_pages"] = float(row["pages"]) if row is not None else nan
            nums[f"m_{role}_{phase}_dead"] = float(row["not_removed"]) if row is not None else nan
    return nums


def key_numbers(published: Sequence[GhostRecording], measured: GhostRecording) -> dict[str, Any]:
    """Numbers the prose quotes, each taken from a recording (never typed by hand)."""
    nums: dict[str, Any] = {}
    el = elapsed_table([*published, measured])
    for g in published:
        tag = "pub" + g.recording.engine["version"].split(".")[0]
        part = el[el["recording"] == g.label].set_index("variant")
        nums[f"{tag}_updates"] = int(g.runs["operations"].max())
        for variant, row in part.iterrows():
            nums[f"{tag}_{variant}_s"] = row["elapsed_s"]
            nums[f"{tag}_{variant}_x"] = row["vs_baseline"]
        if g.index_stats is not None:
            s = g.index_stats
            for variant in s["variant"].unique():
                end = s[(s["variant"] == variant) & (s["phase"] == "after_run")]
                nums[f"{tag}_{variant}_leaf_pages"] = int(end.loc[end["level"] == 0, "pages"].sum())
                nums[f"{tag}_{variant}_levels"] = int(end["level"].max() + 1)
                nums[f"{tag}_{variant}_ghost_versions"] = int(end.loc[end["level"] == 0, "ghost_versions"].sum())
        if g.counters is not None:
            for _, row in g.counters.iterrows():
                key = "lock_requests" if "Lock" in row["counter"] else "skipped_ghosts"
                nums[f"{tag}_{row['variant']}_{key}_per_s"] = row["per_second"]
    nums.update(measured_numbers(measured))
    nums["ghost_visits_published"] = ghost_visits(int(published[0].runs["operations"].max())) if published else np.nan
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in nums.items()}


def verdicts(published: Sequence[GhostRecording], measured: GhostRecording) -> pd.DataFrame:
    """The article's claims, the direction it reported, and what this recording shows."""
    el = elapsed_table([measured]).set_index("variant")
    growth = curve_growth(measured.curve).set_index("variant") if measured.curve is not None else pd.DataFrame()
    st = storage_long(measured).set_index(["variant", "phase"])
    rows = []

    def verdict(claim: str, published_dir: str, measured_dir: str, agree: bool | None) -> None:
        rows.append({"claim": claim, "published": published_dir, "measured here": measured_dir,
                     "verdict": "not testable here" if agree is None else ("agrees" if agree else "differs")})

    if measured.engine == "postgres":
        base, held = "baseline", "open_snapshot"
    else:
        base, held = "rcsi", "rcsi_open_txn"
    if base in el.index and held in el.index:
        ratio = el.loc[held, "elapsed_s"] / el.loc[base, "elapsed_s"]
        verdict("An open snapshot transaction makes the same updates slower",
                "2019: over 4 min vs 1 min 22 s", f"{ratio:.1f}x slower ({LABELS[held]} vs {LABELS[base]})",
                bool(ratio > 1.2))
    if held in growth.index:
        g = growth.loc[held]
        verdict("Time per update grows with the versions that cannot be removed (quadratic total)",
                "k-th update skips k-1 ghost versions",
                f"{g['first_us']:.1f} -> {g['last_us']:.1f} µs per update, linear fit R² {g['r2']:.2f}",
                bool(g["growth"] > 2 and g["r2"] > 0.8))
    if (held, "after_run") in st.index and (held, "after_cleanup") in st.index:
        end, clean = st.loc[(held, "after_run")], st.loc[(held, "after_cleanup")]
        verdict("Versions pile up while the transaction is open and go once it ends",
                "123,455 ghost versions at the end; a few seconds after commit, 1",
                f"{int(end['not_removed']):,} not removable at the end; {int(clean['not_removed']):,} after cleanup",
                bool(end["not_removed"] > 10 * max(clean["not_removed"], 1)))
        base_end = st.loc[(base, "after_run")]["pages"] if (base, "after_run") in st.index else np.nan
        verdict("The table grows while versions are pinned, and cleanup gives the pages back",
                "823 leaf pages and 3 levels at the end; 2 pages seconds after the commit",
                f"{int(end['pages'])} pages at the end ({int(base_end)} without the open transaction); "
                f"{int(clean['pages'])} after cleanup",
                bool(end["pages"] > 1.2 * base_end and clean["pages"] < end["pages"] / 2))
    verdict("SQL Server 2022 cleans version ghosts at statement level under an open RCSI transaction",
            "2022: 1 min 32 s vs 4 min+ on 2019; TF 7006 turns it off",
            "measured only on a SQL Server 2022 recording" if measured.engine != "sqlserver"
            else _tf7006_direction(el), None if measured.engine != "sqlserver" else _tf7006_agrees(el))
    return pd.DataFrame(rows)


def _tf7006_direction(el: pd.DataFrame) -> str:
    if {"rcsi_open_txn", "rcsi_open_txn_tf7006"} <= set(el.index):
        return f"{el.loc['rcsi_open_txn', 'elapsed_s']:.0f} s without, {el.loc['rcsi_open_txn_tf7006', 'elapsed_s']:.0f} s with TF 7006"
    return "variant not in this recording"


def _tf7006_agrees(el: pd.DataFrame) -> bool | None:
    if {"rcsi_open_txn", "rcsi_open_txn_tf7006"} <= set(el.index):
        return bool(el.loc["rcsi_open_txn_tf7006", "elapsed_s"] > el.loc["rcsi_open_txn", "elapsed_s"])
    return None


def growth_note(g: GhostRecording) -> str:
    """What the run without the open transaction shows, in words built from the recording."""
    n = measured_numbers(g)
    if np.isnan(n["m_base_growth"]):
        return ""
    text = (f"Without the open transaction the time per update still grew {n['m_base_growth']:.1f}× over the run, "
            f"though only {n['m_base_after_run_dead']:,.0f} removable versions were left at its end. ")
    if g.engine == "postgres":
        text += (f"The growth comes from the table's size, not from dead tuples: heap and index grew to "
                 f"{n['m_base_after_run_pages']:,.0f} pages for one live row. The one-row `UPDATE` reads the "
                 "heap with a sequential scan, and the scan visits every page, even one that pruning has emptied. "
                 f"`VACUUM` did not give the pages back ({n['m_base_after_cleanup_pages']:,.0f} afterwards), "
                 "because it returns only empty pages at the end of the file.")
    else:
        text += ("Here the cleanup task runs, but it removes ghosts only after each transaction ends, and the "
                 "next update has already started by then.")
    return text


def header_note(measured: GhostRecording, published: Sequence[GhostRecording]) -> str:
    lines = ["**What this chapter shows.**",
             f"- Measured or reader's recording — {measured.recording.describe()}"]
    lines += [f"- Published recording — {g.recording.describe()}" for g in published]
    for note in measured.recording.manifest.get("notes", []):
        lines.append(f"- Note on {measured.recording.id}: {note}")
    return "\n".join(lines)


# =============================================================================
# Figures (seaborn)
# =============================================================================
def plot_elapsed(table: pd.DataFrame):
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [1.2, 1]})
    sns.barplot(data=table, y="setting", x="elapsed_s", hue="recording", ax=axes[0], orient="h")
    axes[0].set_xscale("log")
    axes[0].set_xlabel("elapsed seconds (log scale)")
    axes[0].set_ylabel("")
    axes[0].set_title("Time for the whole update loop")
    sns.barplot(data=table, y="setting", x="vs_baseline", hue="recording", ax=axes[1], orient="h", legend=False)
    axes[1].set_xscale("log")
    axes[1].axvline(1, color="grey", lw=0.8)
    axes[1].set_xlabel("× the recording's own baseline (log scale)")
    axes[1].set_ylabel("")
    axes[1].set_yticklabels([])
    axes[1].set_title("Normalised: comparable across engines")
    axes[0].legend(loc="lower right", fontsize=8, title=None)
    fig.tight_layout()
    return fig


def plot_storage(frames: pd.DataFrame):
    import matplotlib.pyplot as plt
    import seaborn as sns

    frames = frames.copy()
    frames["phase"] = frames["phase"].map({"after_run": "right after the run", "after_cleanup": "after cleanup"})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, col, title in ((axes[0], "pages", "Pages (all levels / heap + index)"),
                           (axes[1], "not_removed", "Ghosts / dead versions not yet removed")):
        data = frames.dropna(subset=[col])
        data = data.assign(what=data["recording"] + " · " + data["setting"], value=data[col].clip(lower=0.5))
        sns.barplot(data=data, y="what", x="value", hue="phase", ax=ax, orient="h")
        ax.set_xscale("log")
        ax.set_xlabel(f"{col.replace('_', ' ')} (log scale)")
        ax.set_ylabel("")
        ax.set_title(title)
        ax.legend(fontsize=8, title=None)
    axes[1].set_yticklabels([])
    fig.tight_layout()
    return fig


def plot_curve(curve: pd.DataFrame, title: str):
    import matplotlib.pyplot as plt
    import seaborn as sns

    data = curve.assign(setting=curve["variant"].map(lambda v: LABELS.get(v, v)))
    fig, ax = plt.subplots(figsize=(8, 3.8))
    sns.lineplot(data=data, x="updates_done", y="us_per_update", hue="setting", marker="o", markersize=3, ax=ax)
    ax.set_xlabel("updates done")
    ax.set_ylabel("µs per update in the chunk")
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    ax.legend(title=None, fontsize=8)
    fig.tight_layout()
    return fig


def unresolved_share(profile) -> float:
    """Share of sampled frames perf could not name (``[unknown]``), weighted by samples."""
    unknown = np.array(["[unknown]" in str(n) for n in profile.frame_names()], dtype=float)
    per_stack = np.bincount(profile.entry_stack(), weights=unknown[profile.stack_frames],
                            minlength=profile.n_stacks)
    weights = profile.stack_weights()
    total = float(np.sum(profile.stack_lengths() * weights))
    return float(np.sum(per_stack * weights) / total) if total else float("nan")


def stacks_section(g: GhostRecording, top: int = 12) -> dict[str, Any]:
    """Text, figures and tables for the CPU-stacks section, or why there are none."""
    out: dict[str, Any] = {"text": "", "figures": [], "tables": []}
    if not g.stacks:
        why = [n for n in g.recording.manifest.get("notes", []) if n.startswith("stacks")]
        out["text"] = ("*This recording holds no CPU stacks*"
                       + (f": {'; '.join(why)}." if why else " (it was not made with perf sampling)."))
        return out
    import perftools

    profiles = {variant: perftools.load(path) for variant, path in sorted(g.stacks.items())}
    for variant, prof in profiles.items():
        setting = LABELS.get(variant, variant)
        table = perftools.top_functions(prof, n=top)
        out["tables"].append(pd.DataFrame({
            "setting": setting, "function": table["function"],
            "exclusive %": table["exclusive_pct"].round(1), "inclusive %": table["inclusive_pct"].round(1),
        }).set_index(["setting", "function"]))
        out["figures"].append(perftools.flame_figure(prof, title=f"{g.label}: {setting}"))
    base, held = UNHELD[g.engine], HELD[g.engine]
    if base in profiles and held in profiles:
        diff = perftools.diff(profiles[base], profiles[held], by="function").head(top)
        out["tables"].append(pd.DataFrame({
            "function": diff["name"], f"% {LABELS[base]}": diff["pct_a"].round(1),
            f"% {LABELS[held]}": diff["pct_b"].round(1), "change (points)": diff["change_pp"].round(1),
        }).set_index("function"))
    unknown = unresolved_share(next(iter(profiles.values())))
    hottest = []
    for variant, prof in profiles.items():
        top1 = perftools.top_functions(prof, n=1).iloc[0]
        hottest.append(f"*{LABELS.get(variant, variant)}*: `{top1['function']}` "
                       f"({top1['exclusive_pct']:.0f}% of samples exclusive)")
    out["text"] = (
        "The hottest function per setting: " + "; ".join(hottest) + ". " +
        f"Stacks were sampled with `perf` at the measured window of each setting. Debian's postgres binary is "
        f"stripped, so static functions show as `[unknown]` ({unknown:.0%} of sampled frames in the first "
        "capture). The call chains are complete, and exported functions resolve by name. The tables give the "
        "functions with the largest exclusive share. The last table gives the change in share between the two "
        "settings."
    )
    return out
