"""Names shared by the live runs, the analysis and the figures of the last-page-insert chapter."""
from __future__ import annotations

CHAPTER = "last-page-insert"
NOTEBOOK = "04-last-page-insert.ipynb"
PUBLISHED = ("published-sqlcat-2009", "published-latch-whitepaper")
DEFAULT_MEASURED = "measured-postgres-reference"

# Variants per engine.  The first one of each engine is the hot-last-page baseline.
VARIANTS = {
    "postgres": ("sequential", "hash_partitioned", "random_key"),
    "sqlserver": ("sequential", "hash_partitioned", "sequential_optimized"),
}
BASELINE = "sequential"
LABELS = {
    "sequential": "ever-increasing key (one last page)",
    "hash_partitioned": "hash-partitioned (one last page per partition)",
    "random_key": "non-sequential key (hash of the sequence)",
    "sequential_optimized": "ever-increasing key, OPTIMIZE_FOR_SEQUENTIAL_KEY = ON",
}
SHORT = {
    "sequential": "sequential",
    "hash_partitioned": "hash-partitioned",
    "random_key": "non-sequential key",
    "sequential_optimized": "sequential + OPTIMIZE_FOR_SEQUENTIAL_KEY",
}

# The PostgreSQL test table and its name prefix (every relation the workload makes starts with it).
PG_TABLE = "lpi_insert"
# SQL Server tables per variant.
SQLSERVER_TABLES = {
    "sequential": "lpi_sequential",
    "hash_partitioned": "lpi_hash",
    "sequential_optimized": "lpi_sequential_opt",
}
# OPTIMIZE_FOR_SEQUENTIAL_KEY exists from SQL Server 2019 (15.x); sys.dm_db_page_info too.
OPTIMIZE_FOR_SEQUENTIAL_KEY_MAJOR = 15
PAGE_INFO_MAJOR = 15

FILES = {
    "runs": "runs.csv",
    "waits": "samples/wait_shares.csv",
    "pins": "samples/pinned_buffers.csv",
    "waiting_tasks": "samples/waiting_tasks.csv",
    "hot_pages": "dmv/hot_pages.csv",
    "index": "dmv/index_stats.csv",
    "read_cost": "dmv/read_cost.csv",
    "wait_deltas": "dmv/wait_deltas.csv",
    "latch_deltas": "dmv/latch_deltas.csv",
    "published_counters": "dmv/before_after.csv",
}
RUNS_COLUMNS = ("variant", "sessions", "throughput")
WAIT_COLUMNS = ("variant", "sessions", "wait", "samples")
PIN_COLUMNS = ("variant", "sessions", "relation", "block", "pins")
INDEX_COLUMNS = ("variant", "index", "leaf_pages", "avg_leaf_density", "leaf_fragmentation", "rows")
READ_COLUMNS = ("variant", "query", "partitions_touched", "logical_reads")
HOT_COLUMNS = ("variant", "page", "object", "index", "samples", "is_last_page")
