"""The published recordings of the LMAX-queue chapter, transcribed from their sources.

Two sources, each with its citation in the manifest:

* document 004 (Chris Adkin, "Super scaling queues with the LMAX disruptor
  pattern and In-Memory OLTP", 2015-2016): the order in which the bottlenecks
  appeared, the v1 scaling knee, v2's gain, v3's single-thread rate, the
  spinlocks, and the test machine.  The article shows most of its results as
  graphs without numbers; where it states only a shape ("nearly doubles",
  "falls away at 23 threads") this records the statement as text, never
  invented points.
* the LMAX Disruptor technical paper (v1.0, May 2011): ArrayBlockingQueue
  against the Disruptor, the in-process ceiling.

Nothing here was measured by this project.

    python -m contention_book.chapters.lmax_queue.published [--out DIR]
"""
from __future__ import annotations

import math

import pandas as pd

from contention_book.harness.recording import RecordingWriter

from ..shared.published import main
from .spec import CHAPTER, FILES, PUBLISHED_ADKIN, PUBLISHED_LMAX

NAN = math.nan

ADKIN = {
    "author": "Chris Adkin",
    "title": "Super scaling queues with the LMAX disruptor pattern and In-Memory OLTP",
    "url": "https://chrisadkin.io/",
    "date": "2015-2016",
    "transcribed_from": "shared/seeds/004 (the article's text; its graphs carry no printed numbers)",
    "notes": "Builds on the author's earlier post 'Super Scaling Queues Using the LMax Disruptor Pattern' "
             "(2016-01-02), which credits Thomas Kejser.",
}
ADKIN_HOST = {"description": "2 x 10-core 2.2 GHz Xeon v3 (Haswell), hyper-threading on, 64 GB DDR4, "
                             "Windows Server 2012 R2 (a home build)",
              "cpu_model": "Intel Xeon v3 (Haswell), 2.2 GHz", "sockets": 2, "cores": 20, "logical_cpus": 40,
              "numa_nodes": None, "memory_gb": 64, "os": "Windows Server 2012 R2", "source": "the article"}
LMAX = {
    "author": "Martin Thompson, Dave Farley, Michael Barker, Patricia Gee, Andrew Stewart",
    "title": "Disruptor: High performance alternative to bounded queues for exchanging data between "
             "concurrent threads (technical paper v1.0)",
    "url": "https://lmax-exchange.github.io/disruptor/files/Disruptor-1.0.pdf",
    "date": "2011-05",
    "transcribed_from": "the paper's throughput, latency and increment-cost tables (via RESEARCH.md)",
}
LMAX_HOST = {"description": "the paper's test machine (not transcribed here)", "cpu_model": None, "sockets": None,
             "cores": None, "logical_cpus": None, "numa_nodes": None, "source": "the paper"}

FINDING_COLS = ["order", "topic", "variant", "sessions", "value", "unit", "statement"]


def adkin(dest) -> None:
    runs = pd.DataFrame([{
        "variant": "imoltp_v3", "sessions": 1, "throughput": 200_000, "operations": 2_000_000,
        "note": "one thread, the whole push loop natively compiled: 200,000 messages per second",
    }])
    findings = pd.DataFrame([
        (1, "legacy_bottleneck", "disk_ring_sequence", NAN, NAN, "", "WRITELOG waits; removed with delayed durability"),
        (2, "legacy_bottleneck", "disk_ring_sequence", NAN, NAN, "",
         "PAGELATCH_SH waits; removed by spreading logically contiguous slots over different pages "
         "(least significant digit of the sequence, plus 1,000,000,000)"),
        (3, "legacy_bottleneck", "disk_ring_sequence", NAN, NAN, "",
         "METADATA_SEQUENCE_GENERATOR LATCH_SH waits on the sequence; removed by taking values from an identity "
         "column of a memory-optimized table (SCOPE_IDENTITY())"),
        (4, "scaling_knee", "imoltp_v1", 23, NAN, "threads",
         "v1 falls away from perfect scaling at 23 threads, about half the 40 logical CPUs; 100% service time "
         "(CPU), no lock or latch waits; sqllang.dll burns far more CPU than the in-memory engine"),
        (5, "speedup", "imoltp_v2", NAN, NAN, "",
         "getting the slot inside the natively compiled push nearly doubled throughput (graph, no figure)"),
        (6, "single_thread", "imoltp_v3", 1, 200_000, "msgs/s",
         "whole loop natively compiled: 200,000 messages per second on one thread"),
        (7, "cannot_retry", "imoltp_v3", 2, NAN, "threads",
         "with two threads the natively compiled loop fails: its atomic block cannot be retried inside the procedure"),
        (8, "spinlock", "imoltp_v2", 40, NAN, "threads",
         "LOGCACHE_ACCESS: at 40 threads, 100% CPU and a considerable number of spins, although In-Memory OLTP "
         "writes no write-ahead log records per row"),
        (9, "spinlock", "imoltp_v2", 38, NAN, "threads",
         "LOGCACHE_ACCESS: with the CPU affinity mask keeping the log writer's core free, 38 threads, its "
         "activity dropped significantly"),
        (10, "spinlock", "imoltp_v2", 38, NAN, "threads",
         "CMED_HASH_SET: the ultimate bottleneck of v2, the spinlock on the metadata cache checked before every "
         "execution (latch-free is not spinlock-free)"),
        # 11-12: listed under "What limits the scalability of the legacy engine?", not measured on version 1
        (11, "spinlock", "legacy_engine", NAN, NAN, "",
         "XDESMGR: serializes issuing and destroying transaction ids; not used by In-Memory OLTP when the "
         "procedures are natively compiled"),
        (12, "spinlock", "legacy_engine", NAN, NAN, "",
         "BLOCKER_ENUM: taken when memory-optimized tables are changed from interpreted T-SQL (transactions "
         "that span both engines)"),
    ], columns=FINDING_COLS)
    with RecordingWriter(dest, chapter=CHAPTER, kind="published",
                         engine={"name": "sqlserver", "version": "13.0 CTP 2.4", "build": "SQL Server 2016 CTP 2.4",
                                 "settings": {"trace_flags": [8008, 8048], "delayed_durability": "FORCED"}},
                         host=ADKIN_HOST,
                         parameters={"queue_size": 2_000_000, "messages": 2_000_000, "driver": "ostress",
                                     "ring_bucket_count": 2_097_152, "sequence_bucket_count": 524_288},
                         citation=ADKIN, started=ADKIN["date"],
                         title="Published: a ring-buffer queue on In-Memory OLTP (SQL Server 2016 CTP 2.4)") as w:
        w.write_csv(FILES["runs"], runs, "the one throughput the article states as a number")
        w.write_csv(FILES["findings"], findings, "the article's findings in order; shapes kept as text")
        w.add_note("The article's throughput curves for v1 and v2 are graphs without printed values; "
                   "only their shape (the knee at 23 threads, 'nearly double') is recorded.")


def lmax(dest) -> None:
    runs = pd.DataFrame([
        ("array_blocking_queue", "1P-1C unicast", 1, 1, 5_339_256),
        ("disruptor", "1P-1C unicast", 1, 1, 25_998_336),
        ("array_blocking_queue", "3-stage pipeline", 1, 3, 2_128_918),
        ("disruptor", "3-stage pipeline", 1, 3, 16_806_157),
        ("array_blocking_queue", "3P-1C sequencer", 3, 1, 5_539_531),
        ("disruptor", "3P-1C sequencer", 3, 1, 13_403_268),
    ], columns=["variant", "topology", "sessions", "consumers", "throughput"])
    findings = pd.DataFrame([
        (1, "mean_latency", "array_blocking_queue", 1, 32_757, "ns", "mean latency, 3-stage pipeline, 50M events"),
        (2, "mean_latency", "disruptor", 1, 52, "ns", "mean latency, 3-stage pipeline, 50M events"),
    ], columns=FINDING_COLS)
    increments = pd.DataFrame([
        ("single thread", 1, 500_000_000, 300),
        ("single thread with a lock", 1, 500_000_000, 10_000),
        ("two threads with a lock", 2, 500_000_000, 224_000),
        ("single thread with CAS", 1, 500_000_000, 5_700),
        ("two threads with CAS", 2, 500_000_000, 30_000),
    ], columns=["method", "threads", "increments", "elapsed_ms"])
    with RecordingWriter(dest, chapter=CHAPTER, kind="published",
                         engine={"name": "native", "version": "Java (the paper's JVM)", "build": None},
                         host=LMAX_HOST, parameters={"unit": "operations per second"},
                         citation=LMAX, started=LMAX["date"],
                         title="Published: ArrayBlockingQueue against the Disruptor (LMAX, 2011)") as w:
        w.write_csv(FILES["runs"], runs, "throughput in operations per second, as tabulated in the paper")
        w.write_csv(FILES["findings"], findings, "mean latency of the 3-stage pipeline")
        w.write_csv(FILES["increments"], increments, "cost of incrementing a 64-bit counter 500M times")


RECORDINGS = {PUBLISHED_ADKIN: adkin, PUBLISHED_LMAX: lmax}

if __name__ == "__main__":
    raise SystemExit(main(CHAPTER, RECORDINGS))
