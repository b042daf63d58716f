/* The machine card: the hand-off costs a model may use, measured on the two CPUs a run uses.
 *
 * Why one program: the capacity models combine a line transfer, a wake-up and an increment cost.  Taken from
 * runs made at different times they need not describe one placement of the threads (a VM's vCPUs move), so a
 * recording measures them all, together, at its start and at its end.
 *
 *   machine_card --cpu-a=0 --cpu-b=1 [--repetitions=31] [--scale=1]
 *
 * Each quantity is measured in --repetitions independent batches; a row gives the median, 10th and 90th
 * percentile and the minimum over the batches.  Quantities (all in ns unless said):
 *   cycle             a chain of dependent register adds (one cycle each): ns per add; its minimum over the
 *                     batches is the clock the CPU ran at (a busy machine only slows a batch down)
 *   one_way_transfer  one cache line bounced between a and b by plain stores: round trip / 2
 *   futex_wake        a thread asleep in FUTEX_WAIT on b, woken by FUTEX_WAKE from a: wake call to running
 *   context_switch    two threads on a alone, passing a futex token: per hand-off
 *   atomic_contended  threads on a and b each fetch-add one shared counter: wall time / all increments
 *   ops_per_transfer  in that run: increments / times the line came from the other CPU (counted by each thread
 *                     from the old values the fetch-add returned: the other thread's tag in them had moved)
 *   atomic_private    one thread fetch-adds a counter on its own line: per increment
 *   plain_private     one thread increments a volatile counter in memory (load, add, store): per increment
 * The private loops keep every increment: the counter is volatile or atomic and the loop count passes through
 * an empty asm, so the compiler can neither fold nor vectorise them (check with objdump -d: a `lock xadd` or
 * `lock add`, and an `add` to memory, inside the loops).
 *
 * CSV on stdout: quantity,cpu_a,cpu_b,repetitions,median,p10,p90,min,unit
 */
#include "common.h"

#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>

static const char *PROG = "machine_card";
static long cpu_a = -1, cpu_b = -1, reps = 31, scale = 1;

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void emit(const char *quantity, double *v, long n, const char *unit) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    printf("%s,%ld,%ld,%ld,%.4f,%.4f,%.4f,%.4f,%s\n", quantity, cpu_a, cpu_b, n, v[n / 2], v[n / 10],
           v[(n * 9) / 10], v[0], unit);
    fflush(stdout);
    fprintf(stderr, "%s: %s median %.3f %s\n", PROG, quantity, v[n / 2], unit);
}

static void pin_or_die(long cpu) {
    int err = cb_pin_self((int)cpu);
    if (err) {
        fprintf(stderr, "%s: cannot pin to CPU %ld: %s\n", PROG, cpu, strerror(err));
        exit(2);
    }
}

/* -- the clock: a dependent chain of register adds (1 cycle each) --------------------------------------------------- */
static double cycle_ns_once(void) {
    const long n = 2000000L * scale;
    uint64_t x = 0;
    uint64_t t0 = cb_now_ns();
    for (long i = 0; i < n; i += 8) {
        /* each add depends on the one before; the empty asm keeps the compiler from summing them */
#define STEP __asm__ __volatile__("" : "+r"(x)); x += 1;
        STEP STEP STEP STEP STEP STEP STEP STEP
#undef STEP
    }
    uint64_t t1 = cb_now_ns();
    if (x != (uint64_t)n) cb_die(PROG, "clock chain miscounted");
    return (double)(t1 - t0) / (double)n;
}

/* -- one-way line transfer ------------------------------------------------------------------------------ */
static struct { _Atomic uint64_t word CB_ALIGNED; char pad[CACHE_LINE - 8]; } line CB_ALIGNED;
static const long XFER_BATCH = 2000;

static void *xfer_pong(void *unused) {
    (void)unused;
    pin_or_die(cpu_b);
    long total = (reps + 1) * XFER_BATCH * scale;
    for (long i = 0; i < total; i++) {
        uint64_t want = 2 * (uint64_t)i + 1;
        while (atomic_load_explicit(&line.word, memory_order_acquire) != want) cb_cpu_relax();
        atomic_store_explicit(&line.word, want + 1, memory_order_release);
    }
    return NULL;
}

static void one_way_transfer(double *out) {
    atomic_store(&line.word, 0);
    pthread_t t;
    if (pthread_create(&t, NULL, xfer_pong, NULL)) cb_die(PROG, "pthread_create failed");
    pin_or_die(cpu_a);
    uint64_t i = 0;
    long batch = XFER_BATCH * scale;
    for (long k = -1; k < reps; k++) {
        uint64_t t0 = cb_now_ns();
        for (long r = 0; r < batch; r++, i++) {
            atomic_store_explicit(&line.word, 2 * i + 1, memory_order_release);
            while (atomic_load_explicit(&line.word, memory_order_acquire) != 2 * i + 2) cb_cpu_relax();
        }
        uint64_t t1 = cb_now_ns();
        if (k >= 0) out[k] = (double)(t1 - t0) / (2.0 * (double)batch);
    }
    pthread_join(t, NULL);
}

/* -- futex wake of a sleeping thread, and the same-CPU context switch ------------------------------------ */
static _Atomic uint32_t ftx CB_ALIGNED;
static _Atomic uint64_t woke_at;
static long fx_cpu;
static const long WAKES = 60;

static long sys_futex(_Atomic uint32_t *addr, int op, uint32_t val) {
    return syscall(SYS_futex, (uint32_t *)addr, op, val, NULL, NULL, 0);
}

static void *sleeper(void *unused) {
    (void)unused;
    pin_or_die(fx_cpu);
    long total = (reps + 1) * WAKES;
    for (long i = 0; i < total; i++) {
        uint32_t armed = (uint32_t)(2 * i + 1);
        atomic_store_explicit(&ftx, armed, memory_order_release);   /* "I am about to sleep" */
        while (atomic_load_explicit(&ftx, memory_order_acquire) == armed) sys_futex(&ftx, FUTEX_WAIT_PRIVATE, armed);
        atomic_store_explicit(&woke_at, cb_now_ns(), memory_order_release);
    }
    return NULL;
}

static void futex_wake(double *out) {
    fx_cpu = cpu_b;
    atomic_store(&ftx, 0);
    pthread_t t;
    if (pthread_create(&t, NULL, sleeper, NULL)) cb_die(PROG, "pthread_create failed");
    pin_or_die(cpu_a);
    double *one = malloc(sizeof(double) * (size_t)WAKES);
    if (!one) cb_die(PROG, "out of memory");
    for (long k = -1; k < reps; k++) {
        for (long w = 0; w < WAKES; w++) {
            long i = (k + 1) * WAKES + w;
            uint32_t armed = (uint32_t)(2 * i + 1);
            while (atomic_load_explicit(&ftx, memory_order_acquire) != armed) cb_cpu_relax();
            /* give the sleeper time to be asleep in the kernel (and its CPU idle): 300 us */
            uint64_t until = cb_now_ns() + 300000;
            while (cb_now_ns() < until) cb_cpu_relax();
            atomic_store_explicit(&woke_at, 0, memory_order_relaxed);
            uint64_t t0 = cb_now_ns();
            atomic_store_explicit(&ftx, armed + 1, memory_order_release);
            sys_futex(&ftx, FUTEX_WAKE_PRIVATE, 1);
            uint64_t t1;
            while ((t1 = atomic_load_explicit(&woke_at, memory_order_acquire)) == 0) cb_cpu_relax();
            one[w] = (double)(t1 - t0);
        }
        if (k >= 0) {
            qsort(one, (size_t)WAKES, sizeof(double), cmp_double);
            out[k] = one[WAKES / 2];                  /* a batch's median wake */
        }
    }
    pthread_join(t, NULL);
    free(one);
}

static _Atomic uint32_t token CB_ALIGNED;
static const long SWITCHES = 2000;

static void *switch_b(void *unused) {
    (void)unused;
    pin_or_die(cpu_a);
    long total = (reps + 1) * SWITCHES * scale;
    for (long i = 0; i < total; i++) {
        while (atomic_load_explicit(&token, memory_order_acquire) != 1) sys_futex(&token, FUTEX_WAIT_PRIVATE, 0);
        atomic_store_explicit(&token, 0, memory_order_release);
        sys_futex(&token, FUTEX_WAKE_PRIVATE, 1);
    }
    return NULL;
}

static void context_switch(double *out) {
    atomic_store(&token, 0);
    pin_or_die(cpu_a);
    pthread_t t;
    if (pthread_create(&t, NULL, switch_b, NULL)) cb_die(PROG, "pthread_create failed");
    long batch = SWITCHES * scale;
    for (long k = -1; k < reps; k++) {
        uint64_t t0 = cb_now_ns();
        for (long i = 0; i < batch; i++) {
            atomic_store_explicit(&token, 1, memory_order_release);
            sys_futex(&token, FUTEX_WAKE_PRIVATE, 1);
            while (atomic_load_explicit(&token, memory_order_acquire) != 0) sys_futex(&token, FUTEX_WAIT_PRIVATE, 1);
        }
        uint64_t t1 = cb_now_ns();
        if (k >= 0) out[k] = (double)(t1 - t0) / (2.0 * (double)batch);
    }
    pthread_join(t, NULL);
}

/* -- increments ----------------------------------------------------------------------------------------- */
static struct { _Atomic uint64_t v CB_ALIGNED; char pad[CACHE_LINE - 8]; } counter CB_ALIGNED;
static pthread_barrier_t go;
static const long INCS = 500000;
static _Atomic long returns[2];

/* Thread 0 adds 1, thread 1 adds 2^32: the old value's other half tells whether the other thread wrote since. */
static void *adder(void *argp) {
    long id = (long)argp;
    pin_or_die(id ? cpu_b : cpu_a);
    uint64_t mine = id ? (1ull << 32) : 1ull, other_mask = id ? 0xffffffffull : 0xffffffff00000000ull;
    long n = INCS * scale, came_back = 0;
    uint64_t last_other = 0;
    pthread_barrier_wait(&go);
    for (long i = 0; i < n; i++) {
        uint64_t old = atomic_fetch_add_explicit(&counter.v, mine, memory_order_relaxed);
        uint64_t o = old & other_mask;
        came_back += o != last_other;
        last_other = o;
    }
    atomic_store(&returns[id], came_back);
    return NULL;
}

static void atomic_contended(double *ns, double *per_transfer) {
    for (long k = -1; k < reps; k++) {
        atomic_store(&counter.v, 0);
        pthread_barrier_init(&go, NULL, 3);
        pthread_t t[2];
        for (long i = 0; i < 2; i++)
            if (pthread_create(&t[i], NULL, adder, (void *)i)) cb_die(PROG, "pthread_create failed");
        pthread_barrier_wait(&go);
        uint64_t t0 = cb_now_ns();
        for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
        uint64_t t1 = cb_now_ns();
        pthread_barrier_destroy(&go);
        uint64_t v = atomic_load(&counter.v), n = (uint64_t)(INCS * scale);
        if ((v & 0xffffffffull) != n || (v >> 32) != n) cb_die(PROG, "contended counter miscounted");
        long moved = atomic_load(&returns[0]) + atomic_load(&returns[1]);
        if (k >= 0) {
            ns[k] = (double)(t1 - t0) / (2.0 * (double)n);
            per_transfer[k] = moved > 0 ? 2.0 * (double)n / (double)moved : 2.0 * (double)n;
        }
    }
}

static struct { _Atomic uint64_t v CB_ALIGNED; char pad[CACHE_LINE - 8]; } own_atomic CB_ALIGNED;
static struct { volatile uint64_t v CB_ALIGNED; char pad[CACHE_LINE - 8]; } own_plain CB_ALIGNED;

static void private_increments(double *atomic_ns, double *plain_ns) {
    pin_or_die(cpu_a);
    long n = 10 * INCS * scale;
    for (long k = -1; k < reps; k++) {
        atomic_store(&own_atomic.v, 0);
        uint64_t t0 = cb_now_ns();
        for (long i = 0; i < n; i++) {
            __asm__ __volatile__("" : "+r"(i));
            atomic_fetch_add_explicit(&own_atomic.v, 1, memory_order_relaxed);
        }
        uint64_t t1 = cb_now_ns();
        own_plain.v = 0;
        for (long i = 0; i < n; i++) {
            __asm__ __volatile__("" : "+r"(i));
            own_plain.v++;
        }
        uint64_t t2 = cb_now_ns();
        if (atomic_load(&own_atomic.v) != (uint64_t)n || own_plain.v != (uint64_t)n)
            cb_die(PROG, "private counter miscounted");
        if (k >= 0) {
            atomic_ns[k] = (double)(t1 - t0) / (double)n;
            plain_ns[k] = (double)(t2 - t1) / (double)n;
        }
    }
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strncmp(arg, "--cpu-a=", 8)) cpu_a = cb_parse_long(PROG, "--cpu-a", arg + 8, 0, CPU_SETSIZE - 1);
        else if (!strncmp(arg, "--cpu-b=", 8)) cpu_b = cb_parse_long(PROG, "--cpu-b", arg + 8, 0, CPU_SETSIZE - 1);
        else if (!strncmp(arg, "--repetitions=", 14)) reps = cb_parse_long(PROG, "--repetitions", arg + 14, 10, 10000);
        else if (!strncmp(arg, "--scale=", 8)) scale = cb_parse_long(PROG, "--scale", arg + 8, 1, 1000);
        else {
            fprintf(stderr, "%s: unknown option %s; expected --cpu-a=N --cpu-b=N --repetitions=N --scale=N\n", PROG,
                    arg);
            return 2;
        }
    }
    if (cpu_a < 0 || cpu_b < 0 || cpu_a == cpu_b)
        cb_die(PROG, "give two different CPUs: --cpu-a=N --cpu-b=M (the pair the run uses)");
    double *v = malloc(sizeof(double) * (size_t)reps), *w = malloc(sizeof(double) * (size_t)reps);
    if (!v || !w) cb_die(PROG, "out of memory");
    printf("quantity,cpu_a,cpu_b,repetitions,median,p10,p90,min,unit\n");
    pin_or_die(cpu_a);
    for (long k = 0; k < reps; k++) v[k] = cycle_ns_once();
    emit("cycle", v, reps, "ns");
    one_way_transfer(v);
    emit("one_way_transfer", v, reps, "ns");
    futex_wake(v);
    emit("futex_wake", v, reps, "ns");
    context_switch(v);
    emit("context_switch", v, reps, "ns");
    atomic_contended(v, w);
    emit("atomic_contended", v, reps, "ns");
    emit("ops_per_transfer", w, reps, "increments");
    private_increments(v, w);
    emit("atomic_private", v, reps, "ns");
    emit("plain_private", w, reps, "ns");
    free(v);
    free(w);
    return 0;
}
