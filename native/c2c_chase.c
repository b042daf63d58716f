/* Load-to-use latency by working-set size: a dependent pointer chase.
 *
 * A buffer of `size` bytes is cut into cache lines linked in one random
 * cycle; each load's address comes from the previous load, so the loads
 * cannot overlap and the time per load is the latency of wherever the line
 * lives: L1 for a few KiB, L2 and L3 beyond, main memory (plus the page walk
 * on a TLB miss) for hundreds of MiB.  Huge pages are requested (MADV_HUGEPAGE)
 * to keep TLB misses out of the largest size where the kernel allows it.
 *
 *   c2c_chase [--sizes=16384,524288,8388608,268435456] [--loads=4000000] [--cpu=N]
 *
 * CSV on stdout: size_bytes,loads,ns_per_load
 */
#include "common.h"

#include <sys/mman.h>

static const char *PROG = "c2c_chase";

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double chase(size_t size, long loads) {
    size_t lines = size / CACHE_LINE;
    if (lines < 2) cb_die(PROG, "--sizes: each size must hold at least two cache lines (128 bytes)");
    char *buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) cb_die(PROG, "mmap failed (size too large for this machine?)");
#ifdef MADV_HUGEPAGE
    madvise(buf, size, MADV_HUGEPAGE);
#endif
    size_t *order = malloc(sizeof(size_t) * lines);
    if (!order) cb_die(PROG, "out of memory");
    for (size_t i = 0; i < lines; i++) order[i] = i;
    for (size_t i = lines - 1; i > 0; i--) { /* Fisher-Yates: one random cycle through every line */
        size_t j = next_rand() % (i + 1);
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < lines; i++)
        *(void **)(buf + order[i] * CACHE_LINE) = buf + order[(i + 1) % lines] * CACHE_LINE;
    free(order);
    /* Warm: two laps bring a set into the caches it fits; never more loads than the measurement makes.  Past
     * the caches a lap warms nothing the linking above did not (it wrote every line, so every page is mapped),
     * and on the 256 MiB set two laps cost 1.6 s of a run whatever --loads says. */
    size_t warm = lines * 2 < (size_t)loads ? lines * 2 : (size_t)loads;
    void **p = (void **)buf;
    for (size_t i = 0; i < warm; i++) p = (void **)*p;
    uint64_t t0 = cb_now_ns();
    for (long i = 0; i < loads; i++) p = (void **)*p;
    uint64_t t1 = cb_now_ns();
    if (p == NULL) fprintf(stderr, "impossible\n"); /* keep the chain live */
    munmap(buf, size);
    return (double)(t1 - t0) / (double)loads;
}

int main(int argc, char **argv) {
    char sizes_text[1024] = "16384,524288,8388608,268435456";
    long loads = 4000000, cpu = -1;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strncmp(arg, "--sizes=", 8)) snprintf(sizes_text, sizeof sizes_text, "%s", arg + 8);
        else if (!strncmp(arg, "--loads=", 8)) loads = cb_parse_long(PROG, "--loads", arg + 8, 1000, 2000000000L);
        else if (!strncmp(arg, "--cpu=", 6)) cpu = cb_parse_long(PROG, "--cpu", arg + 6, 0, CPU_SETSIZE - 1);
        else {
            fprintf(stderr, "%s: unknown option %s; expected --sizes=LIST --loads=N --cpu=N\n", PROG, arg);
            return 2;
        }
    }
    if (cpu >= 0 && cb_pin_self((int)cpu) != 0) {
        fprintf(stderr, "%s: cannot pin to CPU %ld\n", PROG, cpu);
        return 2;
    }
    printf("size_bytes,loads,ns_per_load\n");
    char *save = NULL;
    for (char *tok = strtok_r(sizes_text, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        long size = cb_parse_long(PROG, "--sizes", tok, 128, 1L << 36);
        double ns = chase((size_t)size, loads);
        printf("%ld,%ld,%.3f\n", size, loads, ns);
        fflush(stdout);
        fprintf(stderr, "%s: %ld bytes: %.2f ns per load\n", PROG, size, ns);
    }
    return 0;
}
