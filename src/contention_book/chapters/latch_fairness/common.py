"""Names shared by the chapter's modules."""
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

FILES = {
    "runs": "runs.csv",
    "latch": "dmv/latch.csv",
    "spinlock": "dmv/spinlock.csv",
    "wait": "dmv/wait.csv",
    "log_space": "dmv/log_space.csv",
    "counters": "samples/perf_counters.csv",
}
RUNS_COLUMNS = ("variant", "repetition", "sessions", "elapsed_s", "operations", "throughput")
NATIVE_COLUMNS = ("kind", "threads", "repetition", "duration_s", "records", "records_per_s", "record_bytes",
                  "waits", "parks", "handoffs", "spins", "backoffs", "queue_spins", "wait_p50_ns", "wait_p99_ns",
                  "wait_p999_ns", "wait_max_ns", "voluntary_cs", "involuntary_cs", "cpu_s", "jain_index",
                  "min_share")
LATCH_COLUMNS = ("variant", "repetition", "name", "waits", "wait_time_ms", "max_wait_time_ms")
SPINLOCK_COLUMNS = ("variant", "repetition", "name", "collisions", "spins", "sleep_time", "backoffs")
WAIT_COLUMNS = ("variant", "repetition", "name", "waits", "wait_time_ms", "max_wait_time_ms", "signal_wait_time_ms")
COUNTER_COLUMNS = ("variant", "repetition", "t_s", "counter", "instance_name", "value", "unit")
