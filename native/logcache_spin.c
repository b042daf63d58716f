/* A toy "log cache": workers append records under one spinlock; a log writer flushes.
 *
 * The lock is a test-and-test-and-set spinlock on its own cache line.  A
 * worker that finds it taken counts a *collision*, then polls it with an
 * exponentially growing pause between polls (1, 2, 4 ... --max-delay PAUSEs;
 * every PAUSE counts as a *spin*); after --spin-limit spins without getting
 * the lock it *backs off*: sched_yield() gives the CPU to whoever else may
 * run there, and the polling starts over.  Those three counters are what
 * sys.dm_os_spinlock_stats reports for LOGCACHE_ACCESS.
 *
 * Inside the lock a worker copies a --record-bytes record into a
 * --buffer-bytes buffer.  A log writer thread wakes every --flush-us
 * microseconds, takes the same lock and "flushes" the buffer: it copies it
 * out, piece by piece, to a 1 MiB sink.  Only when the buffer is full does a
 * worker step in: it flushes the buffer itself, inside the lock
 * (--full=inline, the default), or releases the lock and waits for the log
 * writer to empty it (--full=wait).  The default buffer (64 MiB) holds about
 * 10 ms of records at the fastest rate seen (some 50 million 128-byte records
 * a second), a hundred times the writer's sleep, so a writer that comes round
 * on time does the flushing and a worker flushes only when the writer has
 * fallen that far behind.  (A 60 KiB buffer filled in about 50 us, before the
 * writer woke, and the workers flushed nearly all of it.)
 *
 * Pin the writer to a CPU that workers also run on (variant A) or to a CPU of
 * its own (variant B).  With A, the writer's wake-up can preempt a worker
 * that holds the lock, and every other worker then spins until that worker
 * runs again; the writer itself waits for its CPU and for the lock, so its
 * flushes fall behind and the workers flush the buffer themselves (or wait).
 *
 *   logcache_spin --workers=2 --worker-cpus=0,1 --writer-cpu=0 [--seconds=2] [--variant=A]
 *                 [--record-bytes=128] [--buffer-bytes=67108864] [--flush-us=100]
 *                 [--spin-limit=4000] [--max-delay=64] [--full=inline|wait]
 *
 * CSV on stdout, one row: see the header printed below.  Its last five columns
 * balance on their own: bytes_appended (counted under the lock) = records x
 * record_bytes (the workers' own counts) = bytes_flushed + bytes_left (in the
 * buffer at the end), and bytes_flushed (counted under the lock) =
 * inline_bytes (flushed by workers, their own counts) + writer_bytes (flushed
 * by the log writer, its own count).
 */
#include "common.h"

#include <stdatomic.h>

static const char *PROG = "logcache_spin";

typedef struct {
    _Atomic int locked CB_ALIGNED;
} spinlock_t;

typedef struct {
    uint64_t acquisitions, collisions, spins, backoffs;
    uint64_t records, inline_flushes, full_waits, flushes;
    uint64_t flushed_bytes; /* bytes this thread copied out of the buffer */
    cb_hist wait; /* sampled time to acquire the lock, ns */
} CB_ALIGNED counters_t;

static spinlock_t lock;
static struct {
    size_t offset CB_ALIGNED;
} logbuf_state;
static char *logbuf, *flushed;
#define SINK_BYTES ((size_t)1 << 20) /* where a flush copies to: the log "device", reused by every flush */
static _Atomic int stop_flag CB_ALIGNED;
static long record_bytes = 128, buffer_bytes = 64L << 20, flush_us = 100, spin_limit = 4000, max_delay = 64;
static int inline_flush = 1;

static inline void acquire(counters_t *c) {
    c->acquisitions++;
    if (!atomic_exchange_explicit(&lock.locked, 1, memory_order_acquire)) return;
    c->collisions++;
    long delay = 1, spun = 0;
    for (;;) {
        while (atomic_load_explicit(&lock.locked, memory_order_relaxed)) {
            for (long d = 0; d < delay; d++) cb_cpu_relax();
            c->spins += (uint64_t)delay;
            spun += delay;
            if (delay < max_delay) delay *= 2;
            if (spun >= spin_limit) {
                c->backoffs++;
                sched_yield();
                spun = 0;
                delay = 1;
            }
        }
        if (!atomic_exchange_explicit(&lock.locked, 1, memory_order_acquire)) return;
    }
}

static inline void release(void) { atomic_store_explicit(&lock.locked, 0, memory_order_release); }

static uint64_t bytes_flushed;  /* changed only under the lock: every byte copied out of the buffer */
static uint64_t bytes_appended; /* changed only under the lock: every byte copied into it */

static size_t flush_locked(void) { /* returns the bytes flushed */
    size_t n = logbuf_state.offset;
    for (size_t done = 0; done < n; done += SINK_BYTES) /* "write" the buffer out, one sink-sized piece at a time */
        memcpy(flushed, logbuf + done, n - done < SINK_BYTES ? n - done : SINK_BYTES);
    bytes_flushed += n;
    logbuf_state.offset = 0;
    return n;
}

typedef struct {
    int cpu;
    counters_t c;
} worker_arg;

static void *worker(void *p) {
    worker_arg *w = p;
    if (w->cpu >= 0 && cb_pin_self(w->cpu) != 0) {
        fprintf(stderr, "%s: cannot pin a worker to CPU %d\n", PROG, w->cpu);
        exit(2);
    }
    char *record = malloc((size_t)record_bytes);
    if (!record) cb_die(PROG, "out of memory");
    uint64_t n = 0;
    while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
        memset(record, (int)(n & 0xff), (size_t)record_bytes); /* the record is built outside the lock */
        int timed = (n & 15) == 0;
        uint64_t t0 = timed ? cb_now_ns() : 0;
        acquire(&w->c);
        while (logbuf_state.offset + (size_t)record_bytes > (size_t)buffer_bytes) {
            if (inline_flush) { /* the worker writes the full buffer out itself */
                w->c.flushed_bytes += flush_locked();
                w->c.inline_flushes++;
                break;
            }
            release(); /* only the log writer empties the buffer: wait for it */
            w->c.full_waits++;
            long spun = 0;
            while (*(volatile size_t *)&logbuf_state.offset + (size_t)record_bytes > (size_t)buffer_bytes &&
                   !atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
                cb_cpu_relax();
                if (++spun >= spin_limit) {
                    sched_yield();
                    spun = 0;
                }
            }
            if (atomic_load_explicit(&stop_flag, memory_order_relaxed)) goto out;
            acquire(&w->c);
        }
        if (timed) cb_hist_record(&w->c.wait, cb_now_ns() - t0);
        memcpy(logbuf + logbuf_state.offset, record, (size_t)record_bytes);
        logbuf_state.offset += (size_t)record_bytes;
        bytes_appended += (uint64_t)record_bytes;
        release();
        w->c.records++;
        n++;
    }
out:
    free(record);
    return NULL;
}

typedef struct {
    int cpu;
    counters_t c;
} writer_arg;

static void *writer(void *p) {
    writer_arg *w = p;
    if (cb_pin_self(w->cpu) != 0) {
        fprintf(stderr, "%s: cannot pin the log writer to CPU %d\n", PROG, w->cpu);
        exit(2);
    }
    struct timespec nap = {flush_us / 1000000, (flush_us % 1000000) * 1000};
    while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
        nanosleep(&nap, NULL);
        uint64_t t0 = cb_now_ns();
        acquire(&w->c);
        cb_hist_record(&w->c.wait, cb_now_ns() - t0);
        w->c.flushed_bytes += flush_locked();
        release();
        w->c.flushes++;
    }
    return NULL;
}

static int parse_cpus(const char *text, int *out, int max) {
    int n = 0;
    const char *p = text;
    while (*p && n < max) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v >= CPU_SETSIZE || (*end && *end != ',')) {
            fprintf(stderr, "%s: --worker-cpus=%s: expected a comma-separated list of CPU numbers\n", PROG, text);
            exit(2);
        }
        out[n++] = (int)v;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

int main(int argc, char **argv) {
    long workers = 2, writer_cpu = -1, seconds_ms = 2000;
    int cpus[CPU_SETSIZE];
    int ncpus = cb_allowed_cpus(cpus, CPU_SETSIZE);
    char variant[64] = "unnamed";
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strncmp(arg, "--workers=", 10)) workers = cb_parse_long(PROG, "--workers", arg + 10, 1, 1024);
        else if (!strncmp(arg, "--worker-cpus=", 14)) ncpus = parse_cpus(arg + 14, cpus, CPU_SETSIZE);
        else if (!strncmp(arg, "--writer-cpu=", 13)) writer_cpu = cb_parse_long(PROG, "--writer-cpu", arg + 13, -1, CPU_SETSIZE - 1);
        else if (!strncmp(arg, "--seconds-ms=", 13)) seconds_ms = cb_parse_long(PROG, "--seconds-ms", arg + 13, 10, 3600000);
        else if (!strncmp(arg, "--seconds=", 10)) seconds_ms = 1000 * cb_parse_long(PROG, "--seconds", arg + 10, 1, 3600);
        else if (!strncmp(arg, "--record-bytes=", 15)) record_bytes = cb_parse_long(PROG, "--record-bytes", arg + 15, 8, 65536);
        else if (!strncmp(arg, "--buffer-bytes=", 15)) buffer_bytes = cb_parse_long(PROG, "--buffer-bytes", arg + 15, 1024, 1L << 30);
        else if (!strncmp(arg, "--flush-us=", 11)) flush_us = cb_parse_long(PROG, "--flush-us", arg + 11, 1, 10000000);
        else if (!strncmp(arg, "--spin-limit=", 13)) spin_limit = cb_parse_long(PROG, "--spin-limit", arg + 13, 1, 1L << 40);
        else if (!strncmp(arg, "--max-delay=", 12)) max_delay = cb_parse_long(PROG, "--max-delay", arg + 12, 1, 1L << 20);
        else if (!strcmp(arg, "--full=inline")) inline_flush = 1;
        else if (!strcmp(arg, "--full=wait")) inline_flush = 0;
        else if (!strncmp(arg, "--variant=", 10)) snprintf(variant, sizeof variant, "%s", arg + 10);
        else {
            fprintf(stderr, "%s: unknown option %s; expected --workers= --worker-cpus= --writer-cpu= --seconds= "
                            "--variant= --record-bytes= --buffer-bytes= --flush-us= --spin-limit= --max-delay= --full=wait|inline\n",
                    PROG, arg);
            return 2;
        }
    }
    if (ncpus < 1) cb_die(PROG, "--worker-cpus: no CPUs to run workers on");
    if (buffer_bytes < record_bytes) cb_die(PROG, "--buffer-bytes must be at least --record-bytes");
    if (!inline_flush && writer_cpu < 0) cb_die(PROG, "--full=wait needs a log writer (--writer-cpu=N)");
    for (size_t i = 0; variant[i]; i++)
        if (variant[i] == ',' || variant[i] == '"' || variant[i] == '\n') cb_die(PROG, "--variant: no commas or quotes");
    logbuf = malloc((size_t)buffer_bytes);
    flushed = malloc(SINK_BYTES);
    worker_arg *wa = calloc((size_t)workers, sizeof(worker_arg));
    pthread_t *wt = calloc((size_t)workers, sizeof(pthread_t));
    writer_arg *lw = calloc(1, sizeof(writer_arg));
    if (!logbuf || !flushed || !wa || !wt || !lw) cb_die(PROG, "out of memory");
    /* touch every page now, so no first-touch page fault lands inside the lock during the run */
    memset(logbuf, 0, (size_t)buffer_bytes);
    memset(flushed, 0, SINK_BYTES);
    atomic_store(&stop_flag, 0);
    uint64_t t0 = cb_now_ns();
    for (long i = 0; i < workers; i++) {
        wa[i].cpu = cpus[i % ncpus];
        if (pthread_create(&wt[i], NULL, worker, &wa[i]) != 0) cb_die(PROG, "pthread_create failed");
    }
    pthread_t lwt;
    if (writer_cpu >= 0) {
        lw->cpu = (int)writer_cpu;
        if (pthread_create(&lwt, NULL, writer, lw) != 0) cb_die(PROG, "pthread_create failed");
    }
    struct timespec run = {seconds_ms / 1000, (seconds_ms % 1000) * 1000000};
    nanosleep(&run, NULL);
    atomic_store(&stop_flag, 1);
    for (long i = 0; i < workers; i++) pthread_join(wt[i], NULL);
    if (writer_cpu >= 0) pthread_join(lwt, NULL);
    double elapsed = (double)(cb_now_ns() - t0) / 1e9;
    counters_t sum;
    memset(&sum, 0, sizeof sum);
    for (long i = 0; i < workers; i++) {
        sum.records += wa[i].c.records;
        sum.collisions += wa[i].c.collisions;
        sum.spins += wa[i].c.spins;
        sum.backoffs += wa[i].c.backoffs;
        sum.inline_flushes += wa[i].c.inline_flushes;
        sum.full_waits += wa[i].c.full_waits;
        sum.flushed_bytes += wa[i].c.flushed_bytes;
        cb_hist_merge(&sum.wait, &wa[i].c.wait);
    }
    double r = sum.records ? (double)sum.records : 1.0;
    char cpu_list[4096] = "";
    size_t used = 0;
    for (int i = 0; i < ncpus && i < workers && used + 8 < sizeof cpu_list; i++)
        used += (size_t)snprintf(cpu_list + used, sizeof cpu_list - used, "%s%d", i ? " " : "", cpus[i]);
    printf("variant,workers,worker_cpus,writer_cpu,elapsed_s,records,throughput,collisions,spins,backoffs,"
           "collisions_per_record,spins_per_record,backoffs_per_record,inline_flushes,full_waits,writer_flushes,"
           "writer_collisions,writer_spins,writer_backoffs,writer_wait_p50_ns,writer_wait_p99_ns,writer_wait_max_ns,"
           "worker_wait_p50_ns,worker_wait_p99_ns,worker_wait_max_ns,record_bytes,buffer_bytes,flush_us,spin_limit,max_delay,full,"
           "bytes_appended,bytes_flushed,bytes_left,inline_bytes,writer_bytes\n");
    printf("%s,%ld,%s,%ld,%.4f,%llu,%.1f,%llu,%llu,%llu,%.5f,%.4f,%.6f,%llu,%llu,%llu,%llu,%llu,%llu,%.0f,%.0f,%llu,"
           "%.0f,%.0f,%llu,%ld,%ld,%ld,%ld,%ld,%s,%llu,%llu,%llu,%llu,%llu\n",
           variant, workers, cpu_list, writer_cpu, elapsed, (unsigned long long)sum.records, (double)sum.records / elapsed,
           (unsigned long long)sum.collisions, (unsigned long long)sum.spins, (unsigned long long)sum.backoffs,
           (double)sum.collisions / r, (double)sum.spins / r, (double)sum.backoffs / r,
           (unsigned long long)sum.inline_flushes, (unsigned long long)sum.full_waits, (unsigned long long)lw->c.flushes,
           (unsigned long long)lw->c.collisions, (unsigned long long)lw->c.spins, (unsigned long long)lw->c.backoffs,
           cb_hist_quantile_ns(&lw->c.wait, 0.5), cb_hist_quantile_ns(&lw->c.wait, 0.99),
           (unsigned long long)lw->c.wait.max_ns, cb_hist_quantile_ns(&sum.wait, 0.5),
           cb_hist_quantile_ns(&sum.wait, 0.99), (unsigned long long)sum.wait.max_ns, record_bytes, buffer_bytes,
           flush_us, spin_limit, max_delay, inline_flush ? "inline" : "wait", (unsigned long long)bytes_appended,
           (unsigned long long)bytes_flushed, (unsigned long long)logbuf_state.offset,
           (unsigned long long)sum.flushed_bytes, (unsigned long long)lw->c.flushed_bytes);
    fprintf(stderr, "%s: %s, %ld workers on [%s], writer on CPU %ld: %.2f M records/s, %.3f spins and %.5f "
                    "backoffs per record; the writer flushed %.1f%% of the log, the workers %llu times\n", PROG,
            variant, workers, cpu_list, writer_cpu, (double)sum.records / elapsed / 1e6, (double)sum.spins / r,
            (double)sum.backoffs / r, bytes_flushed ? 100.0 * (double)lw->c.flushed_bytes / (double)bytes_flushed : 0.0,
            (unsigned long long)sum.inline_flushes);
    return 0;
}
