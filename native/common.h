/* Shared plumbing for the book's native microbenchmarks.
 *
 * Every program prints its results as CSV on stdout (one header line, then
 * rows) and its progress on stderr, so harness/native.py can parse stdout and
 * pass stderr through to the reader.  Nothing here allocates in a hot loop.
 */
#ifndef CONTENTION_BOOK_COMMON_H
#define CONTENTION_BOOK_COMMON_H

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CACHE_LINE 64
#define CB_ALIGNED __attribute__((aligned(CACHE_LINE)))

static inline uint64_t cb_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The spin-wait hint: PAUSE on x86, YIELD on Arm; nothing elsewhere. */
static inline void cb_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Pin the calling thread to one logical CPU; returns 0 or an errno. */
static inline int cb_pin_self(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* The logical CPUs this process may run on (respects taskset / cgroups). */
static inline int cb_allowed_cpus(int *out, int max) {
    cpu_set_t set;
    int n = 0;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    for (int c = 0; c < CPU_SETSIZE && n < max; c++)
        if (CPU_ISSET(c, &set)) out[n++] = c;
    return n;
}

static inline void cb_die(const char *prog, const char *msg) {
    fprintf(stderr, "%s: %s\n", prog, msg);
    exit(2);
}

/* Parse a positive integer option value or exit with a message naming it. */
static inline long cb_parse_long(const char *prog, const char *name, const char *text, long min, long max) {
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || !end || *end || v < min || v > max) {
        fprintf(stderr, "%s: %s=%s: expected an integer from %ld to %ld\n", prog, name, text, min, max);
        exit(2);
    }
    return v;
}

/* Log-bucketed latency histogram: bucket i holds [2^(i/8), 2^((i+1)/8)) ns,
 * at most 12.5% wide, from 1 ns to beyond an hour, 512 buckets, no allocation. */
#define CB_HIST_BUCKETS 512
typedef struct {
    uint64_t counts[CB_HIST_BUCKETS];
    uint64_t total;
    uint64_t max_ns;
} cb_hist;

static inline int cb_hist_index(uint64_t ns) {
    if (ns < 1) ns = 1;
    int lz = 63 - __builtin_clzll(ns);             /* floor(log2 ns) */
    uint64_t frac = lz >= 3 ? (ns >> (lz - 3)) & 7 : (ns << (3 - lz)) & 7; /* next 3 bits */
    int idx = lz * 8 + (int)frac;
    return idx < CB_HIST_BUCKETS ? idx : CB_HIST_BUCKETS - 1;
}

static inline void cb_hist_record(cb_hist *h, uint64_t ns) {
    h->counts[cb_hist_index(ns)]++;
    h->total++;
    if (ns > h->max_ns) h->max_ns = ns;
}

static inline void cb_hist_merge(cb_hist *into, const cb_hist *from) {
    for (int i = 0; i < CB_HIST_BUCKETS; i++) into->counts[i] += from->counts[i];
    into->total += from->total;
    if (from->max_ns > into->max_ns) into->max_ns = from->max_ns;
}

/* Upper edge of the bucket holding quantile q (0..1), capped at the exact max. */
static inline double cb_hist_quantile_ns(const cb_hist *h, double q) {
    if (!h->total) return 0.0;
    uint64_t rank = (uint64_t)(q * (double)h->total);
    if (rank < 1) rank = 1;
    uint64_t seen = 0;
    for (int i = 0; i < CB_HIST_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= rank) {
            int lz = i / 8, frac = i % 8;
            double upper = (double)(1ull << lz) * (1.0 + (frac + 1) / 8.0);
            return upper < (double)h->max_ns ? upper : (double)h->max_ns;
        }
    }
    return (double)h->max_ns;
}

#endif
