/* What perftools' C cores share: status codes, growable arrays, an interning table of byte strings,
 * and reading a file's byte range line by line (so a big file is read in two threads).
 * Header-only (static functions), included by each core; native_build.py hashes it with the core. */
#ifndef PERFTOOLS_CORE_H
#define PERFTOOLS_CORE_H
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CORE_OK 0
#define CORE_FALLBACK 1 /* not a shape this core is sure of: Python reads the file its own way */
#define CORE_IOERROR 2
#define CORE_NOMEM 3

/* -- growable arrays ---------------------------------------------------------------------------- */
typedef struct { char *p; size_t n, cap; } bytes_t;
typedef struct { int32_t *p; size_t n, cap; } ints_t;
typedef struct { int64_t *p; size_t n, cap; } longs_t;
typedef struct { double *p; size_t n, cap; } doubles_t;

static int grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < need) {  /* a need past half the address space fails, never doubles c to 0 for ever */
        if (c > SIZE_MAX / 2 / size) return -1;
        c *= 2;
    }
    if (c > SIZE_MAX / size) return -1;
    void *q = realloc(*p, c * size);
    if (!q) return -1;
    *p = q; *cap = c;
    return 0;
}
#define PUSH(arr, v) (grow((void **)&(arr).p, &(arr).cap, (arr).n + 1, sizeof *(arr).p) ? -1 : ((arr).p[(arr).n++] = (v), 0))

static int put_bytes(bytes_t *b, const char *s, size_t n) {
    if (!n) return 0;  /* b->p may still be NULL, which memcpy may not be given even for 0 bytes */
    if (grow((void **)&b->p, &b->cap, b->n + n, 1)) return -1;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    return 0;
}

/* -- interning: open addressing over (offset, length) keys in an arena -------------------------- */
/* A slot holds what a lookup needs, so that a probe touches one cache line and then the key's bytes:
 * the key's hash, its id + 1 (0 = empty), its length and where it starts in the arena. */
typedef struct { uint64_t hash; int64_t at; int32_t id1; uint32_t len; } slot_t;

typedef struct {
    bytes_t arena;        /* the keys' bytes, one after another */
    longs_t offsets;      /* key i is arena[offsets[i] .. offsets[i+1]) */
    slot_t *slots;
    size_t nslots;
} intern_t;

/* Eight bytes at a time, multiply-xorshift mixing; a long key (a WPA Stack cell is ~1 KB) in four
 * independent lanes of 32 bytes, so that the multiplies overlap instead of waiting on each other. */
static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ n, w;
    if (n >= 64) {
        uint64_t l[4] = {h, h ^ 0x243F6A8885A308D3ULL, h ^ 0x13198A2E03707344ULL, h ^ 0xA4093822299F31D0ULL};
        for (; n >= 32; s += 32, n -= 32)
            for (int k = 0; k < 4; k++) {
                memcpy(&w, s + 8 * k, 8);
                l[k] = (l[k] ^ w) * 0xff51afd7ed558ccdULL;
                l[k] ^= l[k] >> 32;
            }
        h = l[0] ^ (l[1] * 0x9E3779B97F4A7C15ULL) ^ (l[2] * 0xc4ceb9fe1a85ec53ULL) ^ (l[3] * 0xff51afd7ed558ccdULL);
    }
    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 29);
}

static int intern_init(intern_t *t) {
    memset(t, 0, sizeof *t);
    t->nslots = 1 << 12;
    t->slots = calloc(t->nslots, sizeof *t->slots);
    if (!t->slots || PUSH(t->offsets, 0)) return -1;
    return 0;
}

static void intern_free(intern_t *t) {
    free(t->arena.p); free(t->offsets.p); free(t->slots);
}

static size_t count(const intern_t *t) { return t->offsets.n - 1; }

static int rehash(intern_t *t) {
    size_t n = t->nslots * 2;
    slot_t *slots = calloc(n, sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; i < t->nslots; i++) {
        if (!t->slots[i].id1) continue;
        size_t j = t->slots[i].hash & (n - 1);
        while (slots[j].id1) j = (j + 1) & (n - 1);
        slots[j] = t->slots[i];
    }
    free(t->slots);
    t->slots = slots; t->nslots = n;
    return 0;
}

/* Lookups are bound by cache misses (the slot, then the key's bytes); a caller with many keys at hand
 * hints both ahead, so that the misses of several keys overlap. */
static inline void intern_prefetch_slot(const intern_t *t, uint64_t h) {
    __builtin_prefetch(&t->slots[h & (t->nslots - 1)]);
}

static inline void intern_prefetch_key(const intern_t *t, uint64_t h) {
    const slot_t *x = &t->slots[h & (t->nslots - 1)];
    if (x->id1) __builtin_prefetch(t->arena.p + x->at);
}

/* The id of key s[0..n) whose hash_bytes is h, added when new; -1 when out of memory. */
static int32_t intern_hashed(intern_t *t, const char *s, size_t n, uint64_t h) {
    size_t j = h & (t->nslots - 1);
    for (; t->slots[j].id1; j = (j + 1) & (t->nslots - 1)) {
        const slot_t *x = &t->slots[j];
        if (x->hash == h && x->len == n && memcmp(t->arena.p + x->at, s, n) == 0) return x->id1 - 1;
    }
    int32_t id = (int32_t)count(t);
    int64_t at = (int64_t)t->arena.n;
    if (n > UINT32_MAX || put_bytes(&t->arena, s, n) || PUSH(t->offsets, (int64_t)t->arena.n)) return -1;
    t->slots[j] = (slot_t){h, at, id + 1, (uint32_t)n};
    if (count(t) * 2 > t->nslots && rehash(t)) return -1;
    return id;
}

/* The id of key s[0..n), added when new; -1 when out of memory. */
static int32_t intern(intern_t *t, const char *s, size_t n) { return intern_hashed(t, s, n, hash_bytes(s, n)); }

/* -- reading by lines, in one or two threads ------------------------------------------------------- */
typedef int (*line_fn)(void *ctx, const char *s, const char *e);

/* Calls fn(ctx, start, end) for each line of bytes [from, to) of the file, without its '\n' (the
 * last may have none); stops at fn's first nonzero status and returns it, or an I/O or memory error.
 * The file is read in blocks of 1 MB (more only for a longer line): small beside the tables, and all of
 * it touched whatever the file's size, so that a file's peak memory does not grow with its length. */
static int read_lines(const char *path, off_t from, off_t to, line_fn fn, void *ctx) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return CORE_IOERROR;
    size_t cap = 1 << 20, have = 0;
    char *buf = malloc(cap);
    int status = CORE_OK;
    off_t at = from;
    if (!buf) { close(fd); return CORE_NOMEM; }
    for (;;) {
        if (have == cap) {  /* one line longer than the buffer: make room */
            char *b = realloc(buf, cap * 2);
            if (!b) { status = CORE_NOMEM; break; }
            buf = b; cap *= 2;
        }
        size_t want = cap - have;
        if ((off_t)want > to - at) want = (size_t)(to - at);
        ssize_t got = want ? pread(fd, buf + have, want, at) : 0;
        if (got < 0) { if (errno == EINTR) continue; status = CORE_IOERROR; break; }
        at += got;
        int eof = got == 0;
        have += (size_t)got;
        char *s = buf, *end = buf + have;
        for (;;) {
            char *nl = memchr(s, '\n', (size_t)(end - s));
            if (!nl) break;
            if ((status = fn(ctx, s, nl))) goto done;
            s = nl + 1;
        }
        if (eof) {
            if (s < end) status = fn(ctx, s, end);
            break;
        }
        have = (size_t)(end - s);
        memmove(buf, s, have);
    }
done:
    free(buf); close(fd);
    return status;
}

/* Where a second thread may start reading: just past the first line end (after_blank: the first blank
 * line) after the middle of the file, or 0 for small files and when there is none. */
static off_t split_point(const char *path, off_t size, int after_blank) {
    if (size < (4 << 20)) return 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    char buf[1 << 16];
    off_t at = size / 2, found = 0;
    char prev = 0, prev2 = 0;  /* a blank line ends in "\n\n", or "\n\r\n" with CRLF line ends */
    while (!found && at < size) {
        ssize_t got = pread(fd, buf, sizeof buf, at);
        if (got <= 0) break;
        for (ssize_t i = 0; i < got; i++) {
            if (buf[i] == '\n' && (!after_blank || prev == '\n' || (prev == '\r' && prev2 == '\n'))) {
                found = at + i + 1;
                break;
            }
            prev2 = prev;
            prev = buf[i];
        }
        at += got;
    }
    close(fd);
    return found < size ? found : 0;
}

/* What a core does with its result while a file is read (the result is the core's own struct). */
typedef struct {
    line_fn line;                      /* each line, in file order within a part */
    int (*end)(void *r, int status);   /* after a part's last line (or its first error): the part's status */
    void *(*make)(void *like);         /* an empty result set up like this one, for the second part */
    int (*merge)(void *into, void *from); /* append the second part's result to the first's */
    void (*drop)(void *r);
} core_ops;

typedef struct { const char *path; off_t from, to; void *r; const core_ops *ops; int status; } core_part;

static void *read_part(void *arg) {
    core_part *pt = arg;
    pt->status = pt->ops->end(pt->r, read_lines(pt->path, pt->from, pt->to, pt->ops->line, pt->r));
    return NULL;
}

/* Read the whole file into r: big files in two threads, the second half (from split_point) into a
 * result of its own that is then merged into r in file order. */
static int read_file(const char *path, int after_blank, void *r, const core_ops *ops) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return CORE_IOERROR;
    off_t size = lseek(fd, 0, SEEK_END);
    close(fd);
    if (size < 0) return CORE_IOERROR;
    off_t mid = split_point(path, size, after_blank);
    core_part first = {path, 0, mid ? mid : size, r, ops, CORE_OK};
    if (!mid) {
        read_part(&first);
        return first.status;
    }
    core_part second = {path, mid, size, ops->make(r), ops, CORE_OK};
    if (!second.r) return CORE_NOMEM;
    pthread_t t;
    int threaded = pthread_create(&t, NULL, read_part, &second) == 0;
    read_part(&first);
    if (threaded) pthread_join(t, NULL);
    else read_part(&second);
    int status = first.status ? first.status : second.status;
    if (!status) status = ops->merge(r, second.r);
    ops->drop(second.r);
    return status;
}

#endif
