"""Names shared by the LMAX-queue chapter's modules: files, columns, variants, defaults."""
from __future__ import annotations

CHAPTER = "lmax-queue"
NOTEBOOK = "05-lmax-queue.ipynb"
ENGINES = ("native", "postgres", "sqlserver")

PUBLISHED_ADKIN = "published-adkin-2016-imoltp"
PUBLISHED_LMAX = "published-lmax-2011-disruptor"
PUBLISHED = (PUBLISHED_ADKIN, PUBLISHED_LMAX)
DEFAULT_MEASURED = {"native": "measured-native-reference", "postgres": "measured-postgres-reference"}

VARIANTS = {
    "native": ("ring", "locked"),
    "postgres": ("ring", "ring_unlogged", "naive", "skip_locked"),
    "sqlserver": ("imoltp_v1", "imoltp_v2", "imoltp_v3", "disk_naive", "disk_ring_sequence"),
}
# variants with consumers as well as producers (the others measure the push alone, as the article did)
CONSUMING = {"naive", "skip_locked", "disk_naive"}
SINGLE_SESSION = {"imoltp_v3"}  # the whole loop is one atomic block: it cannot retry, so one session only

LABELS = {
    "ring": "ring buffer (disruptor)",
    "locked": "mutex + condition variables",
    "ring_unlogged": "ring table, UNLOGGED",
    "naive": "INSERT / DELETE ... RETURNING",
    "skip_locked": "INSERT / DELETE ... SKIP LOCKED",
    "imoltp_v1": "In-Memory OLTP v1 (interpreted loop, two native procs)",
    "imoltp_v2": "In-Memory OLTP v2 (slot inside the native push)",
    "imoltp_v3": "In-Memory OLTP v3 (whole loop natively compiled)",
    "disk_naive": "disk table INSERT + DELETE ... OUTPUT",
    "disk_ring_sequence": "disk ring, slot from a SEQUENCE",
    "array_blocking_queue": "ArrayBlockingQueue (Java)",
    "disruptor": "Disruptor (Java)",
}
PG_LABELS = {"ring": "ring table (HOT updates, logged)"}

# defaults per engine for the parameters that mean different things at different scales
DEFAULTS = {
    "native": {"sessions": (1, 2, 3, 4), "messages_per_session": 4_000_000, "queue_size": 4096},
    "postgres": {"sessions": (1, 2, 4, 8), "messages_per_session": 0, "queue_size": 10_000, "pushes_per_call": 50},
    "sqlserver": {"sessions": (1, 2, 4, 8, 16, 23, 32), "messages_per_session": 50_000, "queue_size": 2_000_000},
}

FILES = {
    "runs": "runs.csv",
    "false_sharing": "samples/false_sharing.csv",
    "waits": "dmv/wait_events.csv",
    "relation": "dmv/relation_stats.csv",
    "spinlocks": "dmv/spinlock_deltas.csv",
    "latches": "dmv/latch_deltas.csv",
    "sqlwaits": "dmv/wait_deltas.csv",
    "findings": "findings.csv",
    "increments": "samples/increment_costs.csv",
}
RUNS_COLUMNS = ("variant", "sessions", "throughput")
FALSE_SHARING_COLUMNS = ("layout", "threads", "increments_per_thread", "ns_per_increment")
WAIT_COLUMNS = ("variant", "sessions", "wait", "samples", "share")
RELATION_COLUMNS = ("variant", "sessions", "relation", "table_bytes", "live_tuples", "dead_tuples", "n_tup_upd",
                    "n_tup_hot_upd")
SPINLOCK_COLUMNS = ("variant", "sessions", "name", "collisions", "spins", "backoffs")
FINDING_COLUMNS = ("order", "topic", "variant", "sessions", "value", "unit", "statement")
INCREMENT_COLUMNS = ("method", "threads", "increments", "elapsed_ms")

SPINLOCKS_FIRST = ("CMED_HASH_SET", "XDESMGR", "BLOCKER_ENUM", "LOGCACHE_ACCESS")
