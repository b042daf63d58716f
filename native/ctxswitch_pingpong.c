/* What a blocking hand-off costs: a token passed between two threads that sleep.
 *
 * Thread A hands the token to B and sleeps until it comes back; B does the
 * same.  With --method=futex the token is a word and the threads sleep in
 * FUTEX_WAIT and are woken with FUTEX_WAKE; with --method=pipe they block in
 * read() on a pipe.  Pinned to the SAME CPU, every hand-off is a context
 * switch on that CPU.  Pinned to DIFFERENT CPUs, a hand-off is a wake-up of
 * a thread sleeping on another CPU (an inter-processor interrupt and an exit
 * from idle), the path a lock waiter that went to sleep pays.  Hand-offs are
 * timed in batches; the row reports the median ns per hand-off and the
 * voluntary context switches the kernel counted per hand-off (getrusage).
 *
 *   ctxswitch_pingpong --cpu-a=0 --cpu-b=0 [--method=futex|pipe] [--batches=100] [--batch=1000]
 *
 * CSV on stdout: method,placement,cpu_a,cpu_b,batches,handoffs_per_batch,
 *                median_ns_per_handoff,p10_ns_per_handoff,p90_ns_per_handoff,switches_per_handoff
 */
#include "common.h"

#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/syscall.h>

static const char *PROG = "ctxswitch_pingpong";

static _Atomic uint32_t token CB_ALIGNED; /* 0: A's turn, 1: B's turn */
static int use_pipe = 0;
static int pipe_ab[2], pipe_ba[2];
static long n_batches = 100, batch = 1000;
static long cpu_a = -1, cpu_b = -1;

static void futex_wait(_Atomic uint32_t *addr, uint32_t val) {
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}
static void futex_wake(_Atomic uint32_t *addr) {
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Give the token to the other side (`to`), then sleep until it is ours (`mine`) again. */
static void handoff(uint32_t to, uint32_t mine, int wfd, int rfd) {
    if (use_pipe) {
        char c = 't';
        if (write(wfd, &c, 1) != 1) cb_die(PROG, "pipe write failed");
        if (read(rfd, &c, 1) != 1) cb_die(PROG, "pipe read failed");
        return;
    }
    atomic_store_explicit(&token, to, memory_order_release);
    futex_wake(&token);
    while (atomic_load_explicit(&token, memory_order_acquire) != mine) futex_wait(&token, to);
}

static void *side_b(void *unused) {
    (void)unused;
    if (cb_pin_self((int)cpu_b) != 0) cb_die(PROG, "cannot pin thread B (--cpu-b)");
    long total = (n_batches + 1) * batch;
    for (long i = 0; i < total; i++) {
        if (use_pipe) {
            char c;
            if (read(pipe_ab[0], &c, 1) != 1) cb_die(PROG, "pipe read failed");
            if (write(pipe_ba[1], &c, 1) != 1) cb_die(PROG, "pipe write failed");
        } else {
            while (atomic_load_explicit(&token, memory_order_acquire) != 1) futex_wait(&token, 0);
            atomic_store_explicit(&token, 0, memory_order_release);
            futex_wake(&token);
        }
    }
    return NULL;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strncmp(arg, "--cpu-a=", 8)) cpu_a = cb_parse_long(PROG, "--cpu-a", arg + 8, 0, CPU_SETSIZE - 1);
        else if (!strncmp(arg, "--cpu-b=", 8)) cpu_b = cb_parse_long(PROG, "--cpu-b", arg + 8, 0, CPU_SETSIZE - 1);
        else if (!strncmp(arg, "--batches=", 10)) n_batches = cb_parse_long(PROG, "--batches", arg + 10, 10, 1000000);
        else if (!strncmp(arg, "--batch=", 8)) batch = cb_parse_long(PROG, "--batch", arg + 8, 1, 10000000);
        else if (!strcmp(arg, "--method=futex")) use_pipe = 0;
        else if (!strcmp(arg, "--method=pipe")) use_pipe = 1;
        else {
            fprintf(stderr, "%s: unknown option %s; expected --cpu-a=N --cpu-b=N --method=futex|pipe --batches=N "
                            "--batch=N\n", PROG, arg);
            return 2;
        }
    }
    if (cpu_a < 0 || cpu_b < 0) cb_die(PROG, "give both --cpu-a=N and --cpu-b=N (equal for a same-CPU run)");
    if (use_pipe && (pipe(pipe_ab) != 0 || pipe(pipe_ba) != 0)) cb_die(PROG, "pipe() failed");
    if (cb_pin_self((int)cpu_a) != 0) cb_die(PROG, "cannot pin thread A (--cpu-a)");
    atomic_store(&token, 0);
    pthread_t t;
    if (pthread_create(&t, NULL, side_b, NULL) != 0) cb_die(PROG, "pthread_create failed");
    double *per = malloc(sizeof(double) * (size_t)n_batches);
    if (!per) cb_die(PROG, "out of memory");
    struct rusage r0, r1;
    for (long k = -1; k < n_batches; k++) {
        if (k == 0) getrusage(RUSAGE_THREAD, &r0);
        uint64_t t0 = cb_now_ns();
        for (long i = 0; i < batch; i++) handoff(1, 0, pipe_ab[1], pipe_ba[0]);
        uint64_t t1 = cb_now_ns();
        if (k >= 0) per[k] = (double)(t1 - t0) / (2.0 * (double)batch); /* two hand-offs per round trip */
    }
    getrusage(RUSAGE_THREAD, &r1);
    pthread_join(t, NULL);
    /* thread A sleeps once per round trip; B does the same, so switches per hand-off ~ A's count / round trips */
    double switches = (double)(r1.ru_nvcsw - r0.ru_nvcsw + r1.ru_nivcsw - r0.ru_nivcsw) /
                      ((double)n_batches * (double)batch);
    qsort(per, (size_t)n_batches, sizeof(double), cmp_double);
    printf("method,placement,cpu_a,cpu_b,batches,handoffs_per_batch,median_ns_per_handoff,p10_ns_per_handoff,"
           "p90_ns_per_handoff,switches_per_handoff\n");
    printf("%s,%s,%ld,%ld,%ld,%ld,%.1f,%.1f,%.1f,%.3f\n", use_pipe ? "pipe" : "futex",
           cpu_a == cpu_b ? "same_cpu" : "different_cpus", cpu_a, cpu_b, n_batches, 2 * batch,
           per[n_batches / 2], per[n_batches / 10], per[(n_batches * 9) / 10], switches);
    fprintf(stderr, "%s: %s, CPU %ld -> CPU %ld: median %.0f ns per hand-off\n", PROG, use_pipe ? "pipe" : "futex",
            cpu_a, cpu_b, per[n_batches / 2]);
    free(per);
    return 0;
}
