"""The published recordings of the cache-line chapter, transcribed from their sources.

Two recordings, nothing in them measured by this project:

* ``published-adkin-2015-sql2016``: document 001 (Chris Adkin, "Tuning The
  LOGCACHE_ACCESS Spinlock On A 'Big box'", 9 Sep 2015): the three insert
  rates with their thread counts, the sampled-CPU shares of
  LogAppendContext::BackOff, sqllang.dll and the XDESMGR spinlock, the
  hardware, build and trace flags.
* ``published-core-to-core-matrices``: median core-to-core latencies of a CAS
  ping-pong published for several server CPUs (nviennot/core-to-core-latency,
  MIT; Zen 4 figures from AnandTech).

    python -m contention_book.chapters.logcache_spinlock.published [--out DIR]
"""
from __future__ import annotations

import math

import pandas as pd

from contention_book.harness.recording import RecordingWriter

from ..shared.published import main
from .spec import CHAPTER, FILES, PUBLISHED, PUBLISHED_C2C

NAN = math.nan

ADKIN = {
    "author": "Chris Adkin",
    "title": "Tuning The LOGCACHE_ACCESS Spinlock On A “Big box”",
    "url": "https://chrisadkin.io/2015/09/09/tuning-the-logcache_access-spinlock-on-a-big-box/",
    "date": "2015-09-09",
    "transcribed_from": "the article's text (shared/seeds/001); its charts and screenshots are not in the copy read",
    "notes": "Numbers quoted in the article's text only. The insert rate with trace flag 8015 is given as "
             "'over 500,000 inserts / second', a lower bound.",
}
ADKIN_HOST = {
    "description": "2 x Xeon E5 2650 (10 cores, 2.3 GHz; v3 by the book's inference), hyper-threading on, 64 GB DDR4, "
                   "ASUS Z10-D16 WS; RAID 0 of 3 SanDisk Extreme Pro SSDs and a FusionIO ioDrive",
    "cpu_model": "Intel Xeon E5 2650 (v3 by the book's inference)",
    "sockets": 2, "cores": 20, "logical_cpus": 40, "numa_nodes": 2, "memory_gb": 64.0,
    "os": "Windows Server 2012 R2",
    "source": "the article, which writes '2 x Xeon E5 2650 (10 core, 2.3Ghz)'; the v3 suffix is the book's "
              "inference (the E5-2650 with 10 cores at 2.3 GHz and DDR4 is the v3)",
}
BASE_FLAGS = "1117;2032;8008"
RUN_COLS = ["variant", "repetition", "sessions", "elapsed_s", "operations", "throughput", "throughput_bound",
            "trace_flags", "note"]
RUNS = [
    ("default", 0, 40, NAN, NAN, 186_915, "exact", BASE_FLAGS, "default CPU affinity mask"),
    ("no_logwriter_core", 0, 38, NAN, NAN, 436_781, "exact", BASE_FLAGS,
     "first core of the log writer's NUMA node removed from the affinity mask"),
    ("no_logwriter_core_tf8015", 0, 36, NAN, NAN, 500_000, "at least", BASE_FLAGS + ";8015",
     "as above, plus startup trace flag 8015 (NUMA detection off): 'over 500,000'"),
]
SHARE_COLS = ["variant", "sessions", "function", "kind", "pct", "note"]
SHARES = [
    ("default", NAN, "sqlmin.dll!LogAppendContext::BackOff", "function", 23.89,
     "share of total sampled CPU, default affinity mask"),
    ("no_logwriter_core", NAN, "sqlmin.dll!LogAppendContext::BackOff", "function", 1.43,
     "share of total sampled CPU after removing core 0 from the affinity mask"),
    ("no_logwriter_core", 34, "sqllang.dll", "module", 12.32,
     "SQL language processing at 34 threads, log writer core removed (the best run without TF 8048/8015)"),
    ("no_logwriter_core", 34, "XDESMGR spinlock (callers of GetXdesId)", "spinlock", 14.46,
     "the same 34-thread conventional-engine run as the sqllang.dll figure: one spinlock, identified as XDESMGR "
     "from its caller GetXdesId (the article ran no In-Memory OLTP test)"),
]

NVIENNOT = {
    "author": "Nicolas Viennot and contributors (nviennot/core-to-core-latency, MIT); AnandTech for Zen 4",
    "title": "core-to-core-latency: measured results for several CPUs",
    "url": "https://github.com/nviennot/core-to-core-latency",
    "date": "n.d. (README results)",
    "transcribed_from": "the book's research notes, section 'Physical limits', which summarise the README's "
                        "result matrices (median of a CAS ping-pong) and AnandTech's Ryzen 9 7950X review",
    "notes": "Medians of whole matrices reduced to one figure per relation; see each row's source column.",
}
C2C_COLS = ["machine", "relation", "median_one_way_ns", "median_bound", "source"]
C2C = [
    ("Xeon E5-2695 v4", "SMT sibling", 7.6, "exact", "nviennot"),
    ("Xeon E5-2695 v4", "same socket", 44.0, "exact", "nviennot"),
    ("Xeon E5-2695 v4", "cross socket", 118.0, "exact", "nviennot"),
    ("2 x Xeon E5-2680 v4", "SMT sibling", 8.3, "exact", "nviennot"),
    ("2 x Xeon E5-2680 v4", "same socket", 45.2, "exact", "nviennot"),
    ("2 x Xeon E5-2680 v4", "cross socket", 127.5, "exact", "nviennot"),
    ("EPYC 7R13", "SMT sibling", 9.8, "exact", "nviennot"),
    ("EPYC 7R13", "same CCX", 23.0, "exact", "nviennot"),
    ("EPYC 7R13", "cross CCX", 107.0, "exact", "nviennot"),
    ("EPYC 7R13", "cross socket", 197.0, "exact", "nviennot"),
    ("2 x EPYC 7742", "SMT sibling", 8.0, "exact", "nviennot"),
    ("2 x EPYC 7742", "same CCX", 25.3, "exact", "nviennot"),
    ("2 x EPYC 7742", "cross CCX", 132.1, "exact", "nviennot"),
    ("2 x EPYC 7742", "cross socket", 266.7, "exact", "nviennot"),
    ("Ryzen 9 7950X (Zen 4)", "same CCX", 17.0, "range 15-19", "AnandTech"),
    ("Ryzen 9 7950X (Zen 4)", "cross CCX", 79.5, "at most", "AnandTech"),
]
C2C_HOST = {"description": f"several machines, one per row of {FILES['published_c2c']}",
            "cpu_model": None, "sockets": None, "cores": None, "logical_cpus": None, "numa_nodes": None,
            "source": "the cited results"}


def write_adkin(dest) -> None:
    engine = {"name": "sqlserver", "version": "13.0 (SQL Server 2016 CTP 2.2)", "build": "CTP 2.2",
              "edition": None,
              "settings": {"trace_flags": [1117, 2032, 8008], "delayed_durability": "FORCED",
                           "max_server_memory_mb": 57344, "min_server_memory_mb": 57344,
                           "lock_pages_in_memory": True}}
    with RecordingWriter(dest, chapter=CHAPTER, kind="published", engine=engine, host=ADKIN_HOST,
                         parameters={"workload": "singleton inserts into a clustered table keyed on "
                                                 "@@SPID * 10^10 + i, driven by ostress",
                                     "variants": [r[0] for r in RUNS]},
                         citation=ADKIN, started=ADKIN["date"],
                         title="Published: LOGCACHE_ACCESS on a two-socket Xeon (SQL Server 2016 CTP 2.2)") as w:
        w.write_csv(FILES["runs"], pd.DataFrame(RUNS, columns=RUN_COLS), "insert rates as printed in the article")
        w.write_csv(FILES["published_stacks"], pd.DataFrame(SHARES, columns=SHARE_COLS),
                    "shares of sampled CPU the article quotes from its WPA stack captures")
        w.add_note("The article lists its baseline trace flags as '1117, 1117, 2032 and 8008'; the repeated "
                   "1117 is recorded once.")
        w.add_note("Spinlock statistics (LOGCACHE_ACCESS, XDESMGR) and log flush rates appear in the article only "
                   "as charts, which are not in the text transcribed here.")
        w.add_note("Corrected on 2026-11-25: the 14.46% XDESMGR share belongs to the same 34-thread "
                   "conventional-engine run as the 12.32% sqllang.dll share; an earlier transcription attributed it "
                   "to an In-Memory OLTP run, which the article never made.")


def write_c2c(dest) -> None:
    engine = {"name": "native", "version": "Rust (the core-to-core-latency tool: CAS ping-pong, median), as published", "build": None, "edition": None}
    with RecordingWriter(dest, chapter=CHAPTER, kind="published", engine=engine, host=C2C_HOST,
                         parameters={"method": "cas ping-pong between two pinned threads, median round trip / 2"},
                         citation=NVIENNOT, started="n.d.",
                         title="Published: core-to-core latency by distance on server CPUs") as w:
        w.write_csv(FILES["published_c2c"], pd.DataFrame(C2C, columns=C2C_COLS),
                    "one median per machine and relation")


RECORDINGS = {PUBLISHED: write_adkin, PUBLISHED_C2C: write_c2c}

if __name__ == "__main__":
    raise SystemExit(main(CHAPTER, RECORDINGS))
