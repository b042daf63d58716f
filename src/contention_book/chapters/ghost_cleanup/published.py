"""The published recordings of the ghost-cleanup chapter, transcribed from their source.

Every number below is transcribed from document 002 (Paul White, "Improved
RCSI Ghost Cleanup in SQL Server 2022", Dec 2024; read in its Russian
translation of 27 Jan 2025).  Nothing here was measured by this project.

    python -m contention_book.chapters.ghost_cleanup.published [--out DIR]
"""
from __future__ import annotations

import pandas as pd

from contention_book.harness.recording import RecordingWriter

from ..shared.published import main
from .spec import CHAPTER, FILES

CITATION = {
    "author": "Paul White",
    "title": "Improved RCSI Ghost Cleanup in SQL Server 2022",
    "url": "https://www.sql.kiwi/2024/12/improved-ghosts-2022/",
    "date": "2024-12",
    "transcribed_from": "Russian translation dated 2025-01-27 (shared/seeds/002)",
}
HOST = {"description": "the author's laptop, no other activity (hardware not stated)", "cpu_model": None,
        "sockets": None, "cores": None, "logical_cpus": None, "numa_nodes": None,
        "source": "the article"}
# The article's loop runs while @i < 123456 starting from 1: 123,455 updates, matching its 123,455 ghost versions.
UPDATES = 123_455
RUN_COLS = ["variant", "repetition", "sessions", "elapsed_s", "operations", "throughput", "delayed_durability",
            "elapsed_note"]
IDX_COLS = ["variant", "phase", "level", "pages", "used_pct", "avg_size", "rows", "ghosts", "versions",
            "ghost_versions"]


def runs(rows):
    frame = pd.DataFrame([(v, i, 1, s, UPDATES, UPDATES / s, dd, note) for i, (v, s, dd, note) in enumerate(rows)],
                         columns=RUN_COLS)
    frame["repetition"] = frame.groupby(["variant", "delayed_durability"]).cumcount()
    return frame


def index(rows):
    return pd.DataFrame(rows, columns=IDX_COLS)


def write(dest, version, build, runs_frame, index_frame, counters, notes):
    with RecordingWriter(dest, chapter=CHAPTER, kind="published",
                         engine={"name": "sqlserver", "version": version, "build": build},
                         host=HOST, parameters={"updates": UPDATES, "sessions": 1, "isolation_options":
                                                "SIMPLE recovery, DELAYED_DURABILITY ALLOWED, ADR off, SI off"},
                         citation=CITATION, started=CITATION["date"],
                         title=f"Published: ghost cleanup on SQL Server {version.split('.')[0]}") as w:
        w.write_csv(FILES["runs"], runs_frame, "elapsed times as printed in the article")
        w.write_csv(FILES["index"], index_frame,
                    "sys.dm_db_index_physical_stats (DETAILED) tables as printed in the article")
        w.write_csv(FILES["counters"], counters, "rates the article quotes from performance monitoring")
        for n in notes:
            w.add_note(n)


def write_2019(dest):
    write(
        dest, "15.0.4410", "CU29-GDR",
        runs([
            ("read_committed", 2, True, "about 2 s"),
            ("read_committed", 12, False, "about 12 s without delayed durability"),
            ("rcsi", 82, True, "1 min 22 s"),
            ("rcsi_open_txn", 240, True, "over 4 min: a lower bound"),
            ("rcsi_open_txn", 1800, False, "about 30 min without delayed durability"),
        ]),
        index([
            ("read_committed", "after_run", 0, 1, 0.1359, 11, 1, 0, 0, 0),
            ("rcsi", "after_run", 0, 86, 49.8145, 25, 1, 12301, 12848, 547),
            ("rcsi", "after_run", 1, 1, 13.7880, 11, 86, 0, 0, 0),
            ("rcsi", "after_cleanup", 0, 2, 0.3089, 25, 1, 1, 1, 0),
            ("rcsi", "after_cleanup", 1, 1, 0.2965, 11, 2, 0, 0, 0),
            ("rcsi_open_txn", "after_run", 0, 823, 50.0148, 25, 1, 0, 123455, 123455),
            ("rcsi_open_txn", "after_run", 1, 2, 66.0675, 11, 823, 0, 0, 0),
            ("rcsi_open_txn", "after_run", 2, 1, 0.2965, 11, 2, 0, 0, 0),
        ]),
        pd.DataFrame([{"variant": "rcsi", "counter": "Lock Requests/sec", "per_second": 6_000_000,
                       "note": "about 6 million per second during the RCSI test"}]),
        ["The article gives no index statistics after cleanup for the open-transaction test on 2019; "
         "it says the ghost versions go within seconds of closing the transaction."],
    )


def write_2022(dest):
    write(
        dest, "16.0", "build not stated",
        runs([
            ("read_committed", 2.5, True, "2-3 s (midpoint shown)"),
            ("rcsi", 88, True, "about 1 min 28 s"),
            ("rcsi_open_txn", 92, True, "about 1 min 32 s"),
        ]),
        index([
            ("rcsi_open_txn", "after_run", 0, 231, 49.9272, 25, 1, 34201, 34590, 389),
            ("rcsi_open_txn", "after_run", 1, 1, 37.0768, 11, 231, 0, 0, 0),
            ("rcsi_open_txn", "after_cleanup", 0, 2, 0.3089, 25, 1, 1, 1, 0),
            ("rcsi_open_txn", "after_cleanup", 1, 1, 0.2965, 11, 2, 0, 0, 0),
        ]),
        pd.DataFrame([{"variant": "rcsi_open_txn", "counter": "Lock Requests/sec", "per_second": 10_000,
                       "note": "about 10,000 per second with the open transaction"}]),
        ["SQL Server 2022 build not stated in the article; trace flag 7006 restores the 2019 behaviour "
         "(not timed in the article)."],
    )


RECORDINGS = {"published-white-2024-sql2019": write_2019, "published-white-2024-sql2022": write_2022}

if __name__ == "__main__":
    raise SystemExit(main(CHAPTER, RECORDINGS))
