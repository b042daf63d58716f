/* The perf script fast path of perftools, in C: one pass over a capture of the usual shape.
 *
 * perf_script.py reads the same shape with Arrow arrays; this reads it at memory speed and must give
 * exactly the same result (tests/perftools/test_perftools_native.py compares both on every fixture).
 * It accepts only the shape it is sure of:
 *
 *   header   comm [pid/]tid [[cpu]] [time:] [period] event:        (HEADER_PATTERN in perf_script.py)
 *   frame    <TAB>... ADDRESS SYMBOL[+0xOFF] (DSO)                   (parse_frame's rules)
 *   blank    ends a sample;  '#' lines are comments
 *
 * and gives up (PC_FALLBACK) on anything else -- a space-led or unparseable line, a header with text
 * after its event, a frame outside a sample, a carriage return, a byte that is
 * not ASCII -- so Python reads that file its own way, with its line-numbered warnings.  Nothing here
 * decides what the Python reader would decide differently.
 *
 * Per sample it keeps: the stack id (frames interned as module\0function, stacks as root-first frame
 * id sequences), the event id (in order of first appearance) and the period (NaN when the header has
 * none).  Python picks the event, weighs and folds.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PC_OK 0
#define PC_FALLBACK 1
#define PC_IOERROR 2
#define PC_NOMEM 3

/* -- growable arrays ---------------------------------------------------------------------------- */
typedef struct { char *p; size_t n, cap; } bytes_t;
typedef struct { int32_t *p; size_t n, cap; } ints_t;
typedef struct { int64_t *p; size_t n, cap; } longs_t;
typedef struct { double *p; size_t n, cap; } doubles_t;

static int grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * size);
    if (!q) return -1;
    *p = q; *cap = c;
    return 0;
}
#define PUSH(arr, v) (grow((void **)&(arr).p, &(arr).cap, (arr).n + 1, sizeof *(arr).p) ? -1 : ((arr).p[(arr).n++] = (v), 0))

static int put_bytes(bytes_t *b, const char *s, size_t n) {
    if (grow((void **)&b->p, &b->cap, b->n + n, 1)) return -1;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    return 0;
}

/* -- interning: open addressing over (offset, length) keys in an arena -------------------------- */
typedef struct {
    bytes_t arena;        /* the keys' bytes, one after another */
    longs_t offsets;      /* key i is arena[offsets[i] .. offsets[i+1]) */
    int32_t *slots;       /* id + 1, 0 = empty */
    uint64_t *hashes;
    size_t nslots;
} intern_t;

static uint64_t hash_bytes(const char *s, size_t n) {  /* eight bytes at a time, multiply-xorshift mixing */
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ n, w;
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
    t->hashes = calloc(t->nslots, sizeof *t->hashes);
    if (!t->slots || !t->hashes || PUSH(t->offsets, 0)) return -1;
    return 0;
}

static void intern_free(intern_t *t) {
    free(t->arena.p); free(t->offsets.p); free(t->slots); free(t->hashes);
}

static size_t count(const intern_t *t) { return t->offsets.n - 1; }

static int rehash(intern_t *t) {
    size_t n = t->nslots * 2;
    int32_t *slots = calloc(n, sizeof *slots);
    uint64_t *hashes = calloc(n, sizeof *hashes);
    if (!slots || !hashes) { free(slots); free(hashes); return -1; }
    for (size_t i = 0; i < t->nslots; i++) {
        if (!t->slots[i]) continue;
        size_t j = t->hashes[i] & (n - 1);
        while (slots[j]) j = (j + 1) & (n - 1);
        slots[j] = t->slots[i]; hashes[j] = t->hashes[i];
    }
    free(t->slots); free(t->hashes);
    t->slots = slots; t->hashes = hashes; t->nslots = n;
    return 0;
}

/* The id of key s[0..n), added when new; -1 when out of memory. */
static int32_t intern(intern_t *t, const char *s, size_t n) {
    uint64_t h = hash_bytes(s, n);
    size_t j = h & (t->nslots - 1);
    while (t->slots[j]) {
        if (t->hashes[j] == h) {
            int32_t id = t->slots[j] - 1;
            size_t a = t->offsets.p[id], len = t->offsets.p[id + 1] - a;
            if (len == n && memcmp(t->arena.p + a, s, n) == 0) return id;
        }
        j = (j + 1) & (t->nslots - 1);
    }
    int32_t id = (int32_t)count(t);
    if (put_bytes(&t->arena, s, n) || PUSH(t->offsets, (int64_t)t->arena.n)) return -1;
    t->slots[j] = id + 1; t->hashes[j] = h;
    if (count(t) * 2 > t->nslots && rehash(t)) return -1;
    return id;
}

/* -- the result handed to Python ---------------------------------------------------------------- */
typedef struct {
    intern_t frames, stacks, events;
    ints_t sample_stack, sample_event;
    doubles_t sample_period;
    /* the sample being read */
    ints_t cur;            /* its frame ids, leaf first */
    int in_sample, cur_event;
    double cur_period;
    int64_t line_no, fallback_line;
} pc_result;

void pc_free(pc_result *r);

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_ws(char c) { return c == ' ' || c == '\t'; }

/* HEADER_PATTERN, tried the way its backtracking tries it: the shortest comm first, and every optional
 * group present before absent.  Sets the event span and the period; 0 when the line is a header. */
static int rest_of_header(const char *p, const char *e, int stage, const char **ev, size_t *evn, double *period,
                          int *has_period) {
    const char *q;
    switch (stage) {
    case 0:  /* [cpu] */
        if (p < e && *p == '[') {
            q = p + 1;
            while (q < e && is_digit(*q)) q++;
            if (q > p + 1 && q < e && *q == ']' && q + 1 < e && is_ws(q[1])) {
                q++;
                while (q < e && is_ws(*q)) q++;
                int g = rest_of_header(q, e, 1, ev, evn, period, has_period);
                if (g != 1) return g;  /* the regex takes the first branch that matches, tail or not */
            }
        }
        return rest_of_header(p, e, 1, ev, evn, period, has_period);
    case 1:  /* time: \d+\.\d+:\s* */
        q = p;
        while (q < e && is_digit(*q)) q++;
        if (q > p && q < e && *q == '.') {
            const char *r = q + 1;
            while (r < e && is_digit(*r)) r++;
            if (r > q + 1 && r < e && *r == ':') {
                r++;
                while (r < e && is_ws(*r)) r++;
                int g = rest_of_header(r, e, 2, ev, evn, period, has_period);
                if (g != 1) return g;
            }
        }
        return rest_of_header(p, e, 2, ev, evn, period, has_period);
    case 2:  /* period: \d+\s+ */
        q = p;
        while (q < e && is_digit(*q)) q++;
        if (q > p && q < e && is_ws(*q)) {
            const char *r = q;
            while (r < e && is_ws(*r)) r++;
            int g = rest_of_header(r, e, 3, ev, evn, period, has_period);
            if (g == 0) {
                *has_period = 1;
                *period = strtod(p, NULL);
            }
            if (g != 1) return g;
        }
        return rest_of_header(p, e, 3, ev, evn, period, has_period);
    default: {  /* event: [^\s:]\S*?:  then the end (text after it sends the file to Python) */
        if (p >= e || *p == ':' || is_ws(*p)) return 1;
        q = p;
        while (q < e && !is_ws(*q)) q++;
        /* the shortest \S*? before a ':' that ends the non-blank run; only blanks may follow */
        if (q[-1] != ':' || q - 1 == p) return 1;
        const char *r = q;
        while (r < e && is_ws(*r)) r++;
        if (r != e) return 2;  /* a tail: not this reader's shape */
        *ev = p; *evn = (size_t)(q - 1 - p); *has_period = 0;
        return 0;
    }
    }
}

static int parse_header(const char *s, const char *e, const char **ev, size_t *evn, double *period,
                        int *has_period) {
    /* ^\s*(\S.*?)\s+(\d+)(?:/(\d+))?\s+ : comm as short as the rest allows */
    const char *c = s;
    while (c < e && is_ws(*c)) c++;
    if (c >= e) return 1;
    for (const char *k = c + 1; k < e; k++) {
        if (!is_ws(*k)) continue;
        const char *p = k;
        while (p < e && is_ws(*p)) p++;
        const char *q = p;
        while (q < e && is_digit(*q)) q++;
        if (q == p) continue;
        if (q < e && *q == '/') {
            const char *r = q + 1;
            while (r < e && is_digit(*r)) r++;
            if (r == q + 1) continue;
            q = r;
        }
        if (q >= e || !is_ws(*q)) continue;
        while (q < e && is_ws(*q)) q++;
        *has_period = 0;
        int got = rest_of_header(q, e, 0, ev, evn, period, has_period);
        if (got == 0) return 0;
        if (got == 2) return 2;
    }
    return 1;
}

/* parse_frame's rules on one tab-led line: module and function, as perf_script._frame_ids makes them. */
static int parse_frame(const char *s, const char *e, bytes_t *key) {
    const char *p = s;
    while (p < e && is_ws(*p)) p++;
    const char *a = p;
    while (p < e && ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F'))) p++;
    if (p == a || p >= e || !is_ws(*p)) return 1;
    while (p < e && is_ws(*p)) p++;
    const char *end = e;
    while (end > p && is_ws(end[-1])) end--;
    if (end <= p || end[-1] != ')') return 1;
    const char *rest = p, *close = end - 1;     /* rest = [rest, end) and ends with ')' */
    const char *sym = NULL, *sym_end = NULL, *dso, *dso_end = close;
    const char *open = NULL;
    for (const char *x = close - 1; x > rest; x--)  /* the last " (" : greedy sym */
        if (x[0] == '(' && x[-1] == ' ') { open = x; break; }
    if (open) {
        sym = rest; sym_end = open - 1; dso = open + 1;
    } else if (*rest == '(') {
        sym = sym_end = rest; dso = rest + 1;
    } else {
        return 1;
    }
    while (sym < sym_end && is_ws(*sym)) sym++;              /* utf8_trim_whitespace */
    while (sym_end > sym && is_ws(sym_end[-1])) sym_end--;
    /* \+0x[0-9a-fA-F]+$ */
    const char *h = sym_end;
    while (h > sym && ((h[-1] >= '0' && h[-1] <= '9') || (h[-1] >= 'a' && h[-1] <= 'f') || (h[-1] >= 'A' && h[-1] <= 'F'))) h--;
    if (h < sym_end && h - sym >= 3 && h[-1] == 'x' && h[-2] == '0' && h[-3] == '+') sym_end = h - 3;
    const char *m = dso;
    for (const char *x = dso; x < dso_end; x++)
        if (*x == '/') m = x + 1;
    key->n = 0;
    if (dso == dso_end) { if (put_bytes(key, "[unknown]", 9)) return -1; }
    else if (put_bytes(key, m, (size_t)(dso_end - m))) return -1;
    if (put_bytes(key, "", 1)) return -1;  /* the separator: module \0 function */
    key->p[key->n - 1] = '\0';
    if (sym == sym_end) { if (put_bytes(key, "[unknown]", 9)) return -1; }
    else if (put_bytes(key, sym, (size_t)(sym_end - sym))) return -1;
    return 0;
}

static int end_sample(pc_result *r) {
    if (!r->in_sample) return 0;
    r->in_sample = 0;
    if (r->cur.n == 0) {  /* a header without frames or tail: one frame "n/a" (NO_STACK), as Python keeps it */
        int32_t fid = intern(&r->frames, "\0n/a", 4);
        if (fid < 0 || PUSH(r->cur, fid)) return PC_NOMEM;
    }
    /* root first, as the Python reader stores stacks */
    size_t n = r->cur.n;
    for (size_t i = 0; i < n / 2; i++) { int32_t t = r->cur.p[i]; r->cur.p[i] = r->cur.p[n - 1 - i]; r->cur.p[n - 1 - i] = t; }
    int32_t sid = intern(&r->stacks, (const char *)r->cur.p, n * sizeof(int32_t));
    if (sid < 0 || PUSH(r->sample_stack, sid) || PUSH(r->sample_event, r->cur_event) ||
        PUSH(r->sample_period, r->cur_period)) return PC_NOMEM;
    return 0;
}

static int bad_byte(unsigned char c) { return c >= 0x80 || (c < 0x20 && c != '\t'); }

/* Every byte ASCII and printable, or a tab; eight at a time (a word with a high bit, or a byte below
 * 0x20, is then looked at byte by byte). */
static int plain(const char *s, const char *e) {
    const uint64_t hi = 0x8080808080808080ULL, lo = 0x2020202020202020ULL;
    for (; e - s >= 8; s += 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        if ((w & hi) || ((w - lo) & ~w & hi))
            for (int i = 0; i < 8; i++)
                if (bad_byte((unsigned char)s[i])) return 0;
    }
    for (; s < e; s++)
        if (bad_byte((unsigned char)*s)) return 0;
    return 1;
}

static int line(pc_result *r, const char *s, const char *e, bytes_t *key) {
    r->line_no++;
    if (!plain(s, e)) return PC_FALLBACK;
    if (s == e) return end_sample(r);
    if (*s == '#') return 0;
    if (*s == ' ') return PC_FALLBACK;
    if (*s == '\t') {
        if (!r->in_sample) return PC_FALLBACK;  /* an orphan frame */
        int got = parse_frame(s, e, key);
        if (got) return got < 0 ? PC_NOMEM : PC_FALLBACK;
        int32_t fid = intern(&r->frames, key->p, key->n);
        if (fid < 0 || PUSH(r->cur, fid)) return PC_NOMEM;
        return 0;
    }
    int got = end_sample(r);  /* a header right after frames, without a blank line */
    if (got) return got;
    const char *ev; size_t evn; double period = NAN; int has_period = 0;
    if (parse_header(s, e, &ev, &evn, &period, &has_period)) return PC_FALLBACK;
    int32_t eid = intern(&r->events, ev, evn);
    if (eid < 0) return PC_NOMEM;
    r->in_sample = 1; r->cur.n = 0; r->cur_event = eid; r->cur_period = has_period ? period : NAN;
    return 0;
}

static pc_result *result_new(void) {
    pc_result *r = calloc(1, sizeof *r);
    if (r && (intern_init(&r->frames) || intern_init(&r->stacks) || intern_init(&r->events))) {
        pc_free(r);
        return NULL;
    }
    return r;
}

/* Read bytes [from, to) of the file -- whole samples: both ends at a line start after a blank line or
 * the file's ends -- into r. */
typedef struct { const char *path; off_t from, to; pc_result *r; int status; } part_t;

static void *read_part(void *arg) {
    part_t *pt = arg;
    pc_result *r = pt->r;
    int fd = open(pt->path, O_RDONLY);
    if (fd < 0) { pt->status = PC_IOERROR; return NULL; }
    size_t cap = 8 << 20, have = 0;
    char *buf = malloc(cap);
    bytes_t key = {0};
    int status = PC_OK;
    off_t at = pt->from;
    if (!buf) { close(fd); pt->status = PC_NOMEM; return NULL; }
    for (;;) {
        if (have == cap) {  /* one line longer than the buffer: make room */
            char *b = realloc(buf, cap * 2);
            if (!b) { status = PC_NOMEM; break; }
            buf = b; cap *= 2;
        }
        size_t want = cap - have;
        if ((off_t)want > pt->to - at) want = (size_t)(pt->to - at);
        ssize_t got = want ? pread(fd, buf + have, want, at) : 0;
        if (got < 0) { if (errno == EINTR) continue; status = PC_IOERROR; break; }
        at += got;
        int eof = got == 0;
        have += (size_t)got;
        char *s = buf, *end = buf + have;
        for (;;) {
            char *nl = memchr(s, '\n', (size_t)(end - s));
            if (!nl) break;
            status = line(r, s, nl, &key);
            if (status) goto done;
            s = nl + 1;
        }
        if (eof) {
            if (s < end) status = line(r, s, end, &key);
            if (!status) status = end_sample(r);
            break;
        }
        have = (size_t)(end - s);
        memmove(buf, s, have);
    }
done:
    if (status == PC_FALLBACK) r->fallback_line = r->line_no;
    free(buf); free(key.p); close(fd);
    pt->status = status;
    return NULL;
}

/* The second part's samples appended to the first's, its frames, stacks and events re-interned there
 * (the first part's events came first in the file, so the order of first appearance holds). */
static int merge(pc_result *a, pc_result *b) {
    size_t nf = count(&b->frames), ns = count(&b->stacks), ne = count(&b->events);
    int32_t *fmap = malloc((nf + 1) * sizeof *fmap), *smap = malloc((ns + 1) * sizeof *smap);
    int32_t *emap = malloc((ne + 1) * sizeof *emap);
    ints_t tmp = {0};
    int status = PC_NOMEM;
    if (!fmap || !smap || !emap) goto out;
    for (size_t i = 0; i < nf; i++) {
        int64_t x = b->frames.offsets.p[i], y = b->frames.offsets.p[i + 1];
        if ((fmap[i] = intern(&a->frames, b->frames.arena.p + x, (size_t)(y - x))) < 0) goto out;
    }
    for (size_t i = 0; i < ne; i++) {
        int64_t x = b->events.offsets.p[i], y = b->events.offsets.p[i + 1];
        if ((emap[i] = intern(&a->events, b->events.arena.p + x, (size_t)(y - x))) < 0) goto out;
    }
    for (size_t i = 0; i < ns; i++) {
        const int32_t *ids = (const int32_t *)(b->stacks.arena.p + b->stacks.offsets.p[i]);
        size_t n = (size_t)(b->stacks.offsets.p[i + 1] - b->stacks.offsets.p[i]) / sizeof(int32_t);
        tmp.n = 0;
        for (size_t k = 0; k < n; k++)
            if (PUSH(tmp, fmap[ids[k]])) goto out;
        if ((smap[i] = intern(&a->stacks, (const char *)tmp.p, n * sizeof(int32_t))) < 0) goto out;
    }
    for (size_t i = 0; i < b->sample_stack.n; i++)
        if (PUSH(a->sample_stack, smap[b->sample_stack.p[i]]) || PUSH(a->sample_event, emap[b->sample_event.p[i]]) ||
            PUSH(a->sample_period, b->sample_period.p[i])) goto out;
    status = PC_OK;
out:
    free(fmap); free(smap); free(emap); free(tmp.p);
    return status;
}

/* Where the second half starts: just after the first blank line ("\n\n") past the middle, or 0. */
static off_t split_point(const char *path, off_t size) {
    if (size < (4 << 20)) return 0;  /* small files: one thread */
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    char buf[1 << 16];
    off_t at = size / 2, found = 0;
    char prev = 0;
    while (!found && at < size) {
        ssize_t got = pread(fd, buf, sizeof buf, at);
        if (got <= 0) break;
        for (ssize_t i = 0; i < got; i++) {
            if (buf[i] == '\n' && prev == '\n') { found = at + i + 1; break; }
            prev = buf[i];
        }
        at += got;
    }
    close(fd);
    return found < size ? found : 0;
}

/* Read the whole file, in two threads when it is big; PC_OK with the arrays filled, or why not. */
int pc_parse(const char *path, pc_result **out) {
    pc_result *r = result_new();
    *out = r;
    if (!r) return PC_NOMEM;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return PC_IOERROR;
    off_t size = lseek(fd, 0, SEEK_END);
    close(fd);
    if (size < 0) return PC_IOERROR;
    off_t mid = split_point(path, size);
    part_t first = {path, 0, mid ? mid : size, r, PC_OK};
    if (!mid) {
        read_part(&first);
        return first.status;
    }
    part_t second = {path, mid, size, result_new(), PC_OK};
    if (!second.r) return PC_NOMEM;
    pthread_t t;
    int threaded = pthread_create(&t, NULL, read_part, &second) == 0;
    read_part(&first);
    if (threaded) pthread_join(t, NULL);
    else read_part(&second);
    int status = first.status ? first.status : second.status;
    if (!status) status = merge(r, second.r);
    pc_free(second.r);
    return status;
}

/* Accessors for ctypes: counts, then copies into arrays Python allocated. */
int64_t pc_count(pc_result *r, int what) {
    switch (what) {
    case 0: return (int64_t)r->sample_stack.n;
    case 1: return (int64_t)count(&r->frames);
    case 2: return (int64_t)r->frames.arena.n;
    case 3: return (int64_t)count(&r->stacks);
    case 4: return (int64_t)(r->stacks.arena.n / sizeof(int32_t));
    case 5: return (int64_t)count(&r->events);
    case 6: return (int64_t)r->events.arena.n;
    case 7: return r->fallback_line;
    }
    return -1;
}

void pc_samples(pc_result *r, int32_t *stack, int32_t *event, double *period) {
    memcpy(stack, r->sample_stack.p, r->sample_stack.n * sizeof *stack);
    memcpy(event, r->sample_event.p, r->sample_event.n * sizeof *event);
    memcpy(period, r->sample_period.p, r->sample_period.n * sizeof *period);
}

/* which: 0 frames, 1 stacks (offsets in int32 units), 2 events */
void pc_table(pc_result *r, int which, char *arena, int64_t *offsets) {
    intern_t *t = which == 0 ? &r->frames : which == 1 ? &r->stacks : &r->events;
    memcpy(arena, t->arena.p, t->arena.n);
    for (size_t i = 0; i < t->offsets.n; i++)
        offsets[i] = which == 1 ? t->offsets.p[i] / (int64_t)sizeof(int32_t) : t->offsets.p[i];
}

void pc_free(pc_result *r) {
    if (!r) return;
    intern_free(&r->frames); intern_free(&r->stacks); intern_free(&r->events);
    free(r->sample_stack.p); free(r->sample_event.p); free(r->sample_period.p); free(r->cur.p);
    free(r);
}
