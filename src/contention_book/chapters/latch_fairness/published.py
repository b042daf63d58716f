"""The published recording of the latch chapter, transcribed from its source.

Every number below is transcribed from document 000 (Paul White, "Reducing
Contention on the NESTING_TRANSACTION_FULL latch", sql.kiwi, 30 Aug 2022),
checked line by line against the article's own tables.  Nothing here was
measured by this project.  The article shows "important elements only" of
each DMV, so rows it left out are absent here, not zero.  It cleared the
counters before each run (DBCC SQLPERF ... CLEAR), so its maxima are the
run's own: their bound is "exact".

    python -m contention_book.chapters.latch_fairness.published [--out DIR]
"""
from __future__ import annotations

import pandas as pd

from contention_book.harness.recording import RecordingWriter

from ..shared.published import main
from .spec import CHAPTER, FILES, PUBLISHED

CITATION = {
    "author": "Paul White",
    "title": "Reducing Contention on the NESTING_TRANSACTION_FULL latch",
    "url": "https://www.sql.kiwi/2022/08/reduce-contention-nesting-transaction-full.html",
    "date": "2022-08-30",
    "transcribed_from": "shared/seeds/000 (the article's text and tables)",
    "notes": "Representative single runs; DMV tables show the article's 'important elements only'. "
             "Elapsed times are the article's rounded 'around 5.5 s' and 'around 4.5 s'.",
}
HOST = {"description": "the author's laptop: 6 physical / 12 logical cores (model not stated)",
        "cpu_model": None, "sockets": None, "cores": 6, "logical_cpus": 12, "numa_nodes": None,
        "source": "the article"}
ROWS = 64 * 1024 * 1024
MAXDOP = 11
PARAMETERS = {"rows": ROWS, "maxdop": MAXDOP, "repetitions": 1, "variants": ["fair", "unfair"],
              "recovery": "SIMPLE then FULL without a backup (full logging; a checkpoint can truncate)",
              "files": "one data file per CPU, at least 2 GB data and 2.5 GB log pre-allocated",
              "counters": "cleared with DBCC SQLPERF(..., CLEAR) before each run"}

runs = pd.DataFrame([
    ("fair", 0, MAXDOP, 5.5, ROWS, ROWS / 5.5, "around 5.5 s"),
    ("unfair", 0, MAXDOP, 4.5, ROWS, ROWS / 4.5, "around 4.5 s (trace flag 3933)"),
], columns=["variant", "repetition", "sessions", "elapsed_s", "operations", "throughput", "elapsed_note"])

latch = pd.DataFrame([
    ("fair", 0, "NESTING_TRANSACTION_FULL", 271_609, 22_642, 22, "exact"),
    ("unfair", 0, "NESTING_TRANSACTION_FULL", 57, 1, 1, "exact"),
], columns=["variant", "repetition", "name", "waits", "wait_time_ms", "max_wait_time_ms", "max_wait_time_ms_bound"])

spinlock = pd.DataFrame([
    ("fair", 0, "X_PACKET_LIST", 3_349, 56_635, 0, 8),
    ("fair", 0, "ALLOC_CACHES_HASH", 173, 2_148, 0, 3),
    ("fair", 0, "LATCH_SPIN_STATS", 0, 0, 0, 0),
    ("unfair", 0, "LATCH_SPIN_STATS", 337_110, 221_891_800, 0, 41),
    ("unfair", 0, "ALLOC_CACHES_HASH", 438, 5_736, 0, 17),
    ("unfair", 0, "X_PACKET_LIST", 15_460, 82_308, 0, 6),
], columns=["variant", "repetition", "name", "collisions", "spins", "sleep_time", "backoffs"])
spinlock["spins_per_collision"] = (spinlock["spins"] / spinlock["collisions"].where(spinlock["collisions"] > 0))

wait = pd.DataFrame([
    ("fair", 0, "LATCH_EX", 271_458, 21_949, 21, 2_644),
    ("fair", 0, "CXPACKET", 69_597, 4_926, 96, 579),
    ("fair", 0, "CXCONSUMER", 6_784, 1_330, 15, 246),
    ("unfair", 0, "CXPACKET", 280_905, 19_310, 155, 2_923),
    ("unfair", 0, "CXCONSUMER", 1_043, 102, 3, 10),
    ("unfair", 0, "LATCH_EX", 56, 3, 0, 1),
], columns=["variant", "repetition", "name", "waits", "wait_time_ms", "max_wait_time_ms", "signal_wait_time_ms"])
wait["max_wait_time_ms_bound"] = "exact"


def write(dest) -> None:
    with RecordingWriter(dest, chapter=CHAPTER, kind="published",
                         engine={"name": "sqlserver", "version": "15.0", "build": "CU17 (build number not stated)"},
                         host=HOST, parameters=PARAMETERS, citation=CITATION, started=CITATION["date"],
                         title="Published: fair and unfair NESTING_TRANSACTION_FULL latch, SQL Server 2019 CU17") as w:
        w.write_csv(FILES["runs"], runs, "elapsed times as the article gives them (rounded, one representative run)")
        w.write_csv(FILES["latch"], latch, "sys.dm_os_latch_stats rows the article printed")
        w.write_csv(FILES["spinlock"], spinlock, "sys.dm_os_spinlock_stats rows the article printed")
        w.write_csv(FILES["wait"], wait, "sys.dm_os_wait_stats rows the article printed")
        w.add_note("The article watched Performance Monitor (CPU, latch waits/s, average latch wait time, log bytes "
                   "flushed/s, extents allocated/s) but printed only a picture: no counter values are transcribed.")
        w.add_note("Plan: parallel INSERT ... WITH (TABLOCK) SELECT into a heap at MAXDOP 11 on 12 schedulers; the "
                   "row generator runs in batch mode via an empty clustered columnstore helper table.")


RECORDINGS = {PUBLISHED: write}

if __name__ == "__main__":
    raise SystemExit(main(CHAPTER, RECORDINGS))
