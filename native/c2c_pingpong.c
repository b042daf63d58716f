/* Core-to-core latency: one cache line bounced between two pinned threads.
 *
 * For every pair of logical CPUs (a < b) in the allowed set, a "ping" thread
 * on a and a "pong" thread on b take turns writing one shared, cache-line
 * aligned word: ping waits for the word to be even and writes odd, pong waits
 * for odd and writes even.  Every turn moves the line from one core's cache
 * to the other's, so a round trip is two line transfers.  Round trips are
 * timed in batches (one clock read per batch); the one-way latency of a
 * batch is its time / (2 x round trips in it).  The row reports the median,
 * 10th and 90th percentiles over the batches, so a preempted batch does not
 * move the figure.
 *
 *   c2c_pingpong [--cpus=0,1,2] [--batches=300] [--batch=200] [--method=store|cas]
 *
 * CSV on stdout: cpu_a,cpu_b,method,batches,round_trips_per_batch,
 *                median_one_way_ns,p10_one_way_ns,p90_one_way_ns,min_one_way_ns
 */
#include "common.h"

#include <stdatomic.h>

static const char *PROG = "c2c_pingpong";

typedef struct {
    _Atomic uint64_t word CB_ALIGNED;
    char pad[CACHE_LINE - sizeof(uint64_t)];
} line_t;

static line_t shared CB_ALIGNED;
static int use_cas = 0;
static long n_batches = 300, batch = 200;

typedef struct {
    int cpu;
    int err;
} pong_arg;

static void *pong(void *p) {
    pong_arg *a = p;
    if ((a->err = cb_pin_self(a->cpu)) != 0) return NULL;
    long total = (n_batches + 1) * batch; /* +1: warm-up batch */
    for (long i = 0; i < total; i++) {
        uint64_t want = 2 * (uint64_t)i + 1;
        if (use_cas) {
            uint64_t expect = want;
            while (!atomic_compare_exchange_weak_explicit(&shared.word, &expect, want + 1, memory_order_acq_rel,
                                                          memory_order_relaxed)) {
                expect = want;
                cb_cpu_relax();
            }
        } else {
            while (atomic_load_explicit(&shared.word, memory_order_acquire) != want) cb_cpu_relax();
            atomic_store_explicit(&shared.word, want + 1, memory_order_release);
        }
    }
    return NULL;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static int parse_cpus(const char *text, int *out, int max) {
    int n = 0;
    const char *p = text;
    while (*p && n < max) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v >= CPU_SETSIZE) {
            fprintf(stderr, "%s: --cpus=%s: expected a comma-separated list of CPU numbers\n", PROG, text);
            exit(2);
        }
        out[n++] = (int)v;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') {
            fprintf(stderr, "%s: --cpus=%s: expected a comma-separated list of CPU numbers\n", PROG, text);
            exit(2);
        }
    }
    return n;
}

static void measure(int a, int b) {
    atomic_store(&shared.word, 0);
    pong_arg arg = {b, 0};
    pthread_t t;
    if (pthread_create(&t, NULL, pong, &arg) != 0) cb_die(PROG, "pthread_create failed");
    int err = cb_pin_self(a);
    if (err) {
        fprintf(stderr, "%s: cannot pin to CPU %d: %s\n", PROG, a, strerror(err));
        exit(2);
    }
    double *one_way = malloc(sizeof(double) * (size_t)n_batches);
    if (!one_way) cb_die(PROG, "out of memory");
    uint64_t i = 0;
    for (long k = -1; k < n_batches; k++) {
        uint64_t t0 = cb_now_ns();
        for (long r = 0; r < batch; r++, i++) {
            uint64_t mine = 2 * i, next = 2 * i + 2;
            if (use_cas) {
                uint64_t expect = mine;
                while (!atomic_compare_exchange_weak_explicit(&shared.word, &expect, mine + 1, memory_order_acq_rel,
                                                              memory_order_relaxed)) {
                    expect = mine;
                    cb_cpu_relax();
                }
            } else {
                atomic_store_explicit(&shared.word, mine + 1, memory_order_release);
            }
            while (atomic_load_explicit(&shared.word, memory_order_acquire) != next) cb_cpu_relax();
        }
        uint64_t t1 = cb_now_ns();
        if (k >= 0) one_way[k] = (double)(t1 - t0) / (2.0 * (double)batch);
    }
    pthread_join(t, NULL);
    if (arg.err) {
        fprintf(stderr, "%s: cannot pin to CPU %d: %s\n", PROG, b, strerror(arg.err));
        exit(2);
    }
    qsort(one_way, (size_t)n_batches, sizeof(double), cmp_double);
    double med = one_way[n_batches / 2], p10 = one_way[n_batches / 10], p90 = one_way[(n_batches * 9) / 10];
    printf("%d,%d,%s,%ld,%ld,%.2f,%.2f,%.2f,%.2f\n", a, b, use_cas ? "cas" : "store", n_batches, batch, med, p10,
           p90, one_way[0]);
    fflush(stdout);
    fprintf(stderr, "%s: CPU %d <-> CPU %d: median one-way %.1f ns\n", PROG, a, b, med);
    free(one_way);
}

int main(int argc, char **argv) {
    int cpus[CPU_SETSIZE];
    int n = cb_allowed_cpus(cpus, CPU_SETSIZE);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strncmp(arg, "--cpus=", 7)) n = parse_cpus(arg + 7, cpus, CPU_SETSIZE);
        else if (!strncmp(arg, "--batches=", 10)) n_batches = cb_parse_long(PROG, "--batches", arg + 10, 10, 10000000);
        else if (!strncmp(arg, "--batch=", 8)) batch = cb_parse_long(PROG, "--batch", arg + 8, 1, 10000000);
        else if (!strcmp(arg, "--method=cas")) use_cas = 1;
        else if (!strcmp(arg, "--method=store")) use_cas = 0;
        else {
            fprintf(stderr, "%s: unknown option %s; expected --cpus=LIST --batches=N --batch=N --method=store|cas\n",
                    PROG, arg);
            return 2;
        }
    }
    if (n < 2) cb_die(PROG, "needs at least two logical CPUs (--cpus or the allowed set)");
    printf("cpu_a,cpu_b,method,batches,round_trips_per_batch,median_one_way_ns,p10_one_way_ns,p90_one_way_ns,"
           "min_one_way_ns\n");
    int pairs = n * (n - 1) / 2, done = 0;
    for (int x = 0; x < n; x++)
        for (int y = x + 1; y < n; y++) {
            measure(cpus[x], cpus[y]);
            done++;
            if (pairs > 4) fprintf(stderr, "%s: %d/%d pairs\n", PROG, done, pairs);
        }
    return 0;
}
