"""The last-page chapter as data: engines, variants, live-run parameters, recording layout."""
from __future__ import annotations

from contention_book.harness import params as P
from contention_book.harness.sqlserver_xevents import XEVENT_WAITS
from contention_book.harness.load_record import LOAD_TABLES
from contention_book.harness.spec import ChapterSpec, Identity, Table, known_variants
from contention_book.harness.sqlserver_preflight import Needs

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
# The read-cost query that asks every key design for the same 100 rows (inserted one after another).
RANGE_QUERY = "100 rows inserted in a row"
# SQL Server tables per variant.
SQLSERVER_TABLES = {
    "sequential": "lpi_sequential",
    "hash_partitioned": "lpi_hash",
    "sequential_optimized": "lpi_sequential_opt",
}
# OPTIMIZE_FOR_SEQUENTIAL_KEY exists from SQL Server 2019 (15.x); sys.dm_db_page_info too.
OPTIMIZE_FOR_SEQUENTIAL_KEY_MAJOR = 15
PAGE_INFO_MAJOR = 15

RUNS_COLUMNS = ("variant", "sessions", "throughput")
# Every measured point counts the table's rows before and after its window: what the sessions say they inserted
# must be exactly what appeared (a call that failed half-way, or a retry that inserted twice, shows here).
ROWS_BALANCE = Identity("rows inserted = rows counted in the table afterwards",
                        lambda f: f["rows_inserted"] == f["rows_counted"], ("rows_inserted", "rows_counted"),
                        engines=("postgres", "sqlserver"))
WAIT_COLUMNS = ("variant", "sessions", "wait", "samples")
PIN_COLUMNS = ("variant", "sessions", "relation", "block", "pins")
INDEX_COLUMNS = ("variant", "index", "leaf_pages", "avg_leaf_density", "leaf_fragmentation", "rows")
READ_COLUMNS = ("variant", "query", "partitions_touched", "logical_reads")
HOT_COLUMNS = ("variant", "page", "object", "index", "samples", "is_last_page")

LAYOUT = {
    "runs": Table("runs.csv", RUNS_COLUMNS, ("postgres", "sqlserver", "published"),
                  unique=("variant", "sessions", "repetition"),
                  values={"variant": known_variants(VARIANTS, LABELS)}, identities=(ROWS_BALANCE,)),
    "waits": Table("samples/wait_shares.csv", WAIT_COLUMNS, unique=("variant", "sessions", "repetition", "wait")),
    "pins": Table("samples/pinned_buffers.csv", PIN_COLUMNS),
    "waiting_tasks": Table("samples/waiting_tasks.csv", ()),
    "hot_pages": Table("dmv/hot_pages.csv", HOT_COLUMNS),
    "index": Table("dmv/index_stats.csv", INDEX_COLUMNS, unique=("variant", "repetition", "index")),
    "read_cost": Table("dmv/read_cost.csv", READ_COLUMNS, unique=("variant", "repetition", "query")),
    "wait_deltas": Table("dmv/wait_deltas.csv", ("variant", "sessions", "name", "waits")),
    "xevent_waits": XEVENT_WAITS,
    "latch_deltas": Table("dmv/latch_deltas.csv", ("variant", "sessions", "name", "waits")),
    "before_after": Table("dmv/before_after.csv", ("measurement", "before", "after")),
    "facts": Table("published/facts.csv", ("fact", "value", "unit")),
    **LOAD_TABLES,
}
FILES = {key: table.path for key, table in LAYOUT.items()}

PARAMS = (
    P.sessions((1, 2, 4, 8)),
    P.variants(VARIANTS),
    *P.load(sqlserver_waits=True),
    P.duration_s(7.0),
    P.repetitions({"postgres": 5, "sqlserver": 3}),
    P.database(),
    P.capture_stacks(),
    P.Param("rows_per_session", "int", "stop a point once every session inserted this many rows (empty: no cap)",
            default=None, minimum=1),
    P.Param("rows_per_call", "int", "rows one call inserts (1: one INSERT per round trip; more: a server-side "
            "loop, each row its own transaction)", default={"postgres": 1000, "sqlserver": 100}, minimum=1,
            maximum=10_000),
    P.Param("partitions", "int", "hash partitions of the hash-partitioned variant", default=8, minimum=2,
            maximum=64),
    P.Param("wait_hz", "float", "wait samples per second", default=20.0, minimum=0.1, maximum=1000),
    P.Param("pin_hz", "float", "pinned-buffer samples per second at the deciding and the largest session count "
            "(0: off)",
            default=10.0, minimum=0, maximum=1000, engines=("postgres",)),
)

def deciding_sessions(sessions, cpus) -> int | None:
    """The session count that decides a verdict: the most sessions no higher than the logical CPUs, the articles'
    regime (every inserter can be on a CPU at once).  Points above it are oversubscribed: shown, labelled, never
    deciding.  None when every point is oversubscribed; the most sessions when the CPU count is unknown."""
    counts = sorted({int(s) for s in sessions})
    if not counts:
        return None
    if not cpus:
        return counts[-1]
    fit = [s for s in counts if s <= int(cpus)]
    return fit[-1] if fit else None


SQLSERVER_NEEDS = {  # harness.sqlserver_preflight
    "sequential": Needs(why="ever-increasing key"),
    "hash_partitioned": Needs(why="hash-partitioned on ID % partitions"),
    "sequential_optimized": Needs(min_major=15, why="OPTIMIZE_FOR_SEQUENTIAL_KEY (SQL Server 2019)"),
}


def sqlserver_estimate(params, variants, facts):
    points = params["repetitions"] * len(variants) * len(params["sessions"])
    return points * (params["duration_s"] + 2) + len(variants) * 5, (
        "every point runs at most duration_s, plus ~2 s a point and ~5 s of table setup a variant")


SPEC = ChapterSpec(
    chapter=CHAPTER, notebook=NOTEBOOK,
    titles="Last-page inserts: N sessions inserting single rows",
    variants=VARIANTS, labels=LABELS, params=PARAMS, layout=LAYOUT, published=PUBLISHED,
    reference={"postgres": DEFAULT_MEASURED},
    extra={"sqlserver": SQLSERVER_NEEDS, "sqlserver_estimate": sqlserver_estimate},
)
