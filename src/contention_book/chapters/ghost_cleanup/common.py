"""Names, variants and recording layout shared by the ghost-cleanup modules."""
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
