"""The LMAX-queue chapter as data: engines, variants, live-run parameters, recording layout."""
from __future__ import annotations

from contention_book.harness import params as P
from contention_book.harness.sqlserver_xevents import XEVENT_WAITS
from contention_book.harness.load_record import LOAD_TABLES
from contention_book.harness.spec import ChapterSpec, Identity, Table, known_variants
from contention_book.harness.sqlserver_preflight import FILE_PATH, IMOLTP, Needs

CHAPTER = "lmax-queue"
NOTEBOOK = "05-lmax-queue.ipynb"
ENGINES = ("native", "postgres", "sqlserver")

PUBLISHED_ADKIN = "published-adkin-2016-imoltp"
PUBLISHED_LMAX = "published-lmax-2011-disruptor"
PUBLISHED = (PUBLISHED_ADKIN, PUBLISHED_LMAX)
DEFAULT_MEASURED = {"native": "measured-native-reference", "postgres": "measured-postgres-reference"}

VARIANTS = {
    "native": ("ring", "locked"),
    "postgres": ("ring", "ring_durable", "ring_unlogged", "naive", "skip_locked"),
    "sqlserver": ("imoltp_v1", "imoltp_v2", "imoltp_v3", "disk_naive", "disk_ring_sequence"),
}
# SQL Server variants with consumers as well as producers (the others measure the push alone, as the article
# did); on PostgreSQL every design runs with as many consumers as producers
CONSUMING = {"naive", "skip_locked", "disk_naive"}
SINGLE_SESSION = {"imoltp_v3"}  # the whole loop is one atomic block: it cannot retry, so one session only

LABELS = {
    "ring": "ring",  # one name for the pattern's ring, in C (the figures add "C model") and as a table
    "locked": "mutex + condition variables",
    "ring_unlogged": "ring, UNLOGGED",
    "ring_durable": "ring, commits wait for the WAL flush",
    "naive": "INSERT / DELETE ... RETURNING",
    "skip_locked": "INSERT / DELETE ... SKIP LOCKED",
    "imoltp_v1": "In-Memory OLTP v1 (interpreted loop, two native procs)",
    "imoltp_v2": "In-Memory OLTP v2 (slot inside the native push)",
    "imoltp_v3": "In-Memory OLTP v3 (whole loop natively compiled)",
    "disk_naive": "disk table INSERT + DELETE ... OUTPUT",
    "disk_ring_sequence": "disk ring, slot from a SEQUENCE",
    "legacy_engine": "the legacy (disk-based) engine, as the article lists its limits",
    "array_blocking_queue": "ArrayBlockingQueue (Java)",
    "disruptor": "Disruptor (Java)",
}
PG_LABELS: dict[str, str] = {}  # the PostgreSQL ring is called "ring" too: one design, one name

RUNS_COLUMNS = ("variant", "sessions", "throughput")
PACED_COLUMNS = ("variant", "sessions", "push_rate", "pushed", "dequeued", "elapsed_s", "age_p50_ms", "age_p99_ms")
# the designs compared at one push rate: the ring against the queue tables (their shared rate is half the slowest
# one's closed-loop delivery at one producer and one consumer, so that every one can keep up)
PACED_VARIANTS = ("ring", "naive", "skip_locked")
FALSE_SHARING_COLUMNS = ("layout", "threads", "increments_per_thread", "ns_per_increment")
WAIT_COLUMNS = ("variant", "sessions", "wait", "samples", "share")
RELATION_COLUMNS = ("variant", "sessions", "relation", "table_bytes", "live_tuples", "dead_tuples", "n_tup_upd",
                    "n_tup_hot_upd")
SPINLOCK_COLUMNS = ("variant", "sessions", "name", "collisions", "spins", "backoffs")
FINDING_COLUMNS = ("order", "topic", "variant", "sessions", "value", "unit", "statement")
INCREMENT_COLUMNS = ("method", "threads", "increments", "elapsed_ms")

# What a PostgreSQL queue point must balance (counts over the measured window; warm-up messages are in
# backlog_start).  A design that loses messages or whose consumers take nothing is broken, not slow.
RUNS_IDENTITIES = (
    Identity("pushed = popped + backlog change + lost",
             lambda f: f["pushed"] == f["dequeued"] + (f["backlog"] - f["backlog_start"]) + f["lost"],
             ("pushed", "dequeued", "backlog", "backlog_start", "lost"), engines=("postgres",)),
    Identity("no message lost", lambda f: f["lost"] == 0, ("lost",), engines=("postgres",)),
    Identity("the consumers delivered (took messages whenever any were there to take)",
             lambda f: (f["dequeued"] > 0) | ((f["pushed"] == 0) & (f["backlog_start"] == 0)),
             ("dequeued", "pushed", "backlog_start"), engines=("postgres",)),
    Identity("no consumer idle beside a full ring's worth of backlog",
             lambda f: (f["idle_consumers"] == 0) | (f["backlog"] < f["queue_size"]),
             ("idle_consumers", "backlog", "queue_size"), engines=("postgres",)),
)

LAYOUT = {
    "runs": Table("runs.csv", RUNS_COLUMNS, ("native", "postgres", "sqlserver", "published"),
                  unique=("variant", "sessions", "repetition"),
                  values={"variant": known_variants(VARIANTS, LABELS)}, identities=RUNS_IDENTITIES),
    # the same designs with their producer on a schedule (open loop) at one rate for all (PostgreSQL)
    "paced": Table("results/paced.csv", PACED_COLUMNS, unique=("variant", "sessions", "repetition"),
                   values={"variant": known_variants(VARIANTS, LABELS)}, identities=RUNS_IDENTITIES),
    "false_sharing": Table("results/false_sharing.csv", FALSE_SHARING_COLUMNS, ("native",)),
    "waits": Table("samples/wait_events.csv", WAIT_COLUMNS, unique=("variant", "sessions", "repetition", "wait")),
    "relation": Table("dmv/relation_stats.csv", RELATION_COLUMNS,
                      unique=("variant", "sessions", "repetition", "relation")),
    "spinlocks": Table("dmv/spinlock_deltas.csv", SPINLOCK_COLUMNS),
    "latches": Table("dmv/latch_deltas.csv", ("variant", "sessions", "name", "waits", "wait_time_ms")),
    "sqlwaits": Table("dmv/wait_deltas.csv", ("variant", "sessions", "name", "waits", "wait_time_ms")),
    "xevent_waits": XEVENT_WAITS,
    "findings": Table("published/findings.csv", FINDING_COLUMNS),
    "increments": Table("published/increment_costs.csv", INCREMENT_COLUMNS),
    **LOAD_TABLES,
}
FILES = {key: table.path for key, table in LAYOUT.items()}
OLD_PATHS = {"samples/false_sharing.csv": FILES["false_sharing"], "dmv/wait_events.csv": FILES["waits"]}

SPINLOCKS_FIRST = ("CMED_HASH_SET", "XDESMGR", "BLOCKER_ENUM", "LOGCACHE_ACCESS")

PARAMS = (
    P.sessions({"native": (1, 2, 3, 4), "postgres": (1, 2, 4, 8), "sqlserver": (1, 2, 4, 8, 16, 23, 32)},
               "producer sessions (native: producer threads)"),
    P.variants(VARIANTS),
    *P.load(sqlserver_waits=True),
    P.duration_s(3.0, "seconds per point (database engines)"),
    P.repetitions({"native": 5, "postgres": 5, "sqlserver": 3}),
    P.database(),
    P.Param("messages_per_session", "int", "messages each producer pushes (PostgreSQL: a cap, empty for none)",
            default={"native": 4_000_000, "postgres": None, "sqlserver": 50_000}, minimum=1),
    P.Param("queue_size", "int", "slots in the ring (native: a power of two)",
            default={"native": 4096, "postgres": 10_000, "sqlserver": 2_000_000}, minimum=2,
            check=lambda size, engine: "a power of two for the native ring (it indexes with sequence & (size - 1))"
            if engine == "native" and size & (size - 1) else None),
    P.Param("increments", "int", "increments per thread of the false-sharing demo", default=100_000_000,
            minimum=1000, engines=("native",)),
    P.Param("pushes_per_call", "int", "messages one call pushes (1: a statement and a round trip per message)",
            default=1000, minimum=1, maximum=100_000, engines=("postgres",)),
    P.Param("paced_share", "float", "then ring and queue tables at 1P/1C, producers on a schedule at this share of "
            "the slowest one's flat-out delivery (0: none)", default=0.5, minimum=0.0, maximum=0.95,
            engines=("postgres",)),
    P.Param("push_chunk", "int", "messages per call of the In-Memory OLTP loops", default=1000, minimum=1,
            engines=("sqlserver",)),
)

_XTP = frozenset({IMOLTP, FILE_PATH})  # the ring, and the memory-optimized filegroup's container
SQLSERVER_NEEDS = {  # harness.sqlserver_preflight
    "imoltp_v1": Needs(min_major=13, features=_XTP, why="In-Memory OLTP ring, slot from an interpreted loop"),
    "imoltp_v2": Needs(min_major=13, features=_XTP, why="slot taken inside the natively compiled push"),
    "imoltp_v3": Needs(min_major=13, features=_XTP, why="the whole loop natively compiled (one session)"),
    "disk_naive": Needs(min_major=13, why="naive disk queue, producers and consumers"),
    "disk_ring_sequence": Needs(min_major=13, why="disk ring, slot from a SEQUENCE"),
}
ASSUMED_PUSHES_PER_S = 20_000  # per producer session: an assumption, not a published figure


def sqlserver_estimate(params, variants, facts):
    total = 0.0
    for v in variants:
        sessions = [1] if v in SINGLE_SESSION else params["sessions"]
        for n in sessions:
            push = params["messages_per_session"] / ASSUMED_PUSHES_PER_S
            total += (params["duration_s"] if v in CONSUMING else push) + 2
    return params["repetitions"] * total + 30, (
        f"{ASSUMED_PUSHES_PER_S:,} pushes/s a producer session (an assumption), duration_s for the consuming "
        "design, ~2 s of reset a point and ~30 s to create and fill the ring")


SPEC = ChapterSpec(
    chapter=CHAPTER, notebook=NOTEBOOK,
    titles={"native": "Native: a disruptor ring against a mutex + condition-variable queue",
            "postgres": "LMAX queues on PostgreSQL: ring tables and queue tables",
            "sqlserver": "LMAX queues on SQL Server: In-Memory OLTP ring and disk baselines"},
    variants=VARIANTS, labels=LABELS, params=PARAMS, layout=LAYOUT, published=PUBLISHED,
    reference=DEFAULT_MEASURED, native_programs=("lmax_disruptor", "lmax_false_sharing"),
    extra={"connections_per_session": {"postgres": 2, "sqlserver": 2},
           "sqlserver": SQLSERVER_NEEDS, "sqlserver_estimate": sqlserver_estimate},  # consuming designs: producer + consumer
)
