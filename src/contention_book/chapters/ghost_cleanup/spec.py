"""The ghost-cleanup chapter as data: engines, variants, live-run parameters, recording layout."""
from __future__ import annotations

from contention_book.harness import params as P
from contention_book.harness.load_record import LOAD_TABLES
from contention_book.harness.spec import ChapterSpec, Identity, Table, known_variants
from contention_book.harness.sqlserver_preflight import ADR_OFF, SET_RECOVERY, Needs

CHAPTER = "ghost-cleanup"
NOTEBOOK = "03-ghost-cleanup.ipynb"
PUBLISHED = ("published-white-2024-sql2019", "published-white-2024-sql2022")
DEFAULT_MEASURED = "measured-postgres-reference"

# PostgreSQL: nothing held; the same with VACUUM after every chunk (the control that removes dead line pointers
# and index entries as it goes); an idle READ COMMITTED transaction after one SELECT (the article's open RCSI
# transaction: it holds no snapshot between statements); an idle REPEATABLE READ transaction after one SELECT
# (SNAPSHOT isolation's analogue: its snapshot pins every version made after it).  "open_snapshot" keeps its old
# id so recordings made before the READ COMMITTED and VACUUM variants still load.
VARIANTS = {
    "postgres": ("baseline", "vacuum_each_chunk", "idle_read_committed", "open_snapshot"),
    "sqlserver": ("read_committed", "rcsi", "rcsi_open_txn", "rcsi_open_txn_tf7006"),
}
BASELINE = {"postgres": "baseline", "sqlserver": "read_committed"}
LABELS = {
    "read_committed": "read committed (locking)",
    "rcsi": "RCSI",
    "rcsi_open_txn": "RCSI + open RCSI transaction",
    "rcsi_open_txn_tf7006": "RCSI + open transaction, TF 7006",
    "baseline": "nothing held",
    "vacuum_each_chunk": "nothing held, VACUUM after every chunk",
    "idle_read_committed": "idle READ COMMITTED transaction",
    "open_snapshot": "idle REPEATABLE READ transaction",
}
# What each PostgreSQL holder stands for on SQL Server (the prose and the verdicts use the same mapping).
SQLSERVER_TWIN = {"idle_read_committed": "the article's open RCSI transaction",
                  "open_snapshot": "an open SNAPSHOT isolation transaction"}

RUNS_COLUMNS = ("variant", "sessions", "elapsed_s", "operations", "throughput")
# Every run reads the one row back: its key counts the updates that committed (it starts at 0 and each update
# adds 1), and the table must still hold exactly one row.
UPDATES_BALANCE = Identity("updates done (the key read back) = updates asked",
                           lambda f: f["updates_done"] == f["updates_asked"], ("updates_done", "updates_asked"),
                           engines=("postgres", "sqlserver"))
ONE_ROW = Identity("the table holds exactly one row after the run", lambda f: f["live_rows"] == 1, ("live_rows",),
                   engines=("postgres", "sqlserver"))
# What the holding session pins, read from pg_stat_activity before and after the loop.
HOLDER_COLUMNS = ("variant", "phase", "isolation", "state", "xmin_held", "xid_held", "xmin_age")
CURVE_COLUMNS = ("variant", "updates_done", "elapsed_s", "us_per_update")
INDEX_COLUMNS = ("variant", "phase", "level", "pages", "used_pct", "avg_size", "rows", "ghosts", "versions",
                 "ghost_versions")
RELATION_COLUMNS = ("variant", "phase", "relation", "pages", "live_tuples", "dead_tuples")
COUNTER_COLUMNS = ("variant", "counter", "per_second")

LAYOUT = {
    "runs": Table("runs.csv", RUNS_COLUMNS, ("postgres", "sqlserver", "published"),
                  unique=("variant", "sessions", "repetition"),
                  values={"variant": known_variants(VARIANTS, LABELS)}, identities=(UPDATES_BALANCE, ONE_ROW)),
    "curve": Table("samples/update_rate.csv", CURVE_COLUMNS),
    "index": Table("dmv/index_physical_stats.csv", INDEX_COLUMNS, ("sqlserver",),
                   unique=("variant", "repetition", "phase", "level")),
    "relation": Table("dmv/relation_stats.csv", RELATION_COLUMNS, ("postgres",),
                      unique=("variant", "repetition", "phase", "relation")),
    "counters": Table("dmv/perf_counters.csv", COUNTER_COLUMNS),
    "holder": Table("dmv/holder.csv", HOLDER_COLUMNS, unique=("variant", "repetition", "phase"),
                    text=("isolation", "state")),
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
    # the load check: how much of the driven session's time went to waiting for its client
    P.wait_source(),
    P.Param("wait_hz", "float", "wait-event samples per second where they are polled (no pg_wait_sampling)",
            default=20.0, minimum=0.1, maximum=1000, engines=("postgres",)),
)

# What each SQL Server variant needs (harness.sqlserver_preflight): the database options change the recovery
# model and turn ADR off in every variant; TF 7006 exists from SQL Server 2022.
SQLSERVER_NEEDS = {
    "*": Needs(features=frozenset({SET_RECOVERY, ADR_OFF})),
    "read_committed": Needs(why="locking read committed"),
    "rcsi": Needs(why="read committed snapshot"),
    "rcsi_open_txn": Needs(why="RCSI with an open snapshot transaction in another session"),
    "rcsi_open_txn_tf7006": Needs(trace_flags=(7006,), min_major=16,
                                  why="the same with 2022's statement-level ghost cleanup turned off"),
}
# Seconds for the article's 123,456 updates (seed 002: Paul White, 2024): 2019 and 2022 as published.
PUBLISHED_SECONDS = {15: {"read_committed": 2, "rcsi": 82, "rcsi_open_txn": 240},
                     16: {"read_committed": 3, "rcsi": 88, "rcsi_open_txn": 92, "rcsi_open_txn_tf7006": 240}}


def sqlserver_estimate(params, variants, facts):
    per = PUBLISHED_SECONDS[16 if facts.major >= 16 else 15]
    scale = params["updates"] / 123_456
    one_round = sum(per.get(v, 240) * scale + params["cleanup_wait_s"] + 3 for v in variants)
    return params["repetitions"] * one_round, (
        "the article's timings for 123,456 updates on SQL Server 2019/2022 (RC 2-3 s, RCSI 82-88 s, open "
        "transaction 92-240 s) scaled by updates, plus the cleanup wait and ~3 s of setup per run")


SPEC = ChapterSpec(
    chapter=CHAPTER, notebook=NOTEBOOK,
    titles="Ghost cleanup: one row, its key updated over and over",
    variants=VARIANTS, labels=LABELS, params=PARAMS, layout=LAYOUT, published=PUBLISHED,
    reference={"postgres": DEFAULT_MEASURED},
    extra={"sqlserver": SQLSERVER_NEEDS, "sqlserver_estimate": sqlserver_estimate},
)
