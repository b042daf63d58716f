"""The ghost-cleanup chapter as data: engines, variants, live-run parameters, recording layout."""
from __future__ import annotations

from contention_book.harness import params as P
from contention_book.harness.load_record import LOAD_TABLES
from contention_book.harness.spec import ChapterSpec, Table, known_variants

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

LAYOUT = {
    "runs": Table("runs.csv", RUNS_COLUMNS, ("postgres", "sqlserver", "published"),
                  unique=("variant", "sessions", "repetition"),
                  values={"variant": known_variants(VARIANTS, LABELS)}),
    "curve": Table("samples/update_rate.csv", CURVE_COLUMNS),
    "index": Table("dmv/index_physical_stats.csv", INDEX_COLUMNS, ("sqlserver",),
                   unique=("variant", "repetition", "phase", "level")),
    "relation": Table("dmv/relation_stats.csv", RELATION_COLUMNS, ("postgres",),
                      unique=("variant", "repetition", "phase", "relation")),
    "counters": Table("dmv/perf_counters.csv", COUNTER_COLUMNS),
    **LOAD_TABLES,
}
FILES = {key: table.path for key, table in LAYOUT.items()}

PARAMS = (
    P.variants(VARIANTS),
    P.repetitions({"postgres": 5, "sqlserver": 3}),
    P.database(),
    P.capture_stacks(),
    P.Param("updates", "int", "updates of the one row, one transaction each", default=123_456, minimum=1,
            maximum=100_000_000),
    P.Param("chunk", "int", "updates per call (empty: a hundredth of the updates)", default=None, minimum=1),
    P.Param("cleanup_wait_s", "float", "seconds to wait for the ghost cleanup task after each variant",
            default=10.0, minimum=0, maximum=3600),
)

SPEC = ChapterSpec(
    chapter=CHAPTER, notebook=NOTEBOOK,
    titles={"postgres": "Ghost cleanup: one row, its key updated over and over",
            "sqlserver": "Ghost cleanup: one row, its key updated over and over"},
    variants=VARIANTS, labels=LABELS, params=PARAMS, layout=LAYOUT, published=PUBLISHED,
    reference={"postgres": DEFAULT_MEASURED},
)
