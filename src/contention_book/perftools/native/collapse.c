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
#include <math.h>
#include "core.h"

#define PC_OK CORE_OK
#define PC_FALLBACK CORE_FALLBACK
#define PC_IOERROR CORE_IOERROR
#define PC_NOMEM CORE_NOMEM

/* -- the result handed to Python ---------------------------------------------------------------- */
typedef struct {
    intern_t frames, stacks, events;
    ints_t sample_stack, sample_event;
    doubles_t sample_period;
    /* the sample being read */
    ints_t cur;            /* its frame ids, leaf first */
    bytes_t key;           /* scratch for a frame's key */
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

static int line_cb(void *ctx, const char *s, const char *e) {
    pc_result *r = ctx;
    return line(r, s, e, &r->key);
}

static int end_part(void *ctx, int status) {
    pc_result *r = ctx;
    if (!status) status = end_sample(r);
    if (status == PC_FALLBACK) r->fallback_line = r->line_no;
    return status;
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

static void *make_like(void *like) { (void)like; return result_new(); }
static int merge_cb(void *a, void *b) { return merge(a, b); }
static void drop_cb(void *r) { pc_free(r); }
static const core_ops OPS = {line_cb, end_part, make_like, merge_cb, drop_cb};

/* Read the whole file, in two threads when it is big; PC_OK with the arrays filled, or why not. */
int pc_parse(const char *path, pc_result **out) {
    pc_result *r = result_new();
    *out = r;
    if (!r) return PC_NOMEM;
    return read_file(path, 1, r, &OPS);
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
    free(r->sample_stack.p); free(r->sample_event.p); free(r->sample_period.p); free(r->cur.p); free(r->key.p);
    free(r);
}
