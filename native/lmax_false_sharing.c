/* False sharing: two threads, each incrementing its *own* counter; and the cost of
 * an atomic add, alone and contended.
 *
 *   lmax_false_sharing --layout single|adjacent|padded|shared_atomic|single_atomic
 *                      --increments N [--repetitions 1] [--pin 1]
 *
 * single:        one thread, one counter, a plain increment: the floor.
 * adjacent:      two threads, two counters in the same 64-byte cache line.
 *                No data is shared, yet every store needs the line in the
 *                writer's cache in exclusive state, so the line moves between
 *                the two cores on (nearly) every increment.
 * padded:        the same two counters, each on a cache line of its own.
 * shared_atomic: two threads on one counter with an atomic fetch-add (true
 *                sharing, the cost of a contended sequence cursor).
 * single_atomic: one thread, the same atomic fetch-add on the same counter: the
 *                atomic instruction's own cost with no other core asking for
 *                the line, which is what shared_atomic is to be set against.
 *
 * ns_per_increment is the wall time of the run divided by the increments one
 * thread made.  CSV on stdout (one row per repetition), progress on stderr.
 */
#include "common.h"

#include <stdatomic.h>

static const char *PROG = "lmax_false_sharing";

struct adjacent_pair {
    volatile uint64_t a;
    volatile uint64_t b; /* 8 bytes after a: the same cache line */
};

struct padded_counter {
    CB_ALIGNED volatile uint64_t v;
    char pad[CACHE_LINE - sizeof(uint64_t)];
};

static struct adjacent_pair adjacent CB_ALIGNED;
static struct padded_counter padded[2];
static CB_ALIGNED _Atomic uint64_t shared;
static long opt_increments = 100000000, opt_reps = 1, opt_pin = 1;
static int layout; /* 0 single, 1 adjacent, 2 padded, 3 shared_atomic, 4 single_atomic */
static pthread_barrier_t start_line;
static int cpus[CPU_SETSIZE];
static int ncpus;

static void *worker(void *argp) {
    long id = (long)argp;
    if (opt_pin && ncpus > 0) {
        int rc = cb_pin_self(cpus[id % ncpus]);
        if (rc) fprintf(stderr, "%s: pinning failed (%s); running unpinned\n", PROG, strerror(rc));
    }
    pthread_barrier_wait(&start_line);
    const long n = opt_increments;
    switch (layout) {
    case 0:
    case 2: {
        volatile uint64_t *c = &padded[id].v;
        for (long i = 0; i < n; i++) (*c)++;
        break;
    }
    case 1: {
        volatile uint64_t *c = id ? &adjacent.b : &adjacent.a;
        for (long i = 0; i < n; i++) (*c)++;
        break;
    }
    default: /* 3 shared_atomic, 4 single_atomic: the same loop, two threads or one */
        for (long i = 0; i < n; i++) atomic_fetch_add_explicit(&shared, 1, memory_order_relaxed);
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *name = NULL;
    static const char *names[] = {"single", "adjacent", "padded", "shared_atomic", "single_atomic"};
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) {
            fprintf(stderr, "%s: option %s needs a value\n", PROG, argv[i]);
            exit(2);
        }
        const char *opt = argv[i], *val = argv[++i];
        if (!strcmp(opt, "--layout")) name = val;
        else if (!strcmp(opt, "--increments")) opt_increments = cb_parse_long(PROG, opt, val, 1, 1L << 40);
        else if (!strcmp(opt, "--repetitions")) opt_reps = cb_parse_long(PROG, opt, val, 1, 1000);
        else if (!strcmp(opt, "--pin")) opt_pin = cb_parse_long(PROG, opt, val, 0, 1);
        else {
            fprintf(stderr, "%s: unknown option %s; expected --layout, --increments, --repetitions, --pin\n", PROG, opt);
            exit(2);
        }
    }
    layout = -1;
    for (int i = 0; name && i < 5; i++)
        if (!strcmp(name, names[i])) layout = i;
    if (layout < 0) {
        fprintf(stderr, "%s: --layout=%s: expected single, adjacent, padded, shared_atomic or single_atomic\n", PROG,
                name ? name : "(missing)");
        exit(2);
    }
    ncpus = cb_allowed_cpus(cpus, CPU_SETSIZE);
    int threads = layout == 0 || layout == 4 ? 1 : 2;
    printf("layout,threads,increments_per_thread,repetition,elapsed_s,ns_per_increment,cpus\n");
    for (long rep = 0; rep < opt_reps; rep++) {
        adjacent.a = adjacent.b = 0;
        padded[0].v = padded[1].v = 0;
        atomic_store(&shared, 0);
        pthread_t t[2];
        pthread_barrier_init(&start_line, NULL, (unsigned)threads + 1);
        for (long i = 0; i < threads; i++)
            if (pthread_create(&t[i], NULL, worker, (void *)i)) cb_die(PROG, "pthread_create failed");
        pthread_barrier_wait(&start_line);
        uint64_t t0 = cb_now_ns();
        for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
        uint64_t t1 = cb_now_ns();
        pthread_barrier_destroy(&start_line);
        uint64_t total = layout == 1 ? adjacent.a + adjacent.b
                       : layout >= 3 ? atomic_load(&shared)
                                     : padded[0].v + padded[1].v;
        if (total != (uint64_t)opt_increments * (uint64_t)threads) {
            fprintf(stderr, "%s: counted %llu increments, expected %llu\n", PROG, (unsigned long long)total,
                    (unsigned long long)opt_increments * (unsigned long long)threads);
            return 1;
        }
        double secs = (double)(t1 - t0) / 1e9;
        double ns = (double)(t1 - t0) / (double)opt_increments;
        printf("%s,%d,%ld,%ld,%.6f,%.3f,%d\n", names[layout], threads, opt_increments, rep, secs, ns, ncpus);
        fflush(stdout);
        fprintf(stderr, "[%s] %s rep %ld: %.2f ns per increment\n", PROG, names[layout], rep, ns);
    }
    return 0;
}
