/* latch_convoy: fair hand-off versus barging on one hot lock.
 *
 * N threads append "log records" to one shared buffer: each thread builds a
 * record of k bytes outside the lock, then, under the lock, copies it into
 * the buffer at the shared offset and advances the offset.  That is the
 * shape of parallel workers adding log records to one transaction's log
 * cache under SQL Server's NESTING_TRANSACTION_FULL latch.
 *
 * Lock kinds (one implementation, four policies):
 *   fair            FIFO hand-off: the releaser passes ownership to the
 *                   longest waiter and wakes it; nobody may barge.  No spin.
 *   unfair          barging: the releaser frees the lock, then wakes one
 *                   waiter; whoever is running and tries first takes it.  No spin.
 *   spin_then_park  barging, and a thread that finds the lock held spins
 *                   with a growing PAUSE loop for a bounded time, then backs
 *                   off (sched_yield) a few times, then parks.
 *   eventual        barging with a short spin, but the releaser hands off
 *                   directly when the waiter at the head of the queue has
 *                   waited more than a bound (--fair-after-us), as Go's
 *                   sync.Mutex and Rust's parking_lot do.  The bound covers
 *                   time in the queue; the time a woken or handed-to thread
 *                   then waits for a CPU is outside any lock's control.
 *
 * Waiters park on their own futex word, in a FIFO queue guarded by a small
 * internal spinlock.  A woken waiter that loses the race goes back to the
 * front of the queue and keeps its original arrival time.
 *
 * A "wait" is counted as the DMVs count a latch wait: when an acquisition
 * joins the queue to sleep.  A waiter granted (or woken) before its futex call
 * never actually sleeps; voluntary context switches count the real sleeps.
 *
 * Output (stdout, CSV): one row per (kind, threads, repetition).  Its last two
 * columns let a recording be checked on its own: records_under_lock (the
 * counter advanced inside the critical section) and acquisitions (the timed
 * acquisitions) must both equal records (the threads' own counts, summed).
 * Progress on
 * stderr.  Exit 2 on a bad option, 3 if the lock let two threads in at once
 * (each thread marks itself as the holder inside the critical section and
 * checks that nobody else is there; the records counted under the lock must
 * also equal the records the threads counted).
 *
 *   latch_convoy --kinds fair,unfair --threads 1,2,4,8 --duration-ms 500 \
 *                --repetitions 3 --record-bytes 64 --fair-after-us 500
 */
#include "common.h"

#include <linux/futex.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/syscall.h>

static const char *PROG = "latch_convoy";

enum kind { FAIR, UNFAIR, SPIN_THEN_PARK, EVENTUAL, NKINDS };
static const char *KIND_NAMES[NKINDS] = {"fair", "unfair", "spin_then_park", "eventual"};

/* ---- options ---------------------------------------------------------------- */
#define MAX_THREADS 1024
#define MAX_POINTS 64
static int opt_kinds[NKINDS], opt_nkinds;
static int opt_threads[MAX_POINTS], opt_nthreads;
static long opt_duration_ms = 1500, opt_reps = 3, opt_record_bytes = 64;
static long opt_fair_after_us = 500, opt_spin_us = 20, opt_backoffs = 4;
static long opt_buffer_kib = 1024;

/* ---- futex ------------------------------------------------------------------ */
static long futex_wait(_Atomic uint32_t *addr, uint32_t expected) {
    return syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}
static long futex_wake(_Atomic uint32_t *addr, int n) {
    return syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/* ---- per-thread counters ------------------------------------------------------ */
typedef struct CB_ALIGNED {
    uint64_t records, waits, parks, spins, backoffs, handoffs, queue_spins;
    cb_hist hist;               /* time from asking for the lock to holding it */
    long nvcsw, nivcsw;         /* context switches, getrusage(RUSAGE_THREAD) deltas */
    double cpu_s;
} tstats;

/* ---- the lock ----------------------------------------------------------------- */
enum { W_WAITING = 0, W_GRANTED = 1, W_WOKEN = 2 };

typedef struct waiter {
    _Atomic uint32_t state;     /* futex word */
    uint64_t since_ns;          /* first time this acquisition parked */
    struct waiter *next;
} waiter;

#define LOCKED 1u
#define PARKED 2u

typedef struct {
    _Atomic uint32_t state CB_ALIGNED;   /* LOCKED | PARKED */
    _Atomic uint32_t qlock CB_ALIGNED;   /* guards the queue */
    waiter *head, *tail;
    enum kind kind;
    uint64_t fair_after_ns, spin_ns;
    int backoffs;
} latch;

static void qlock_acquire(latch *l, tstats *st) {
    for (;;) {
        if (!atomic_exchange_explicit(&l->qlock, 1, memory_order_acquire)) return;
        unsigned n = 0;
        while (atomic_load_explicit(&l->qlock, memory_order_relaxed)) {
            st->queue_spins++;
            if (++n < 64) cb_cpu_relax();
            else { sched_yield(); n = 0; }   /* the holder may have been preempted */
        }
    }
}
static void qlock_release(latch *l) { atomic_store_explicit(&l->qlock, 0, memory_order_release); }

static bool try_barge(latch *l) {
#ifdef LATCH_CONVOY_SELFTEST_BROKEN
    /* Built only by the tests: a barger ignores the holder, so the mutual-exclusion check must fire. */
    atomic_fetch_or_explicit(&l->state, LOCKED, memory_order_acquire);
    return true;
#endif
    uint32_t s = atomic_load_explicit(&l->state, memory_order_relaxed);
    while (!(s & LOCKED)) {
        if (atomic_compare_exchange_weak_explicit(&l->state, &s, s | LOCKED, memory_order_acquire,
                                                  memory_order_relaxed))
            return true;
    }
    return false;
}

/* Park until granted (W_GRANTED: we own the lock) or woken to compete (W_WOKEN); TOOK_IT when the lock
 * turned out to be free before we slept. */
#define TOOK_IT 3u
static uint32_t park(latch *l, waiter *w, bool front, tstats *st) {
    qlock_acquire(l, st);
    uint32_t s = atomic_load_explicit(&l->state, memory_order_relaxed);
    for (;;) {
        if (!(s & LOCKED)) {
            if (atomic_compare_exchange_weak_explicit(&l->state, &s, s | LOCKED, memory_order_acquire,
                                                      memory_order_relaxed)) {
                qlock_release(l);
                return TOOK_IT;
            }
            continue;
        }
        if (atomic_compare_exchange_weak_explicit(&l->state, &s, s | PARKED, memory_order_relaxed,
                                                  memory_order_relaxed))
            break;
    }
    atomic_store_explicit(&w->state, W_WAITING, memory_order_relaxed);
    if (front) {
        w->next = l->head;
        l->head = w;
        if (!l->tail) l->tail = w;
    } else {
        w->next = NULL;
        if (l->tail) l->tail->next = w; else l->head = w;
        l->tail = w;
    }
    qlock_release(l);
    st->parks++;
    uint32_t v;
    while ((v = atomic_load_explicit(&w->state, memory_order_acquire)) == W_WAITING)
        futex_wait(&w->state, W_WAITING);
    return v;
}

static void latch_acquire(latch *l, tstats *st) {
    uint64_t t0 = cb_now_ns();
    bool fair = l->kind == FAIR;
    /* fast path: free and (for the fair lock) nobody queued */
    uint32_t expect = 0;
    if (atomic_compare_exchange_strong_explicit(&l->state, &expect, LOCKED, memory_order_acquire,
                                                memory_order_relaxed)) {
        cb_hist_record(&st->hist, cb_now_ns() - t0);
        return;
    }
    if (!fair && try_barge(l)) {
        cb_hist_record(&st->hist, cb_now_ns() - t0);
        return;
    }
    /* bounded spin with a growing PAUSE loop, then back off */
    uint64_t spin_ns = l->kind == SPIN_THEN_PARK ? l->spin_ns : l->kind == EVENTUAL ? 2000 : 0;
    if (spin_ns) {
        uint64_t until = t0 + spin_ns;
        unsigned pauses = 1;
        for (;;) {
            for (unsigned i = 0; i < pauses; i++) cb_cpu_relax();
            st->spins += pauses;
            if (try_barge(l)) { cb_hist_record(&st->hist, cb_now_ns() - t0); return; }
            if (pauses < 64) pauses <<= 1;
            if (cb_now_ns() >= until) break;
        }
        int backoffs = l->kind == SPIN_THEN_PARK ? l->backoffs : 0;
        for (int b = 0; b < backoffs; b++) {
            st->backoffs++;
            sched_yield();
            if (try_barge(l)) { cb_hist_record(&st->hist, cb_now_ns() - t0); return; }
        }
    }
    waiter w = {.since_ns = cb_now_ns(), .next = NULL};
    bool front = false, slept = false;
    for (;;) {
        uint32_t got = park(l, &w, front, st);
        if (got != TOOK_IT && !slept) {
            slept = true;
            st->waits++;                /* one wait per acquisition that joined the queue, as the DMVs count */
        }
        if (got != W_WOKEN) break;      /* granted, or free before we slept */
        if (try_barge(l)) break;        /* woken: compete like anyone else */
        front = true;                   /* lost the race: back to the front of the queue */
    }
    cb_hist_record(&st->hist, cb_now_ns() - t0);
}

static void latch_release(latch *l, tstats *st) {
    uint32_t expect = LOCKED;
    if (atomic_compare_exchange_strong_explicit(&l->state, &expect, 0, memory_order_release,
                                                memory_order_relaxed))
        return;                          /* nobody parked */
    qlock_acquire(l, st);
    waiter *w = l->head;
    if (!w) {                            /* the last waiter left meanwhile */
        atomic_store_explicit(&l->state, 0, memory_order_release);
        qlock_release(l);
        return;
    }
    l->head = w->next;
    if (!l->head) l->tail = NULL;
    uint32_t parked = l->head ? PARKED : 0;
    bool handoff = l->kind == FAIR ||
                   (l->kind == EVENTUAL && cb_now_ns() - w->since_ns > l->fair_after_ns);
    uint32_t grant;
    if (handoff) {                       /* ownership passes directly: LOCKED stays set */
        atomic_store_explicit(&l->state, LOCKED | parked, memory_order_release);
        grant = W_GRANTED;
        st->handoffs++;
    } else {                             /* free the lock, then wake one waiter to compete */
        atomic_store_explicit(&l->state, parked, memory_order_release);
        grant = W_WOKEN;
    }
    atomic_store_explicit(&w->state, grant, memory_order_release);
    qlock_release(l);
    /* w lives on the waiter's stack; once it sees the grant it may return and reuse that address for a
     * later wait, so this wake can be spurious for that later wait, which re-checks its word and sleeps on. */
    futex_wake(&w->state, 1);
}

/* ---- the work ------------------------------------------------------------------ */
static latch L;
static unsigned char *buffer;
static size_t buffer_bytes;
static size_t offset CB_ALIGNED;        /* shared, changed only under the lock */
static uint64_t appended;               /* plain counter under the lock: checks mutual exclusion */
static _Atomic int holder;              /* 0, or 1 + the id of the thread inside the critical section */
static _Atomic int go CB_ALIGNED, stop;
static _Atomic int ready;

typedef struct {
    int id;
    tstats st;
} worker;

static enum kind running_kind;

static void broken(const char *what) {
    fprintf(stderr, "%s: %s lock broken: %s\n", PROG, KIND_NAMES[running_kind], what);
    exit(3);
}

static double tv_s(struct timeval tv) { return (double)tv.tv_sec + tv.tv_usec / 1e6; }

static void *run_worker(void *arg) {
    worker *wk = arg;
    tstats *st = &wk->st;
    unsigned char record[4096];
    uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(wk->id + 1);
    struct rusage r0, r1;
    atomic_fetch_add(&ready, 1);
    while (!atomic_load_explicit(&go, memory_order_acquire)) cb_cpu_relax();
    getrusage(RUSAGE_THREAD, &r0);      /* after the start line: waiting for the others is not measured */
    const int me = wk->id + 1;
    size_t k = (size_t)opt_record_bytes;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        /* build the record outside the lock */
        for (size_t i = 0; i < k; i += 8) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            memcpy(record + i, &x, k - i < 8 ? k - i : 8);
        }
        latch_acquire(&L, st);
        /* relaxed atomics compile to plain moves, so the check costs almost nothing and is never folded away */
        if (atomic_load_explicit(&holder, memory_order_relaxed) != 0) broken("a thread entered while another held it");
        atomic_store_explicit(&holder, me, memory_order_relaxed);
        if (offset + k > buffer_bytes) offset = 0;   /* the "log block" is full: start the next */
        memcpy(buffer + offset, record, k);
        offset += k;
        appended++;
        if (atomic_load_explicit(&holder, memory_order_relaxed) != me) broken("another thread entered meanwhile");
        atomic_store_explicit(&holder, 0, memory_order_relaxed);
        latch_release(&L, st);
        st->records++;
    }
    getrusage(RUSAGE_THREAD, &r1);
    st->nvcsw = r1.ru_nvcsw - r0.ru_nvcsw;
    st->nivcsw = r1.ru_nivcsw - r0.ru_nivcsw;
    st->cpu_s = tv_s(r1.ru_utime) - tv_s(r0.ru_utime) + tv_s(r1.ru_stime) - tv_s(r0.ru_stime);
    return NULL;
}

static void run_point(enum kind kind, int threads, int rep) {
    memset(&L, 0, sizeof L);
    L.kind = kind;
    running_kind = kind;
    atomic_store(&holder, 0);
    L.fair_after_ns = (uint64_t)opt_fair_after_us * 1000;
    L.spin_ns = (uint64_t)opt_spin_us * 1000;
    L.backoffs = (int)opt_backoffs;
    offset = 0;
    appended = 0;
    atomic_store(&go, 0);
    atomic_store(&stop, 0);
    atomic_store(&ready, 0);
    worker *ws = calloc((size_t)threads, sizeof *ws);
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    if (!ws || !tids) cb_die(PROG, "out of memory");
    for (int i = 0; i < threads; i++) {
        ws[i].id = i;
        if (pthread_create(&tids[i], NULL, run_worker, &ws[i]) != 0) cb_die(PROG, "pthread_create failed");
    }
    while (atomic_load(&ready) < threads) sched_yield();
    uint64_t t0 = cb_now_ns();
    atomic_store_explicit(&go, 1, memory_order_release);
    struct timespec d = {opt_duration_ms / 1000, (opt_duration_ms % 1000) * 1000000L};
    while (nanosleep(&d, &d) != 0 && errno == EINTR) {}
    atomic_store_explicit(&stop, 1, memory_order_relaxed);
    uint64_t t1 = cb_now_ns();
    for (int i = 0; i < threads; i++) pthread_join(tids[i], NULL);

    tstats sum;
    memset(&sum, 0, sizeof sum);
    double cpu = 0, sumsq = 0;
    uint64_t minrec = UINT64_MAX;
    for (int i = 0; i < threads; i++) {
        tstats *s = &ws[i].st;
        sum.records += s->records; sum.waits += s->waits; sum.parks += s->parks; sum.spins += s->spins;
        sum.backoffs += s->backoffs; sum.handoffs += s->handoffs; sum.queue_spins += s->queue_spins;
        sum.nvcsw += s->nvcsw; sum.nivcsw += s->nivcsw;
        cpu += s->cpu_s;
        sumsq += (double)s->records * (double)s->records;
        if (s->records < minrec) minrec = s->records;
        cb_hist_merge(&sum.hist, &s->hist);
    }
    if (appended != sum.records) {
        fprintf(stderr, "%s: %s lock broken: %llu records counted under the lock, %llu by the threads\n", PROG,
                KIND_NAMES[kind], (unsigned long long)appended, (unsigned long long)sum.records);
        exit(3);
    }
    double secs = (t1 - t0) / 1e9;
    double mean = (double)sum.records / threads;
    double jain = sumsq > 0 ? ((double)sum.records * sum.records) / (threads * sumsq) : 1.0;
    printf("%s,%d,%d,%.6f,%llu,%.1f,%ld,%llu,%llu,%llu,%llu,%llu,%llu,%.0f,%.0f,%.0f,%llu,%ld,%ld,%.4f,%.4f,%.4f,%ld,"
           "%llu,%llu\n",
           KIND_NAMES[kind], threads, rep, secs, (unsigned long long)sum.records, sum.records / secs,
           opt_record_bytes, (unsigned long long)sum.waits, (unsigned long long)sum.parks,
           (unsigned long long)sum.handoffs, (unsigned long long)sum.spins, (unsigned long long)sum.backoffs,
           (unsigned long long)sum.queue_spins, cb_hist_quantile_ns(&sum.hist, 0.50),
           cb_hist_quantile_ns(&sum.hist, 0.99), cb_hist_quantile_ns(&sum.hist, 0.999),
           (unsigned long long)sum.hist.max_ns, sum.nvcsw, sum.nivcsw, cpu, jain,
           mean > 0 ? minrec / mean : 0.0, kind == EVENTUAL ? opt_fair_after_us : -1,
           (unsigned long long)appended, (unsigned long long)sum.hist.total);
    fflush(stdout);
    fprintf(stderr, "[latch_convoy] %-14s threads=%-3d rep=%d  %12.0f records/s  waits/record %.3f  "
            "p99 %.0f ns  max %llu ns  cs %ld+%ld\n", KIND_NAMES[kind], threads, rep, sum.records / secs,
            sum.records ? (double)sum.waits / sum.records : 0.0, cb_hist_quantile_ns(&sum.hist, 0.99),
            (unsigned long long)sum.hist.max_ns, sum.nvcsw, sum.nivcsw);
    free(ws);
    free(tids);
}

/* ---- options ------------------------------------------------------------------- */
static void usage(void) {
    fprintf(stderr,
            "usage: %s [--kinds fair,unfair,spin_then_park,eventual] [--threads 1,2,4,8,16,32]\n"
            "          [--duration-ms 1500] [--repetitions 3] [--record-bytes 64] [--fair-after-us 500]\n"
            "          [--spin-us 20] [--backoffs 4] [--buffer-kib 1024]\n", PROG);
    exit(2);
}

static void parse_kinds(const char *text) {
    char buf[256];
    if (strlen(text) >= sizeof buf) cb_die(PROG, "--kinds: list too long");
    strcpy(buf, text);
    opt_nkinds = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int found = -1;
        for (int k = 0; k < NKINDS; k++)
            if (!strcmp(tok, KIND_NAMES[k])) found = k;
        if (found < 0) {
            fprintf(stderr, "%s: --kinds: unknown kind '%s'; expected some of fair,unfair,spin_then_park,eventual\n",
                    PROG, tok);
            exit(2);
        }
        if (opt_nkinds >= NKINDS) cb_die(PROG, "--kinds: each kind at most once");
        opt_kinds[opt_nkinds++] = found;
    }
    if (!opt_nkinds) cb_die(PROG, "--kinds: name at least one kind");
}

static void parse_threads(const char *text) {
    char buf[512];
    if (strlen(text) >= sizeof buf) cb_die(PROG, "--threads: list too long");
    strcpy(buf, text);
    opt_nthreads = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (opt_nthreads >= MAX_POINTS) cb_die(PROG, "--threads: at most 64 thread counts");
        opt_threads[opt_nthreads++] = (int)cb_parse_long(PROG, "--threads", tok, 1, MAX_THREADS);
    }
    if (!opt_nthreads) cb_die(PROG, "--threads: name at least one thread count");
}

int main(int argc, char **argv) {
    parse_kinds("fair,unfair,spin_then_park,eventual");
    parse_threads("1,2,4,8,16,32");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) usage();
        if (i + 1 >= argc) {
            fprintf(stderr, "%s: option %s needs a value\n", PROG, a);
            exit(2);
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--kinds")) parse_kinds(v);
        else if (!strcmp(a, "--threads")) parse_threads(v);
        else if (!strcmp(a, "--duration-ms")) opt_duration_ms = cb_parse_long(PROG, a, v, 1, 3600000);
        else if (!strcmp(a, "--repetitions")) opt_reps = cb_parse_long(PROG, a, v, 1, 1000);
        else if (!strcmp(a, "--record-bytes")) opt_record_bytes = cb_parse_long(PROG, a, v, 1, 4096);
        else if (!strcmp(a, "--fair-after-us")) opt_fair_after_us = cb_parse_long(PROG, a, v, 0, 10000000);
        else if (!strcmp(a, "--spin-us")) opt_spin_us = cb_parse_long(PROG, a, v, 0, 10000000);
        else if (!strcmp(a, "--backoffs")) opt_backoffs = cb_parse_long(PROG, a, v, 0, 1000);
        else if (!strcmp(a, "--buffer-kib")) opt_buffer_kib = cb_parse_long(PROG, a, v, 4, 1 << 20);
        else {
            fprintf(stderr, "%s: unknown option %s\n", PROG, a);
            usage();
        }
    }
    buffer_bytes = (size_t)opt_buffer_kib * 1024;
    buffer = aligned_alloc(CACHE_LINE, buffer_bytes);
    if (!buffer) cb_die(PROG, "out of memory for the shared buffer");
    memset(buffer, 0, buffer_bytes);
    int cpus[1024];
    int ncpu = cb_allowed_cpus(cpus, 1024);
    fprintf(stderr, "[latch_convoy] %d kinds x %d thread counts x %ld repetitions, %ld ms each, %ld-byte records, "
            "%d CPUs allowed\n", opt_nkinds, opt_nthreads, opt_reps, opt_duration_ms, opt_record_bytes, ncpu);
    printf("kind,threads,repetition,duration_s,records,records_per_s,record_bytes,waits,parks,handoffs,spins,"
           "backoffs,queue_spins,wait_p50_ns,wait_p99_ns,wait_p999_ns,wait_max_ns,voluntary_cs,involuntary_cs,"
           "cpu_s,jain_index,min_share,fair_after_us,records_under_lock,acquisitions\n");
    /* repetition-major, so slow drift of a busy machine spreads over every kind */
    for (int rep = 0; rep < opt_reps; rep++)
        for (int t = 0; t < opt_nthreads; t++)
            for (int k = 0; k < opt_nkinds; k++) run_point((enum kind)opt_kinds[k], opt_threads[t], rep);
    free(buffer);
    return 0;
}
