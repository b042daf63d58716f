"""The latch chapter as data: engines, lock kinds and variants, live-run parameters, recording layout."""
from __future__ import annotations

from contention_book.harness import params as P
from contention_book.harness.spec import ChapterSpec, Identity, Table, known_variants
from contention_book.harness.sqlserver_preflight import FILE_PATH, SET_RECOVERY, Needs

CHAPTER = "latch-fairness"
NOTEBOOK = "01-latch-fairness.ipynb"
PUBLISHED = "published-white-2022-sql2019"
DEFAULT_MEASURED = "measured-native-reference"
ENGINES = ("native", "sqlserver")

PROGRAM = "latch_convoy"
KINDS = ("fair", "unfair", "spin_then_park", "eventual")
KIND_LABELS = {
    "fair": "fair (FIFO hand-off)",
    "unfair": "unfair (barging)",
    "spin_then_park": "spin, back off, then park",
    "eventual": "eventually fair (hand-off after a bound)",
}
# The native lock most like SQL Server's unfair latch: it barges, spins, backs off, then waits.
SQL_UNFAIR_ANALOGUE = "spin_then_park"

SQL_VARIANTS = ("fair", "unfair")
VARIANT_LABELS = {"fair": "fair latch (default)", "unfair": "unfair latch (trace flag 3933)"}
LATCH = "NESTING_TRANSACTION_FULL"
LATCH_SPIN = "LATCH_SPIN_STATS"
TRACE_FLAG = 3933
TRACE_FLAG_MIN_MAJOR = 15  # SQL Server 2019 (the flag arrived in 2019 CTP 2.5)

RUNS_COLUMNS = ("variant", "repetition", "sessions", "elapsed_s", "operations", "throughput")
NATIVE_COLUMNS = ("kind", "threads", "repetition", "duration_s", "records", "records_per_s", "record_bytes",
                  "waits", "parks", "handoffs", "spins", "backoffs", "queue_spins", "wait_p50_ns", "wait_p99_ns",
                  "wait_p999_ns", "wait_max_ns", "voluntary_cs", "involuntary_cs", "cpu_s", "jain_index",
                  "min_share")
# latch_convoy prints its own accounting; a measured native recording without these columns is refused.
NATIVE_ACCOUNTING = ("records_under_lock", "acquisitions")

# What each native point must balance (what went in = what came out): the threads' own record counts, summed, are
# the records appended under the lock and the acquisitions timed; a hand-off goes to a waiter that queued, and a
# queued acquisition parked at least once.  The lock kinds that never hand off record none.
NATIVE_IDENTITIES = (
    Identity("records counted by the threads = records appended under the lock = acquisitions timed",
             lambda f: (f["records"] == f["records_under_lock"]) & (f["records"] == f["acquisitions"]),
             ("records", "records_under_lock", "acquisitions"), engines=("native",)),
    Identity("hand-offs ≤ waits ≤ parks ≤ records + parks (every hand-off went to a queued waiter)",
             lambda f: (f["handoffs"] <= f["waits"]) & (f["waits"] <= f["parks"]) & (f["waits"] <= f["records"]),
             ("handoffs", "waits", "parks", "records"), engines=("native",)),
    Identity("no hand-offs by the locks that never hand off (unfair, spin then park)",
             lambda f: ~f["kind"].isin(("unfair", "spin_then_park")) | (f["handoffs"] == 0),
             ("kind", "handoffs"), engines=("native",)),
)
LATCH_COLUMNS = ("variant", "repetition", "name", "waits", "wait_time_ms", "max_wait_time_ms")
SPINLOCK_COLUMNS = ("variant", "repetition", "name", "collisions", "spins", "sleep_time", "backoffs")
WAIT_COLUMNS = ("variant", "repetition", "name", "waits", "wait_time_ms", "max_wait_time_ms", "signal_wait_time_ms")
COUNTER_COLUMNS = ("variant", "repetition", "t_s", "counter", "instance_name", "value", "unit")

LAYOUT = {
    "runs": Table("runs.csv", RUNS_COLUMNS, ("native", "sqlserver", "published"),
                  unique=("variant", "sessions", "repetition"),
                  values={"variant": known_variants({"native": KINDS, "sqlserver": SQL_VARIANTS},
                                                    {**KIND_LABELS, **VARIANT_LABELS})},
                  identities=NATIVE_IDENTITIES),
    "latch": Table("dmv/latch.csv", LATCH_COLUMNS, ("sqlserver", "published")),
    "spinlock": Table("dmv/spinlock.csv", SPINLOCK_COLUMNS, ("sqlserver", "published")),
    "wait": Table("dmv/wait.csv", WAIT_COLUMNS, ("sqlserver", "published")),
    "log_space": Table("dmv/log_space.csv", ()),
    "counters": Table("samples/perf_counters.csv", COUNTER_COLUMNS),
}
FILES = {key: table.path for key, table in LAYOUT.items()}

PARAMS = (
    P.sessions({"native": (1, 2, 4, 8, 16, 32)}, "thread counts of the native sweep"),
    P.variants({"native": KINDS, "sqlserver": SQL_VARIANTS}),
    P.duration_s({"native": 1.5}, "seconds per lock kind, thread count and repetition"),
    P.repetitions({"native": 5, "sqlserver": 3}),
    P.database(("sqlserver",)),
    P.Param("record_bytes", "int", "bytes copied under the lock per record", default=64, minimum=1, maximum=4096,
            engines=("native",)),
    P.Param("fair_after_us", "int", "the eventually fair lock hands off after this many microseconds",
            default=500, minimum=1, engines=("native",)),
    P.Param("spin_us", "int", "spin budget before backing off (spinning kinds)", default=20, minimum=0,
            engines=("native",)),
    P.Param("backoffs", "int", "backoffs before parking (spin-then-park)", default=4, minimum=0, engines=("native",)),
    P.Param("rows", "int", "rows per parallel INSERT ... SELECT", default=64 * 1024 * 1024, minimum=1,
            engines=("sqlserver",)),
    P.Param("maxdop", "int", "degree of parallelism (empty: schedulers - 1)", default=None, minimum=1,
            maximum=64, engines=("sqlserver",)),
    P.Param("data_mb", "int", "MB of data pre-allocated in all, split evenly over one data file per scheduler",
            default=2048, minimum=8, engines=("sqlserver",)),
    P.Param("log_mb", "int", "MB pre-allocated for the log", default=2560, minimum=8, engines=("sqlserver",)),
    P.Param("sample_counters", "bool", "sample performance counters at 1 Hz during each insert", default=True,
            engines=("sqlserver",)),
    P.Param("clear_stats", "bool", "clear wait, latch and spinlock statistics server-wide before each variant "
            "(needs allow_server_changes)", default=False, engines=("sqlserver",)),
)

# SQL Server needs (harness.sqlserver_preflight): recovery model changes and one data file per scheduler;
# the unfair latch is trace flag 3933, from SQL Server 2019.
SQLSERVER_NEEDS = {
    "*": Needs(features=frozenset({SET_RECOVERY, FILE_PATH})),
    "fair": Needs(why="the default, FIFO latch"),
    "unfair": Needs(trace_flags=(TRACE_FLAG,), min_major=TRACE_FLAG_MIN_MAJOR, why="trace flag 3933: barging latch"),
}
ARTICLE_SECONDS = {"fair": 5.5, "unfair": 4.5}  # 64M rows on 12 logical CPUs at MAXDOP 11 (seed 000)


def sqlserver_estimate(params, variants, facts):
    scale = params["rows"] / (64 * 1024 * 1024)
    one_round = sum(ARTICLE_SECONDS.get(v, 5.5) * scale + 10 for v in variants)
    return params["repetitions"] * one_round + 30, (
        "the article's 5.5 s (fair) and 4.5 s (unfair) for 64M rows scaled by rows, plus ~10 s of truncate and "
        "checkpoints a run and ~30 s to pre-allocate files with instant file initialization (far longer without)")


SPEC = ChapterSpec(
    chapter=CHAPTER, notebook=NOTEBOOK,
    titles={"native": "Latch fairness: a hot lock under four hand-off policies",
            "sqlserver": "Latch fairness: parallel INSERT ... SELECT, fair and unfair latch"},
    variants={"native": KINDS, "sqlserver": SQL_VARIANTS}, labels={**KIND_LABELS, **VARIANT_LABELS},
    params=PARAMS, layout=LAYOUT, published=(PUBLISHED,), reference={"native": DEFAULT_MEASURED},
    native_programs=(PROGRAM,),
    extra={"sqlserver": SQLSERVER_NEEDS, "sqlserver_estimate": sqlserver_estimate},
)
