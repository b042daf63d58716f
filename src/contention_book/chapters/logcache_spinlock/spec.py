"""The cache-line chapter as data: engines, variants, labels, live-run parameters, recording layout."""
from __future__ import annotations

from contention_book.harness.sqlserver_xevents import XEVENT_WAITS
from contention_book.harness import params as P
from contention_book.harness.load_record import LOAD_TABLES
from contention_book.harness.spec import ChapterSpec, Identity, Table, known_variants
from contention_book.harness.sqlserver_preflight import FILE_PATH, Needs

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
}

# The toy's default buffer (the program's default too): about 10 ms of records at the fastest rate it has reached
# (some 50 million 128-byte records a second), a hundred times the log writer's 100 µs sleep, so a writer that comes
# round on time does the flushing, and a worker flushes only when the writer has fallen that far behind.  (A 60 KiB
# buffer filled in about 50 µs, before the writer woke, so the workers flushed almost all of the log.)
TOY_BUFFER_BYTES = 64 << 20

# Below this many CPUs the toy's variant B cannot give the writer a CPU of its own AND each of two or more
# workers a CPU of its own, and a PostgreSQL walwriter pinned alone takes too large a share of the machine.
MIN_CPUS_FOR_ALONE = 4

# What each point must balance (the live runners write these columns; a measured recording without them is
# refused, naming the column and the identity it is needed for).
RUN_IDENTITIES = (
    Identity("bytes appended under the lock = records × record size = bytes flushed + bytes left in the buffer",
             lambda f: (f["bytes_appended"] == f["records"] * f["record_bytes"])
             & (f["bytes_appended"] == f["bytes_flushed"] + f["bytes_left"]),
             ("records", "record_bytes", "bytes_appended", "bytes_flushed", "bytes_left"), engines=("native",)),
    # not required: recordings made before the program split the flushed bytes by who flushed them lack the columns
    Identity("bytes flushed under the lock = bytes the workers flushed themselves + bytes the log writer flushed",
             lambda f: f["bytes_flushed"] == f["inline_bytes"] + f["writer_bytes"],
             ("bytes_flushed", "inline_bytes", "writer_bytes"), engines=("native",), required=False),
    Identity("rows the driver counted = rows of the measured calls found in the table afterwards",
             lambda f: (f["errors"] > 0) | (f["rows"] == f["rows_counted"]),
             ("rows", "rows_counted", "errors"), engines=("postgres",)),
)

LAYOUT = {
    "runs": Table("runs.csv", ("variant", "sessions", "throughput"), ("postgres", "sqlserver"),
                  unique=("variant", "sessions", "repetition"),
                  values={"variant": known_variants(VARIANTS, LABELS)}, identities=RUN_IDENTITIES),
    # native: what the programs print
    "c2c": Table("results/core_to_core.csv", ("cpu_a", "cpu_b", "median_one_way_ns"), ("native",),
                 optional=("batches", "round_trips_per_batch", "p10_one_way_ns", "p90_one_way_ns", "min_one_way_ns")),
    "chase": Table("results/load_latency.csv", ("size_bytes", "ns_per_load"), ("native",)),
    "ctxswitch": Table("results/context_switch.csv", ("method", "placement", "median_ns_per_handoff"), ("native",)),
    "topology": Table("results/topology.csv", ("cpu", "core", "package", "l3")),
    # published
    "published_stacks": Table("published/backoff_shares.csv", ("variant", "function", "pct")),
    "published_c2c": Table("published/core_to_core.csv", ("machine", "relation", "median_one_way_ns")),
    # postgres
    "pg_waits": Table("samples/wait_shares.csv", ("variant", "sessions", "backend_type", "wait", "samples", "share"),
                      ("postgres",), unique=("variant", "sessions", "repetition", "backend_type", "wait")),
    "pg_wal": Table("dmv/pg_stat_wal.csv", ("variant", "sessions", "wal_records", "wal_bytes"),
                    unique=("variant", "sessions", "repetition")),
    # sqlserver
    "spinlocks": Table("dmv/spinlocks.csv", ("variant", "sessions", "name", "collisions", "spins", "backoffs"),
                       ("sqlserver",)),
    "waits": Table("dmv/waits.csv", ("variant", "sessions", "name", "waits", "wait_time_ms")),
    "xevent_waits": XEVENT_WAITS,
    "counters": Table("dmv/perf_counters.csv", ("variant", "sessions", "counter", "value", "unit")),
    "log_writer": Table("dmv/log_writer.csv", ("variant", "session_id", "scheduler_id", "cpu_id", "parent_node_id")),
    "log_writer_start": Table("dmv/log_writer_start.csv", ("session_id", "scheduler_id", "cpu_id")),
    "schedulers": Table("dmv/schedulers.csv", ("scheduler_id", "cpu_id", "parent_node_id", "is_online")),
    **LOAD_TABLES,
}
FILES = {key: table.path for key, table in LAYOUT.items()}
# Where the files were before the one layout (results/, dmv/, samples/, published/): for relocating recordings.
OLD_PATHS = {"samples/core_to_core.csv": FILES["c2c"], "samples/load_latency.csv": FILES["chase"],
             "samples/context_switch.csv": FILES["ctxswitch"], "samples/topology.csv": FILES["topology"],
             "dmv/wait_shares.csv": FILES["pg_waits"], "stacks/published_shares.csv": FILES["published_stacks"],
             "samples/published_core_to_core.csv": FILES["published_c2c"]}
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

PARAMS = (
    P.sessions({"native": (), "postgres": (1, 2, 4, 8), "sqlserver": (1, 2, 4, 8, 16)},
               "session counts (native: toy log-cache worker threads; empty: n-1 and n CPUs)"),
    P.variants(VARIANTS),
    *P.load(sqlserver_waits=True),
    P.duration_s({"native": 2.0, "postgres": 8.0, "sqlserver": 20.0}),
    P.repetitions({"native": 5, "postgres": 5, "sqlserver": 3}),
    P.database(),
    P.capture_stacks(),
    P.stacks(),
    P.Param("rows_per_session", "int", "most rows one session inserts per point",
            default={"postgres": 2_000_000, "sqlserver": 200_000}, minimum=1, engines=("postgres", "sqlserver")),
    P.Param("batch", "int", "rows one procedure call inserts, each committed",
            default={"postgres": 1000, "sqlserver": 10_000}, minimum=1, engines=("postgres", "sqlserver")),
    P.Param("seed_rows", "int", "rows in the table before each point",
            default={"postgres": 10_000, "sqlserver": 100_000}, minimum=0, engines=("postgres", "sqlserver")),
    P.Param("wait_hz", "float", "wait-event samples per second", default=20.0, minimum=0.1, maximum=1000,
            engines=("postgres",)),
    P.Param("buffer_bytes", "int", "bytes in the toy log cache's buffer (a worker flushes it only when it is full)",
            default=TOY_BUFFER_BYTES, minimum=1024, maximum=1 << 30, engines=("native",)),
    P.Param("c2c_batches", "int", "ping-pong batches per CPU pair", default=300, minimum=10, engines=("native",)),
    P.Param("ctx_batches", "int", "context-switch batches per placement", default=100, minimum=10,
            engines=("native",)),
    P.Param("chase_loads", "int", "dependent loads per working-set size", default=4_000_000, minimum=1000,
            engines=("native",)),
    P.Param("logwriter_cpus", "ints", "CPUs to remove from the affinity mask instead of the log writer's core "
            "as found in the DMVs", default=(), minimum=0, engines=("sqlserver",)),
)

SQLSERVER_NEEDS = {  # harness.sqlserver_preflight: setup.sql adds a filegroup and a file with a path
    "*": Needs(features=frozenset({FILE_PATH})),
    "default": Needs(why="default process affinity"),
    "no_logwriter_core": Needs(affinity=True, why="the log writer's core taken out of the affinity mask"),
}


def sqlserver_estimate(params, variants, facts):
    points = params["repetitions"] * len(variants) * len(params["sessions"])
    return points * (params["duration_s"] + 3) + 20, (
        "every point runs at most duration_s, plus ~3 s to reseed the table a point and ~20 s of setup")


SPEC = ChapterSpec(
    chapter=CHAPTER, notebook=NOTEBOOK,
    titles={"native": "Cache-line economics on this machine: line transfers, loads, context switches, a toy log cache",
            "postgres": "Singleton inserts from N sessions: the log cache under pressure",
            "sqlserver": "Singleton inserts from N sessions: the log cache under pressure"},
    variants=VARIANTS, labels=LABELS, params=PARAMS, layout=LAYOUT,
    published=(PUBLISHED, PUBLISHED_C2C), reference=DEFAULT_MEASURED,
    native_programs=("c2c_pingpong", "c2c_chase", "ctxswitch_pingpong", "logcache_spin"),
    extra={"sqlserver": SQLSERVER_NEEDS, "sqlserver_estimate": sqlserver_estimate},
)
