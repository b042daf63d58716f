"""What the ghost chapter's PostgreSQL and SQL Server runs share: update chunks, the driven session, the curve."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

from contention_book.harness import workloads
from contention_book.harness.driver import run_sessions

from .spec import CHAPTER, FILES


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


def query(conn, chapter_script: str, engine: str, *params, **ids: str) -> pd.DataFrame:
    """The last statement of a workload script, run with ``params``, as a frame."""
    cur = conn.cursor()
    cur.execute(workloads.load(CHAPTER, engine, chapter_script, **ids)[-1], *params)
    cols = [d[0] for d in cur.description]
    return pd.DataFrame.from_records([tuple(r) for r in cur.fetchall()], columns=cols)


class Run:
    """State shared by the variants of one live run."""

    def __init__(self, ctx):
        p = ctx.params
        self.ctx = ctx
        self.t, self.db, self.w = ctx.target, ctx.database, ctx.writer
        chunk = int(p["chunk"] or max(1, math.ceil(p["updates"] / 100)))
        self.w.update(parameters={**self.w.manifest["parameters"], "chunk": chunk})
        self.chunks = chunk_sizes(p["updates"], chunk)
        self.cleanup_wait_s = p["cleanup_wait_s"]
        self.stacks = p.get("capture_stacks", False)
        self.allow_server_changes = ctx.allow_server_changes
        self.log = ctx.log
        self.engine = ctx.engine
        self.repetition = 0  # the round being run (harness.schedule)

    def connect(self, autocommit: bool = True):
        return self.t.connect(self.db, autocommit=autocommit)

    def drive(self, variant: str, setup_session, before_window=None, after_chunk: Sequence[str] = ()):
        """Run the chunks in one session; return (RunResult, curve frame).

        ``after_chunk`` statements run after every chunk in the same session and inside its timing (the VACUUM
        control)."""
        call = workloads.load(CHAPTER, self.engine, "update_chunk")[0]
        chunks = self.chunks

        def one_chunk(cur, _s, op):
            drain(cur.execute(call, chunks[op]))
            for stmt in after_chunk:
                drain(cur.execute(stmt))

        result = run_sessions(
            lambda: self.connect(),
            one_chunk,
            sessions=1, operations_per_session=len(chunks), setup_session=setup_session,
            keep_timeline=True, progress=f"{variant} ({sum(chunks):,} updates)", on_ready=before_window,
        )
        if result.errors:
            raise RuntimeError(f"variant {variant}: {result.errors} chunk(s) failed: "
                               f"{result.per_session[0].error_samples}")
        return result, curve_from_timeline(variant, result.timeline(), chunks)

    def record_run(self, variant: str, result, curve: pd.DataFrame, row_state: pd.DataFrame) -> None:
        """Append the run's row, after checking its accounting: the key read back (``row_state``: updates_done,
        live_rows) must equal the updates asked, in a table of one row; a run that does not balance fails here."""
        updates = int(sum(self.chunks))
        state = row_state.iloc[0] if len(row_state) else {}
        row = pd.DataFrame([{
            "variant": variant, "repetition": self.repetition, "sessions": 1, "elapsed_s": result.elapsed_s,
            "operations": updates, "throughput": updates / result.elapsed_s, "chunks": len(self.chunks),
            "errors": result.errors, "updates_asked": updates,
            "updates_done": int(state["updates_done"]) if len(row_state) else -1,
            "live_rows": int(state["live_rows"]) if len(row_state) else 0,
        }])
        self.ctx.check_balanced("runs", row)
        self.w.append_csv(FILES["runs"], row)
        self.w.append_csv(FILES["curve"], curve.assign(repetition=self.repetition))
        self.log(f"[{CHAPTER}] {variant}, repetition {self.repetition + 1}: {updates:,} updates in {result.elapsed_s:.2f} s "
                 f"({updates / result.elapsed_s:,.0f}/s)")


def drain(cur) -> None:
    while cur.nextset():
        pass


# -- PostgreSQL -----------------------------------------------------------------
