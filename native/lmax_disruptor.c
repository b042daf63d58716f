/* A disruptor-style ring against a mutex + condition-variable bounded queue.
 *
 *   lmax_disruptor --queue ring|locked --producers P --messages M
 *                  [--size 65536] [--spin 200] [--sample 16] [--repetitions 1] [--pin 1]
 *
 * P producer threads each push M messages; one consumer takes all P*M.
 *
 * ring:   a power-of-two array of pre-allocated entries indexed by
 *         (sequence & mask).  A producer claims its sequence with an atomic
 *         fetch-add on the claim cursor, waits until the consumer has freed
 *         that slot, writes the entry in place and publishes it by storing its
 *         sequence into the slot's availability word (so several producers
 *         may finish out of order and the consumer still never reads a slot
 *         that is claimed but not yet written).  The consumer reads forward as
 *         far as slots are published (a batch) and then moves its cursor once
 *         for the whole batch.  Cursors sit on cache lines of their own.
 * locked: the textbook bounded buffer: one mutex, two condition variables,
 *         one message taken per lock acquisition (java.util.concurrent's
 *         ArrayBlockingQueue works the same way).
 *
 * Waiting in the ring is a bounded spin (--spin PAUSEs) followed by
 * sched_yield(): on a machine with fewer CPUs than threads a pure spin would
 * burn the time slice the thread it waits for needs.
 *
 * Latency: every --sample-th message of a producer carries the time it was
 * offered (before its slot was claimed); the consumer records now - then in a
 * histogram.  Output: CSV on stdout, one row per repetition; progress on stderr.
 * Exit 1 if a message is lost, duplicated or reordered within its producer.
 */
#include "common.h"

#include <stdatomic.h>

static const char *PROG = "lmax_disruptor";

typedef struct {
    uint64_t value;     /* producer << 40 | its own sequence number */
    uint64_t stamp_ns;  /* 0: not sampled */
} entry_t;

/* -- options ---------------------------------------------------------------- */
static int opt_locked = 0;
static long opt_producers = 1, opt_messages = 1000000, opt_size = 65536, opt_spin = 200, opt_sample = 16;
static long opt_reps = 1, opt_pin = 1;

/* -- shared state ------------------------------------------------------------ */
typedef struct {
    CB_ALIGNED _Atomic int64_t claim;     /* next sequence a producer may take (fetch-add) */
    CB_ALIGNED _Atomic int64_t consumed;  /* last sequence the consumer is done with */
    CB_ALIGNED int64_t mask;
    entry_t *entries;
    _Atomic int64_t *available;           /* per slot: the sequence last published there */
} ring_t;

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t not_empty, not_full;
    entry_t *entries;
    long size, head, count;
} locked_t;

static ring_t ring;
static locked_t lq;
static pthread_barrier_t start_line;
static int cpus[CPU_SETSIZE];
static int ncpus;

typedef struct {
    long id;
    uint64_t yields;
} producer_arg;

typedef struct {
    cb_hist hist;
    uint64_t received, batches, yields, errors;
    uint64_t *next_expected; /* per producer */
} consumer_state;

static inline void wait_step(long *spins, uint64_t *yields) {
    if (*spins < opt_spin) {
        cb_cpu_relax();
        (*spins)++;
    } else {
        sched_yield();
        (*yields)++;
        *spins = 0;
    }
}

static void pin(long which) {
    if (!opt_pin || ncpus < 1) return;
    int rc = cb_pin_self(cpus[which % ncpus]);
    if (rc) fprintf(stderr, "%s: pinning to CPU %d failed (%s); running unpinned\n", PROG, cpus[which % ncpus], strerror(rc));
}

/* -- ring ---------------------------------------------------------------------- */
static void ring_push(uint64_t value, uint64_t stamp, uint64_t *yields) {
    int64_t seq = atomic_fetch_add_explicit(&ring.claim, 1, memory_order_relaxed);
    long spins = 0;
    /* the slot is free once the consumer has finished the sequence one lap behind */
    while (seq - (ring.mask + 1) > atomic_load_explicit(&ring.consumed, memory_order_acquire))
        wait_step(&spins, yields);
    entry_t *e = &ring.entries[seq & ring.mask];
    e->value = value;
    e->stamp_ns = stamp;
    atomic_store_explicit(&ring.available[seq & ring.mask], seq, memory_order_release);
}

static void ring_consume(consumer_state *st, uint64_t total) {
    int64_t next = 0;
    long spins = 0;
    while (st->received < total) {
        if (atomic_load_explicit(&ring.available[next & ring.mask], memory_order_acquire) != next) {
            wait_step(&spins, &st->yields);
            continue;
        }
        spins = 0;
        /* batch: everything published from next on, up to one lap */
        int64_t last = next;
        while (last + 1 - next < ring.mask + 1 &&
               atomic_load_explicit(&ring.available[(last + 1) & ring.mask], memory_order_acquire) == last + 1)
            last++;
        uint64_t now = 0;
        for (int64_t s = next; s <= last; s++) {
            const entry_t *e = &ring.entries[s & ring.mask];
            uint64_t p = e->value >> 40, n = e->value & ((1ull << 40) - 1);
            if (p >= (uint64_t)opt_producers || n != st->next_expected[p]) st->errors++;
            else st->next_expected[p]++;
            if (e->stamp_ns) {
                if (!now) now = cb_now_ns();
                cb_hist_record(&st->hist, now > e->stamp_ns ? now - e->stamp_ns : 0);
            }
        }
        st->received += (uint64_t)(last - next + 1);
        st->batches++;
        atomic_store_explicit(&ring.consumed, last, memory_order_release);
        next = last + 1;
    }
}

/* -- mutex + condition variables ---------------------------------------------- */
static void locked_push(uint64_t value, uint64_t stamp) {
    pthread_mutex_lock(&lq.lock);
    while (lq.count == lq.size) pthread_cond_wait(&lq.not_full, &lq.lock);
    entry_t *e = &lq.entries[(lq.head + lq.count) % lq.size];
    e->value = value;
    e->stamp_ns = stamp;
    lq.count++;
    pthread_cond_signal(&lq.not_empty);
    pthread_mutex_unlock(&lq.lock);
}

static void locked_consume(consumer_state *st, uint64_t total) {
    while (st->received < total) {
        pthread_mutex_lock(&lq.lock);
        while (lq.count == 0) pthread_cond_wait(&lq.not_empty, &lq.lock);
        entry_t e = lq.entries[lq.head];
        lq.head = (lq.head + 1) % lq.size;
        lq.count--;
        pthread_cond_signal(&lq.not_full);
        pthread_mutex_unlock(&lq.lock);
        uint64_t p = e.value >> 40, n = e.value & ((1ull << 40) - 1);
        if (p >= (uint64_t)opt_producers || n != st->next_expected[p]) st->errors++;
        else st->next_expected[p]++;
        if (e.stamp_ns) {
            uint64_t now = cb_now_ns();
            cb_hist_record(&st->hist, now > e.stamp_ns ? now - e.stamp_ns : 0);
        }
        st->received++;
        st->batches++;
    }
}

/* -- threads -------------------------------------------------------------------- */
static void *producer(void *argp) {
    producer_arg *a = argp;
    pin(1 + a->id);
    pthread_barrier_wait(&start_line);
    const uint64_t base = (uint64_t)a->id << 40;
    for (long i = 0; i < opt_messages; i++) {
        uint64_t stamp = (i % opt_sample == 0) ? cb_now_ns() : 0;
        if (opt_locked) locked_push(base | (uint64_t)i, stamp);
        else ring_push(base | (uint64_t)i, stamp, &a->yields);
    }
    return NULL;
}

static void usage(void) {
    fprintf(stderr,
            "usage: %s --queue ring|locked --producers P --messages M [--size 65536 (power of two)] "
            "[--spin 200] [--sample 16] [--repetitions 1] [--pin 1|0]\n", PROG);
    exit(2);
}

int main(int argc, char **argv) {
    const char *queue = NULL;
    for (int i = 1; i < argc; i++) {
        const char *name = argv[i];
        if (i + 1 >= argc) {
            fprintf(stderr, "%s: option %s needs a value\n", PROG, name);
            usage();
        }
        const char *val = argv[++i];
        if (!strcmp(name, "--queue")) queue = val;
        else if (!strcmp(name, "--producers")) opt_producers = cb_parse_long(PROG, name, val, 1, 64);
        else if (!strcmp(name, "--messages")) opt_messages = cb_parse_long(PROG, name, val, 1, 1L << 38);
        else if (!strcmp(name, "--size")) opt_size = cb_parse_long(PROG, name, val, 2, 1L << 26);
        else if (!strcmp(name, "--spin")) opt_spin = cb_parse_long(PROG, name, val, 0, 1L << 30);
        else if (!strcmp(name, "--sample")) opt_sample = cb_parse_long(PROG, name, val, 1, 1L << 30);
        else if (!strcmp(name, "--repetitions")) opt_reps = cb_parse_long(PROG, name, val, 1, 1000);
        else if (!strcmp(name, "--pin")) opt_pin = cb_parse_long(PROG, name, val, 0, 1);
        else {
            fprintf(stderr, "%s: unknown option %s\n", PROG, name);
            usage();
        }
    }
    if (!queue) cb_die(PROG, "--queue is required: expected ring or locked");
    if (!strcmp(queue, "locked")) opt_locked = 1;
    else if (strcmp(queue, "ring")) {
        fprintf(stderr, "%s: --queue=%s: expected ring or locked\n", PROG, queue);
        exit(2);
    }
    if (opt_size & (opt_size - 1)) {
        fprintf(stderr, "%s: --size=%ld: expected a power of two (the ring indexes with a mask)\n", PROG, opt_size);
        exit(2);
    }
    ncpus = cb_allowed_cpus(cpus, CPU_SETSIZE);

    entry_t *entries = aligned_alloc(CACHE_LINE, sizeof(entry_t) * (size_t)opt_size);
    _Atomic int64_t *available = aligned_alloc(CACHE_LINE, sizeof(int64_t) * (size_t)opt_size);
    uint64_t *expected = calloc((size_t)opt_producers, sizeof(uint64_t));
    if (!entries || !available || !expected) cb_die(PROG, "out of memory for the queue");

    printf("queue,producers,consumers,messages,repetition,elapsed_s,msgs_per_s,p50_ns,p95_ns,p99_ns,max_ns,"
           "latency_samples,mean_batch,producer_yields,consumer_yields,cpus\n");
    for (long rep = 0; rep < opt_reps; rep++) {
        /* pre-allocate and touch every entry before the clock starts */
        memset(entries, 0, sizeof(entry_t) * (size_t)opt_size);
        for (long s = 0; s < opt_size; s++) atomic_init(&available[s], -1);
        atomic_init(&ring.claim, 0);
        atomic_init(&ring.consumed, -1);
        ring.mask = opt_size - 1;
        ring.entries = entries;
        ring.available = available;
        pthread_mutex_init(&lq.lock, NULL);
        pthread_cond_init(&lq.not_empty, NULL);
        pthread_cond_init(&lq.not_full, NULL);
        lq.entries = entries;
        lq.size = opt_size;
        lq.head = lq.count = 0;
        memset(expected, 0, sizeof(uint64_t) * (size_t)opt_producers);

        consumer_state st;
        memset(&st, 0, sizeof st);
        st.next_expected = expected;
        producer_arg args[64];
        pthread_t threads[64];
        pthread_barrier_init(&start_line, NULL, (unsigned)opt_producers + 1);
        for (long p = 0; p < opt_producers; p++) {
            args[p].id = p;
            args[p].yields = 0;
            if (pthread_create(&threads[p], NULL, producer, &args[p])) cb_die(PROG, "pthread_create failed");
        }
        pin(0);
        const uint64_t total = (uint64_t)opt_producers * (uint64_t)opt_messages;
        pthread_barrier_wait(&start_line);
        uint64_t t0 = cb_now_ns();
        if (opt_locked) locked_consume(&st, total);
        else ring_consume(&st, total);
        uint64_t t1 = cb_now_ns();
        uint64_t pyields = 0;
        for (long p = 0; p < opt_producers; p++) {
            pthread_join(threads[p], NULL);
            pyields += args[p].yields;
        }
        pthread_barrier_destroy(&start_line);
        pthread_mutex_destroy(&lq.lock);
        pthread_cond_destroy(&lq.not_empty);
        pthread_cond_destroy(&lq.not_full);
        for (long p = 0; p < opt_producers; p++)
            if (expected[p] != (uint64_t)opt_messages) st.errors++;
        if (st.errors) {
            fprintf(stderr, "%s: %s queue lost, duplicated or reordered %llu message(s)\n", PROG, queue,
                    (unsigned long long)st.errors);
            return 1;
        }
        double secs = (double)(t1 - t0) / 1e9;
        printf("%s,%ld,1,%llu,%ld,%.6f,%.1f,%.0f,%.0f,%.0f,%llu,%llu,%.2f,%llu,%llu,%d\n", queue, opt_producers,
               (unsigned long long)total, rep, secs, (double)total / secs, cb_hist_quantile_ns(&st.hist, 0.50),
               cb_hist_quantile_ns(&st.hist, 0.95), cb_hist_quantile_ns(&st.hist, 0.99),
               (unsigned long long)st.hist.max_ns, (unsigned long long)st.hist.total,
               (double)st.received / (double)(st.batches ? st.batches : 1), (unsigned long long)pyields,
               (unsigned long long)st.yields, ncpus);
        fflush(stdout);
        fprintf(stderr, "[%s] %s %ldP/1C rep %ld: %.2f M msgs/s, p50 %.0f ns, p99 %.0f ns\n", PROG, queue,
                opt_producers, rep, (double)total / secs / 1e6, cb_hist_quantile_ns(&st.hist, 0.50),
                cb_hist_quantile_ns(&st.hist, 0.99));
    }
    free(entries);
    free((void *)available);
    free(expected);
    return 0;
}
