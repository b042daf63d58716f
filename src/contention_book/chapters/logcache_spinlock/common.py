"""Names shared by the chapter's modules: files in a recording, variants, labels."""
from __future__ import annotations

CHAPTER = "logcache-spinlock"
NOTEBOOK = "02-logcache-spinlock.ipynb"
PUBLISHED = "published-adkin-2015-sql2016"
PUBLISHED_C2C = "published-core-to-core-matrices"
DEFAULT_MEASURED = {"native": "measured-native-reference", "postgres": "measured-postgres-reference"}
ENGINES = ("native", "postgres", "sqlserver")

# Variants per engine.  The first is the baseline; the second keeps other work off the log writer's CPU.
VARIANTS = {
    "native": ("writer_shared", "writer_alone"),
    "postgres": ("default", "walwriter_alone"),
    "sqlserver": ("default", "no_logwriter_core"),
}
BASELINE = {engine: v[0] for engine, v in VARIANTS.items()}
RELIEVED = {engine: v[1] for engine, v in VARIANTS.items()}
LABELS = {
    "default": "default affinity",
    "no_logwriter_core": "log writer's core removed from the affinity mask",
    "no_logwriter_core_tf8015": "log writer's core removed, trace flag 8015",
    "walwriter_alone": "walwriter pinned alone on one CPU",
    "writer_shared": "A: log writer shares a CPU with workers",
    "writer_alone": "B: log writer has a CPU to itself",
    "in_memory_oltp": "In-Memory OLTP (natively compiled)",
}

RUNS_COLUMNS = ("variant", "sessions", "throughput")
FILES = {
    "runs": "runs.csv",
    # native
    "c2c": "samples/core_to_core.csv",
    "chase": "samples/load_latency.csv",
    "ctxswitch": "samples/context_switch.csv",
    "topology": "samples/topology.csv",
    # published
    "published_stacks": "stacks/published_shares.csv",
    "published_c2c": "samples/published_core_to_core.csv",
    # postgres
    "pg_waits": "dmv/wait_shares.csv",
    "pg_wal": "dmv/pg_stat_wal.csv",
    # sqlserver
    "spinlocks": "dmv/spinlocks.csv",
    "waits": "dmv/waits.csv",
    "counters": "dmv/perf_counters.csv",
    "log_writer": "dmv/log_writer.csv",
    "schedulers": "dmv/schedulers.csv",
}
COLUMNS = {
    "c2c": ("cpu_a", "cpu_b", "median_one_way_ns"),
    "chase": ("size_bytes", "ns_per_load"),
    "ctxswitch": ("method", "placement", "median_ns_per_handoff"),
    "topology": ("cpu", "core", "package", "l3"),
    "published_stacks": ("variant", "function", "pct"),
    "published_c2c": ("machine", "relation", "median_one_way_ns"),
    "pg_waits": ("variant", "sessions", "backend_type", "wait", "samples", "share"),
    "pg_wal": ("variant", "sessions", "wal_records", "wal_bytes"),
    "spinlocks": ("variant", "sessions", "name", "collisions", "spins", "backoffs"),
    "waits": ("variant", "sessions", "name", "waits", "wait_time_ms"),
    "counters": ("variant", "sessions", "counter", "value", "unit"),
    "log_writer": ("variant", "session_id", "scheduler_id", "cpu_id", "parent_node_id"),
    "schedulers": ("scheduler_id", "cpu_id", "parent_node_id", "is_online"),
}
# The function whose share of sampled CPU the article follows, and PostgreSQL's nearest spin-wait frames.
BACKOFF_FUNCTIONS = {
    "sqlserver": ("LogAppendContext::BackOff",),
    "postgres": ("perform_spin_delay", "s_lock", "finish_spin_delay", "LWLockWaitForVar",
                 "WaitXLogInsertionsToFinish", "LWLockQueueSelf"),
}
WAL_FUNCTIONS = ("XLogInsert", "XLogInsertRecord", "ReserveXLogInsertLocation", "CopyXLogRecordToWAL",
                 "WALInsertLockAcquire", "LWLockAcquire", "LWLockRelease", "XLogFlush", "XLogWrite",
                 "XLogBackgroundFlush")
SPINLOCKS_FIRST = ("LOGCACHE_ACCESS", "XDESMGR")
