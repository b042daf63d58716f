/* The perf script fast path of perftools, in C: one pass over a capture of the usual shape, folded
 * output written directly.
 *
 * perf_script.py reads the same shape with Arrow arrays; this reads it at memory speed and must give
 * exactly the same folded lines and warnings (tests/perftools/test_perftools_native.py compares both
 * on every fixture and on look-alikes of public captures).  It reads the shapes real captures have:
 *
 *   header   [blanks] comm [pid/]tid [[cpu]] [time:] [period] event: [FRAME]   (HEADER_PATTERN)
 *   frame    [tabs or spaces] ADDRESS SYMBOL[+0xOFF] (DSO)                    (parse_frame's rules)
 *   blank    ends a sample (spaces and tabs only, too);  '#' lines are comments;  CRLF line ends too
 *
 * frames led by a tab, by spaces (perf 5.x), by spaces then a tab (simpleperf) or not indented; a
 * header whose tail is its one frame (perf without -g); UTF-8 in frames, and in headers when its
 * letters are of scripts without digits; a frame line that does not parse inside a sample, a readable
 * one after a blank line, or a line outside a sample that is neither header nor frame (with the lines
 * after it), skipped and counted as Python counts them.  Where Python's own readers could disagree, or
 * the core is not sure, it gives up (PC_FALLBACK) and Python reads the file its own way: a carriage
 * return not before a line feed, bytes that are not UTF-8, Unicode blanks, other scripts in a header
 * (Python's \d takes their digits), a tab-led header, frames under a header
 * with a tail, a frame outside a sample that is not indented, a number out of range (pid or tid
 * beyond 64 bits, cpu beyond 32, an infinite time or period).
 *
 * Memory follows the distinct stacks, not the file: the file is read in 1 MB blocks (a big file by two
 * threads, a half each, whose samples go in batches of a bounded size into one set of tables), frames are
 * interned as module\0function, stacks as root-first frame id sequences, and each (event, stack) tally
 * keeps only its sample count, its period sum and how many of its samples had no period (per stack for
 * the first event, in a table of pairs for any other).  Python then picks the event and the weight, and
 * pc_folded writes the sorted lines.
 */
#include <math.h>
#include <stdio.h>
#include "core.h"

#define PC_OK CORE_OK
#define PC_FALLBACK CORE_FALLBACK
#define PC_IOERROR CORE_IOERROR
#define PC_NOMEM CORE_NOMEM

/* -- the result handed to Python ---------------------------------------------------------------- */
typedef struct pc_result {
    /* one set of tables for the whole file, however many threads read it (mu guards them while they do) */
    intern_t frames, stacks, events;
    /* the tallies: per stack for event id 0 (nearly always the only one), else per (event id, stack id) pair */
    longs_t first_count, first_noperiod;
    doubles_t first_sum;
    intern_t pairs;
    longs_t pair_count, pair_noperiod;
    doubles_t pair_sum;
    ints_t order;          /* the event ids in order of first appearance in the file */
    pthread_mutex_t mu;
    int failed;            /* a part stopped (another shape, no memory): the other stops at its next batch */
    int64_t fallback_line;
    /* frame lines skipped inside a sample (perf_script's FRAME_EXPECTED): how many, the first three
     * line numbers, the first one's kind (0 a bad frame line, 1 an orphan frame, 2 a bad header) and text */
    int64_t bad_count, bad_first[3], bad_kind;
    bytes_t bad_text;
} pc_result;

/* One thread's part of the file: its line state, its samples read and not yet interned (a batch of a
 * bounded size), its events in its own order of first appearance. */
typedef struct {
    pc_result *r;
    intern_t events;       /* this part's event names, in its order of first appearance */
    ints_t event_ids;      /* their ids in r->events, -1 until interned there */
    bytes_t batch;         /* samples read and not yet interned: see emit() */
    /* the sample being read */
    ints_t cur;            /* its frame ids, root first (while its batch is interned) */
    bytes_t key;           /* its frames' keys (module\0function), leaf first, one after another */
    longs_t key_at;        /* where each key starts in key, and one past the last */
    longs_t scratch;       /* where each key of the sample being interned starts in its batch */
    int in_sample, cur_event;
    double cur_period;
    int64_t line_no, fallback_line;
    int64_t bad_count, bad_first[3], bad_kind;  /* as in pc_result, numbered from this part's first line */
    int skipping;          /* after a bad header: its lines are dropped unread, up to a blank line or a header */
    bytes_t bad_text;
    bytes_t tail;          /* the sample header's text after its event (perf without -g: the frame) */
} pc_part;

void pc_free(pc_result *r);

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_ws(char c) { return c == ' ' || c == '\t'; }

/* Digits [p, q) whose value is at most limit (a string of digits), leading zeros aside. */
static int fits(const char *p, const char *q, const char *limit) {
    while (p < q && *p == '0') p++;
    size_t n = (size_t)(q - p), m = strlen(limit);
    return n < m || (n == m && memcmp(p, limit, n) <= 0);
}
#define INT64_LIMIT "9223372036854775807"
#define INT32_LIMIT "2147483647"
#define FINITE_DIGITS "99999999999999999999999999999999999999999999999999999999999999999999999999999999" \
    "99999999999999999999999999999999999999999999999999999999999999999999999999999999" \
    "99999999999999999999999999999999999999999999999999999999999999999999999999999999" \
    "9999999999999999999999999999999999999999999999999999999999999999999"  /* 307 nines: < DBL_MAX */

/* HEADER_PATTERN's event: [^\s:\d.]\S*? or [\d.]+[^\s:\d.]\S*? -- never a number alone (a header whose
 * event is missing would otherwise take its time as the event). */
static int event_ok(const char *p, const char *q) {
    const char *k = p;
    while (k < q && (is_digit(*k) || *k == '.')) k++;
    return k == p || (k < q && *k != ':');
}

/* HEADER_PATTERN, tried the way its backtracking tries it: the shortest comm first, and every optional
 * group present before absent.  Sets the event span and the period; 0 when the line is a header. */
static int rest_of_header(const char *p, const char *e, int stage, const char **ev, size_t *evn, double *period,
                          int *has_period, const char **tail) {
    const char *q;
    switch (stage) {
    case 0:  /* [cpu] */
        if (p < e && *p == '[') {
            q = p + 1;
            while (q < e && is_digit(*q)) q++;
            if (q > p + 1 && q < e && *q == ']' && q + 1 < e && is_ws(q[1])) {
                const char *digits_end = q;
                q++;
                while (q < e && is_ws(*q)) q++;
                int g = rest_of_header(q, e, 1, ev, evn, period, has_period, tail);
                if (g == 0 && !fits(p + 1, digits_end, INT32_LIMIT)) return 2;  /* Python names it */
                if (g != 1) return g;  /* the regex takes the first branch that matches, tail or not */
            }
        }
        return rest_of_header(p, e, 1, ev, evn, period, has_period, tail);
    case 1:  /* time: \d+\.\d+:\s* */
        q = p;
        while (q < e && is_digit(*q)) q++;
        if (q > p && q < e && *q == '.') {
            const char *r = q + 1;
            while (r < e && is_digit(*r)) r++;
            if (r > q + 1 && r < e && *r == ':') {
                r++;
                while (r < e && is_ws(*r)) r++;
                int g = rest_of_header(r, e, 2, ev, evn, period, has_period, tail);
                if (g == 0 && !fits(p, q, FINITE_DIGITS)) return 2;  /* an infinite time */
                if (g != 1) return g;
            }
        }
        return rest_of_header(p, e, 2, ev, evn, period, has_period, tail);
    case 2:  /* period: \d+\s+ */
        q = p;
        while (q < e && is_digit(*q)) q++;
        if (q > p && q < e && is_ws(*q)) {
            const char *r = q;
            while (r < e && is_ws(*r)) r++;
            int g = rest_of_header(r, e, 3, ev, evn, period, has_period, tail);
            if (g == 0) {
                if (!fits(p, q, FINITE_DIGITS)) return 2;  /* an infinite period */
                *has_period = 1;
                *period = strtod(p, NULL);
            }
            if (g != 1) return g;
        }
        return rest_of_header(p, e, 3, ev, evn, period, has_period, tail);
    default: {  /* event: [^\s:]\S*?:  then the end (text after it sends the file to Python) */
        if (p >= e || *p == ':' || is_ws(*p)) return 1;
        q = p;
        while (q < e && !is_ws(*q)) q++;
        /* the shortest \S*? before a ':' that ends the non-blank run; only blanks may follow */
        if (q[-1] != ':' || q - 1 == p || !event_ok(p, q - 1)) return 1;
        const char *r = q;
        while (r < e && is_ws(*r)) r++;
        *ev = p; *evn = (size_t)(q - 1 - p); *has_period = 0;
        *tail = r;  /* [r, e): the sampled frame of perf without -g, or nothing */
        return 0;
    }
    }
}

static int parse_header(const char *s, const char *e, const char **ev, size_t *evn, double *period,
                        int *has_period, const char **tail) {
    /* ^\s*(\S.*?)\s+(\d+)(?:/(\d+))?\s+ : comm as short as the rest allows */
    const char *c = s;
    while (c < e && is_ws(*c)) c++;
    if (c >= e) return 1;
    for (const char *k = c + 1; k < e; k++) {
        if (!is_ws(*k)) continue;
        const char *p = k;
        while (p < e && is_ws(*p)) p++;
        const char *q = p, *tid = NULL, *tid_end = NULL;
        while (q < e && is_digit(*q)) q++;
        if (q == p) continue;
        const char *pid_end = q;
        if (q < e && *q == '/') {
            const char *r = q + 1;
            while (r < e && is_digit(*r)) r++;
            if (r == q + 1) continue;
            tid = q + 1; tid_end = r;
            q = r;
        }
        if (q >= e || !is_ws(*q)) continue;
        while (q < e && is_ws(*q)) q++;
        *has_period = 0;
        int got = rest_of_header(q, e, 0, ev, evn, period, has_period, tail);
        if (got == 0 && (!fits(p, pid_end, INT64_LIMIT) || (tid && !fits(tid, tid_end, INT64_LIMIT)))) return 2;
        if (got == 0) return 0;
        if (got == 2) return 2;
    }
    return 1;
}

/* parse_frame's rules on one tab-led line: module \0 function, as perf_script._frame_ids makes them,
 * appended to key. */
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
    if (dso == dso_end) { if (put_bytes(key, "[unknown]", 9)) return -1; }
    else if (put_bytes(key, m, (size_t)(dso_end - m))) return -1;
    if (put_bytes(key, "", 1)) return -1;  /* the separator: module \0 function */
    key->p[key->n - 1] = '\0';
    if (sym == sym_end) { if (put_bytes(key, "[unknown]", 9)) return -1; }
    else if (put_bytes(key, sym, (size_t)(sym_end - sym))) return -1;
    return 0;
}

/* Grow an array of 8-byte numbers to n elements, the new ones zero. */
static int grow_zero(void **p, size_t *len, size_t *cap, size_t n) {
    if (n <= *len) return 0;
    if (grow(p, cap, n, 8)) return -1;
    memset((char *)*p + *len * 8, 0, (n - *len) * 8);
    *len = n;
    return 0;
}

/* Count samples into the (event, stack) tally: how many, their period sum, how many had no period. */
static int add_pair(pc_result *r, int32_t event, int32_t stack, int64_t count, double sum, int64_t noperiod) {
    if (event == 0) {
        size_t n = (size_t)stack + 1;
        if (grow_zero((void **)&r->first_count.p, &r->first_count.n, &r->first_count.cap, n) ||
            grow_zero((void **)&r->first_noperiod.p, &r->first_noperiod.n, &r->first_noperiod.cap, n) ||
            grow_zero((void **)&r->first_sum.p, &r->first_sum.n, &r->first_sum.cap, n)) return PC_NOMEM;
        r->first_count.p[stack] += count;
        r->first_noperiod.p[stack] += noperiod;
        r->first_sum.p[stack] += sum;
        return 0;
    }
    int32_t key[2] = {event, stack};
    size_t before = r->pair_count.n;
    int32_t pid = intern(&r->pairs, (const char *)key, sizeof key);
    if (pid < 0) return PC_NOMEM;
    if ((size_t)pid == before &&
        (PUSH(r->pair_count, 0) || PUSH(r->pair_noperiod, 0) || PUSH(r->pair_sum, 0.0))) return PC_NOMEM;
    r->pair_count.p[pid] += count;
    r->pair_noperiod.p[pid] += noperiod;
    r->pair_sum.p[pid] += sum;
    return 0;
}

/* The tallies one after another: *at starts at 0; returns 0 past the last. */
static int next_tally(const pc_result *r, size_t *at, int32_t *event, int32_t *stack, int64_t *samples, double *sum,
                      int64_t *noperiod) {
    for (; *at < r->first_count.n; (*at)++) {
        size_t s = *at;
        if (!r->first_count.p[s]) continue;
        *event = 0; *stack = (int32_t)s;
        *samples = r->first_count.p[s]; *sum = r->first_sum.p[s]; *noperiod = r->first_noperiod.p[s];
        (*at)++;
        return 1;
    }
    size_t i = *at - r->first_count.n;
    if (i >= count(&r->pairs)) return 0;
    const int32_t *key = (const int32_t *)(r->pairs.arena.p + r->pairs.offsets.p[i]);
    *event = key[0]; *stack = key[1];
    *samples = r->pair_count.p[i]; *sum = r->pair_sum.p[i]; *noperiod = r->pair_noperiod.p[i];
    (*at)++;
    return 1;
}

/* -- from a part's samples to the one set of tables ---------------------------------------------- */
/* A part's thread parses its lines and hashes each sample's frames into its batch, without a lock; when
 * the batch is full it takes the lock and interns the whole batch.  So two threads read two halves of a
 * big file at once, yet the tables hold each frame and stack once (halves with tables of their own held
 * every stack twice when both halves had seen it: a capture repeated three times took 1.3x the memory of
 * one copy), and the memory of a part is its read buffer and its batch, whatever the file's length. */
#define PC_BATCH (256 << 10)
typedef struct { int32_t event, n; double period; int64_t key_bytes; } pc_record;  /* then n hashes, n lengths, keys */

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

/* The part's events not yet in the shared table, put there (the lock held). */
static int map_events(pc_part *p) {
    for (size_t i = 0; i < p->event_ids.n; i++) {
        if (p->event_ids.p[i] >= 0) continue;
        int64_t x = p->events.offsets.p[i], y = p->events.offsets.p[i + 1];
        if ((p->event_ids.p[i] = intern(&p->r->events, p->events.arena.p + x, (size_t)(y - x))) < 0) return PC_NOMEM;
    }
    return 0;
}

/* Intern one batch's samples and count them (the lock held). */
static int consume(pc_part *pt, const char *p, size_t len) {
    pc_result *r = pt->r;
    const char *end = p + len;
    if (map_events(pt)) return PC_NOMEM;
    while (p < end) {
        pc_record h;
        memcpy(&h, p, sizeof h);
        p += sizeof h;
        size_t n = (size_t)h.n;
        const uint64_t *hs = (const uint64_t *)p;
        const uint32_t *lens = (const uint32_t *)(p + 8 * n);
        const char *keys = p + 8 * n + pad8(4 * n);
        p = keys + pad8((size_t)h.key_bytes);
        pt->cur.n = 0;
        if (n == 0) {  /* a header without frames or tail: one frame "n/a" (NO_STACK), as Python keeps it */
            int32_t fid = intern(&r->frames, "\0n/a", 4);
            if (fid < 0 || PUSH(pt->cur, fid)) return PC_NOMEM;
            n = 1;
        } else {  /* the frames, root first as the Python reader stores stacks; lookups hinted ahead */
            if (grow((void **)&pt->scratch.p, &pt->scratch.cap, n + 1, sizeof *pt->scratch.p) ||
                grow((void **)&pt->cur.p, &pt->cur.cap, n, sizeof *pt->cur.p)) return PC_NOMEM;
            int64_t *at = pt->scratch.p;
            at[0] = 0;
            for (size_t i = 0; i < n; i++) {
                at[i + 1] = at[i] + lens[i];
                intern_prefetch_slot(&r->frames, hs[i]);
            }
            for (size_t i = 0; i < n; i++) intern_prefetch_key(&r->frames, hs[i]);
            for (size_t i = 0; i < n; i++) {
                size_t k = n - 1 - i;
                int32_t fid = intern_hashed(&r->frames, keys + at[k], lens[k], hs[k]);
                if (fid < 0) return PC_NOMEM;
                pt->cur.p[i] = fid;
            }
            pt->cur.n = n;
        }
        int32_t sid = intern(&r->stacks, (const char *)pt->cur.p, n * sizeof(int32_t));
        if (sid < 0) return PC_NOMEM;
        int status = add_pair(r, pt->event_ids.p[h.event], sid, 1, isnan(h.period) ? 0 : h.period, isnan(h.period));
        if (status) return status;
    }
    return 0;
}

/* The batch interned into the tables, under the lock; PC_FALLBACK when the other part has stopped (the
 * file is not read by the core: no use reading on).  After a part's last line too (last: its events
 * without samples are named as well, and a stop is noted for the other part). */
static int flush(pc_part *p, int status, int last) {
    pc_result *r = p->r;
    pthread_mutex_lock(&r->mu);
    if (!status && r->failed) status = PC_FALLBACK;
    if (!status) status = consume(p, p->batch.p, p->batch.n);
    if (!status && last) status = map_events(p);
    if (status) r->failed = 1;
    pthread_mutex_unlock(&r->mu);
    p->batch.n = 0;
    return status;
}

/* The sample just read (n frame keys, leaf first, in p->key), into the batch: its event, period, the
 * hashes, lengths and bytes of its keys. */
static int emit(pc_part *p, size_t n) {
    bytes_t *b = &p->batch;
    size_t keys = n ? (size_t)p->key_at.p[n] : 0;
    size_t need = sizeof(pc_record) + 8 * n + pad8(4 * n) + pad8(keys);
    if (n > INT32_MAX || grow((void **)&b->p, &b->cap, b->n + need, 1)) return PC_NOMEM;
    char *q = b->p + b->n;
    pc_record h = {p->cur_event, (int32_t)n, p->cur_period, (int64_t)keys};
    memcpy(q, &h, sizeof h);
    uint64_t *hs = (uint64_t *)(q + sizeof h);
    uint32_t *lens = (uint32_t *)(q + sizeof h + 8 * n);
    for (size_t i = 0; i < n; i++) {
        size_t len = (size_t)(p->key_at.p[i + 1] - p->key_at.p[i]);
        if (len > UINT32_MAX) return PC_NOMEM;
        hs[i] = hash_bytes(p->key.p + p->key_at.p[i], len);
        lens[i] = (uint32_t)len;
    }
    if (keys) memcpy(q + sizeof h + 8 * n + pad8(4 * n), p->key.p, keys);
    b->n += need;
    return b->n >= PC_BATCH ? flush(p, 0, 0) : 0;
}

static int end_sample(pc_part *pt) {
    if (!pt->in_sample) return 0;
    pt->in_sample = 0;
    size_t n = pt->key_at.n - 1;
    if (pt->tail.n) {  /* perf without -g: the header's tail is the one frame; under frame lines, a bad header */
        if (n) return PC_FALLBACK;
        int got = parse_frame(pt->tail.p, pt->tail.p + pt->tail.n, &pt->key);
        if (got) return got < 0 ? PC_NOMEM : PC_FALLBACK;
        if (PUSH(pt->key_at, (int64_t)pt->key.n)) return PC_NOMEM;
        n = 1;
    }
    return emit(pt, n);
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

/* Valid UTF-8 of code points that Python's str.strip() and the regexes' \s do not take for blanks
 * (U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000): such a frame line
 * reads the same as bytes here and as text in Python.  0 for anything else (Python decodes invalid
 * bytes with replacement characters: its own reader then). */
/* A code point no Python regex reads as a digit (\d is any Unicode Nd) nor as a blank: Latin, Greek,
 * Cyrillic, punctuation, kana, CJK, Hangul and emoji have none.  Header text of these reads alike here,
 * in Python's re and in Arrow's RE2. */
static int header_safe(uint32_t cp) {
    return (cp >= 0x80 && cp <= 0x24F && cp != 0x85 && cp != 0xA0) || (cp >= 0x370 && cp <= 0x52F) ||
           (cp >= 0x2010 && cp <= 0x2027) || (cp >= 0x2030 && cp <= 0x205E && cp != 0x205F) ||
           (cp >= 0x3040 && cp <= 0x30FF) || (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0xAC00 && cp <= 0xD7AF) ||
           (cp >= 0x1F300 && cp <= 0x1FAFF);
}

/* utf8_frame_text's test; *any_header_unsafe set when a code point is not header_safe. */
static int utf8_text(const unsigned char *s, const unsigned char *e, int *header_unsafe);

static int utf8_frame_text(const unsigned char *s, const unsigned char *e) {
    int unsafe;
    return utf8_text(s, e, &unsafe);
}

static int utf8_text(const unsigned char *s, const unsigned char *e, int *header_unsafe) {
    *header_unsafe = 0;
    while (s < e) {
        unsigned c = *s;
        if (c < 0x80) { if (c < 0x20 && c != '\t') return 0; s++; continue; }
        int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
        if (!n || c > 0xF4 || e - s < n) return 0;
        uint32_t cp = c & (0x7F >> n);
        for (int i = 1; i < n; i++) {
            if ((s[i] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (s[i] & 0x3F);
        }
        if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
            return 0;
        if (cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
            cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000) return 0;
        if (!header_safe(cp)) *header_unsafe = 1;
        s += n;
    }
    return 1;
}

/* A frame line inside a sample that does not parse (FRAME_EXPECTED), one after a blank line
 * (ORPHAN_EXPECTED), or a line outside a sample that is neither header nor frame (HEADER_EXPECTED):
 * skipped and counted, as every Python reader skips it. */
static int bad_line(pc_part *pt, const char *s, const char *e, int kind) {
    if (pt->bad_count < 3) pt->bad_first[pt->bad_count] = pt->line_no;
    if (!pt->bad_count) pt->bad_kind = kind;
    if (pt->bad_count++ == 0 && put_bytes(&pt->bad_text, s, (size_t)(e - s))) return PC_NOMEM;
    return 0;
}

/* One line, read as perf_script.py's readers all read it (its _slow_block's order of tries): where
 * they could differ, or where a line is not this core's shape, PC_FALLBACK hands the file to Python. */
static int line(pc_part *pt, const char *s, const char *e, bytes_t *key) {
    pt->line_no++;
    if (e > s && e[-1] == '\r') e--;  /* CRLF: one line end, as Python reads it; any other CR: Python's */
    int ascii = plain(s, e);
    if (s == e) {
        pt->skipping = 0;
        return ascii ? end_sample(pt) : PC_FALLBACK;
    }
    if (*s == '#') return 0;
    const char *t = s;
    while (t < e && is_ws(*t)) t++;
    if (t == e) {  /* blanks only: a blank line, as str.strip() reads it */
        pt->skipping = 0;
        return end_sample(pt);
    }
    int indented = is_ws(*s);
    if (!ascii) {  /* UTF-8 text: as a frame of a sample, or, of letters no regex takes for digits or
                    * blanks (Python's \d and \s are Unicode-wide), as any line */
        int unsafe;
        if (!utf8_text((const unsigned char *)s, (const unsigned char *)e, &unsafe)) return PC_FALLBACK;
        if (unsafe) {
            if (!indented || !pt->in_sample) return PC_FALLBACK;
            int got = parse_frame(s, e, key);
            if (got) return got < 0 ? PC_NOMEM : PC_FALLBACK;
            return PUSH(pt->key_at, (int64_t)key->n) ? PC_NOMEM : 0;
        }
    }
    if (indented && pt->in_sample) {  /* a frame, tab- or space-led */
        size_t mark = key->n;
        int got = parse_frame(s, e, key);  /* appends the frame's key; interned at the sample's end */
        if (got < 0) return PC_NOMEM;
        if (!got) return PUSH(pt->key_at, (int64_t)key->n) ? PC_NOMEM : 0;
        key->n = mark;
    }
    const char *ev; size_t evn; double period = NAN; int has_period = 0;
    const char *tail = e;
    int h = parse_header(s, e, &ev, &evn, &period, &has_period, &tail);
    if (h == 2) return PC_FALLBACK;
    if (h == 1) {
        /* not a header: outside a sample an orphan frame or a bad header (the Python readers report
         * these differently); inside one, a frame that is not indented, or a bad frame line */
        if (!pt->in_sample) {
            if (pt->skipping) return 0;
            size_t mark = key->n;
            int got = parse_frame(s, e, key);
            key->n = mark;
            if (got < 0) return PC_NOMEM;
            if (!got)  /* an indented frame after a blank line: ORPHAN_EXPECTED to every reader */
                return indented ? bad_line(pt, s, e, 1) : PC_FALLBACK;
            /* a line that is neither (perf's stderr in the capture, say): HEADER_EXPECTED, and its sample's
             * lines dropped; a tab-led one the vectorised reader reports line by line instead */
            if (*s == '\t') return PC_FALLBACK;
            pt->skipping = 1;
            return bad_line(pt, s, e, 2);
        }
        if (*s == '\t') return bad_line(pt, s, e, 0);
        size_t mark = key->n;
        int got = parse_frame(s, e, key);
        if (got < 0) return PC_NOMEM;
        if (!got) return PUSH(pt->key_at, (int64_t)key->n) ? PC_NOMEM : 0;
        key->n = mark;
        return bad_line(pt, s, e, 0);
    }
    if (*s == '\t') return PC_FALLBACK;  /* a tab-led header: a frame line (bad or orphan) to the vectorised reader */
    int got = end_sample(pt);  /* a header right after frames, without a blank line */
    if (got) return got;
    pt->skipping = 0;
    int32_t eid = intern(&pt->events, ev, evn);
    if (eid < 0 || ((size_t)eid == pt->event_ids.n && PUSH(pt->event_ids, -1))) return PC_NOMEM;
    pt->key.n = 0; pt->key_at.n = 0; pt->tail.n = 0;
    if (PUSH(pt->key_at, 0) || put_bytes(&pt->tail, tail, (size_t)(e - tail))) return PC_NOMEM;
    pt->in_sample = 1; pt->cur.n = 0; pt->cur_event = eid; pt->cur_period = has_period ? period : NAN;
    return 0;
}

static pc_result *result_new(void) {
    pc_result *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    if (pthread_mutex_init(&r->mu, NULL)) {
        free(r);
        return NULL;
    }
    if (intern_init(&r->frames) || intern_init(&r->stacks) || intern_init(&r->events) || intern_init(&r->pairs)) {
        pc_free(r);
        return NULL;
    }
    return r;
}

static void part_free(pc_part *p) {
    if (!p) return;
    intern_free(&p->events);
    free(p->event_ids.p); free(p->batch.p); free(p->cur.p); free(p->key.p); free(p->key_at.p); free(p->scratch.p);
    free(p->bad_text.p); free(p->tail.p);
    free(p);
}

static pc_part *part_new(pc_result *r) {
    pc_part *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->r = r;
    if (intern_init(&p->events)) {
        part_free(p);
        return NULL;
    }
    return p;
}

static int line_cb(void *ctx, const char *s, const char *e) {
    pc_part *p = ctx;
    return line(p, s, e, &p->key);
}

/* After a part's last line (or its first error): its last sample, its last batch. */
static int end_part(void *ctx, int status) {
    pc_part *p = ctx;
    if (!status) status = end_sample(p);
    status = flush(p, status, 1);
    if (status == PC_FALLBACK) p->fallback_line = p->line_no;
    return status;
}

/* After both parts: the second's events after the first's (the order of first appearance in the file),
 * its skipped lines after the first's, numbered from the file's start.  Its samples are in the tables. */
static int merge(pc_part *a, pc_part *b) {
    for (size_t i = 0; i < b->event_ids.n; i++) {
        int64_t x = b->events.offsets.p[i], y = b->events.offsets.p[i + 1];
        int32_t k = intern(&a->events, b->events.arena.p + x, (size_t)(y - x));
        if (k < 0 || ((size_t)k == a->event_ids.n && PUSH(a->event_ids, b->event_ids.p[i]))) return PC_NOMEM;
    }
    for (int64_t i = 0; i < b->bad_count && i < 3 && a->bad_count + i < 3; i++)
        a->bad_first[a->bad_count + i] = a->line_no + b->bad_first[i];
    if (!a->bad_count && b->bad_count) {
        a->bad_kind = b->bad_kind;
        if (put_bytes(&a->bad_text, b->bad_text.p, b->bad_text.n)) return PC_NOMEM;
    }
    a->bad_count += b->bad_count;
    return PC_OK;
}

static void *make_like(void *like) { return part_new(((pc_part *)like)->r); }
static int merge_cb(void *a, void *b) { return merge(a, b); }
static void drop_cb(void *p) { part_free(p); }
static const core_ops OPS = {line_cb, end_part, make_like, merge_cb, drop_cb};

/* Read the whole file, a big one by two threads (a half each, into the one set of tables); PC_OK with
 * the arrays filled, or why not. */
int pc_parse(const char *path, pc_result **out) {
    pc_result *r = result_new();
    *out = r;
    if (!r) return PC_NOMEM;
    pc_part *p = part_new(r);
    if (!p) return PC_NOMEM;
    int status = read_file(path, 1, p, &OPS);
    r->fallback_line = p->fallback_line;
    for (size_t i = 0; !status && i < p->event_ids.n; i++)
        if (PUSH(r->order, p->event_ids.p[i])) status = PC_NOMEM;
    r->bad_count = p->bad_count; r->bad_kind = p->bad_kind;
    memcpy(r->bad_first, p->bad_first, sizeof r->bad_first);
    r->bad_text = p->bad_text;
    p->bad_text = (bytes_t){0};
    part_free(p);
    return status;
}

/* Accessors for ctypes.  pc_count: 0 samples, 1 frames, 3 stacks, 5 events, 7 the line that made the
 * core step aside, 8 frame lines skipped, 9-11 the first three of them (line numbers), 12 the first one's kind. */
int64_t pc_count(pc_result *r, int what) {
    int64_t n = 0, c, nop;
    int32_t ev, st;
    double sum;
    switch (what) {
    case 0:
        for (size_t at = 0; next_tally(r, &at, &ev, &st, &c, &sum, &nop);) n += c;
        return n;
    case 1: return (int64_t)count(&r->frames);
    case 3: return (int64_t)count(&r->stacks);
    case 5: return (int64_t)r->order.n;
    case 7: return r->fallback_line;
    case 8: return r->bad_count;
    case 9: case 10: case 11: return what - 9 < r->bad_count ? r->bad_first[what - 9] : 0;
    case 12: return r->bad_kind;
    }
    return -1;
}

/* The first skipped line's text copied into buf (at most cap bytes, NUL-terminated); its length. */
int64_t pc_bad_text(pc_result *r, char *buf, int64_t cap) {
    int64_t n = (int64_t)r->bad_text.n;
    if (cap > 0) {
        int64_t k = n < cap - 1 ? n : cap - 1;
        if (k) memcpy(buf, r->bad_text.p, (size_t)k);
        buf[k] = '\0';
    }
    return n;
}

/* Event i (in order of first appearance in the file): its name copied into buf (at most cap bytes,
 * NUL-terminated), its sample count, and how many of its samples had no period.  The name's length, or -1
 * for no such event. */
int64_t pc_event(pc_result *r, int64_t i, char *buf, int64_t cap, int64_t *samples, int64_t *noperiod) {
    if (i < 0 || (size_t)i >= r->order.n) return -1;
    int32_t id = r->order.p[i];
    int64_t a = r->events.offsets.p[id], n = r->events.offsets.p[id + 1] - a;
    if (cap > 0) {
        int64_t k = n < cap - 1 ? n : cap - 1;
        memcpy(buf, r->events.arena.p + a, (size_t)k);
        buf[k] = '\0';
    }
    *samples = *noperiod = 0;
    int64_t c, nop;
    int32_t ev, st;
    double sum;
    for (size_t at = 0; next_tally(r, &at, &ev, &st, &c, &sum, &nop);)
        if (ev == id) { *samples += c; *noperiod += nop; }
    return n;
}

/* -- the folded output -------------------------------------------------------------------------- */
/* Lines are sorted as Python sorts their text (bytes, then the shorter first) without building the
 * text: two stacks compare equal over their common run of frame ids; at the first frame that differs
 * the names decide, and when one name is a prefix of the other the shorter side continues with ';'
 * (or ends, which sorts first) against the longer name's next byte -- never ';' itself, since ';' in a
 * name becomes ':'.  So memory stays that of the distinct stacks, not of the output. */
typedef struct { const char *names; const int64_t *name_at; const pc_result *r; } order_ctx;
typedef struct { int32_t stack; double weight; } folded_line;

static const int32_t *stack_ids(const pc_result *r, int32_t s, size_t *n) {
    *n = (size_t)(r->stacks.offsets.p[s + 1] - r->stacks.offsets.p[s]) / sizeof(int32_t);
    return (const int32_t *)(r->stacks.arena.p + r->stacks.offsets.p[s]);
}

static int by_text(const order_ctx *c, int32_t sa, int32_t sb) {
    size_t na, nb;
    const int32_t *a = stack_ids(c->r, sa, &na), *b = stack_ids(c->r, sb, &nb);
    size_t k = 0;
    for (;; k++) {
        if (k == na || k == nb) return (na > nb) - (na < nb);  /* one text is a prefix of the other */
        if (a[k] == b[k]) continue;
        const char *x = c->names + c->name_at[a[k]], *y = c->names + c->name_at[b[k]];
        size_t lx = (size_t)(c->name_at[a[k] + 1] - c->name_at[a[k]]), ly = (size_t)(c->name_at[b[k] + 1] - c->name_at[b[k]]);
        size_t m = lx < ly ? lx : ly;
        int d = memcmp(x, y, m);
        if (d) return d;
        if (lx == ly) continue;  /* two frames with one name */
        if (lx < ly) {  /* a goes on with ';' or ends */
            if (k + 1 == na) return -1;
            return ';' < (unsigned char)y[m] ? -1 : 1;
        }
        if (k + 1 == nb) return 1;
        return (unsigned char)x[m] < ';' ? -1 : 1;
    }
}

/* A stable merge sort with a context (qsort_r is not portable). */
static void sort_lines(folded_line *v, folded_line *tmp, size_t n, const order_ctx *c) {
    if (n < 2) return;
    size_t h = n / 2;
    sort_lines(v, tmp, h, c);
    sort_lines(v + h, tmp, n - h, c);
    if (by_text(c, v[h - 1].stack, v[h].stack) <= 0) return;
    memcpy(tmp, v, n * sizeof *v);
    size_t i = 0, j = h, o = 0;
    while (i < h && j < n) v[o++] = by_text(c, tmp[j].stack, tmp[i].stack) < 0 ? tmp[j++] : tmp[i++];
    while (i < h) v[o++] = tmp[i++];
    while (j < n) v[o++] = tmp[j++];
}

/* A weight as folded.format_weight writes it: an integer without a point, else Python's repr. */
static int format_weight(double w, char *buf, size_t cap) {
    if (w == floor(w)) return snprintf(buf, cap, "%.0f", w);  /* inf too: "inf", as Python prints it */
    for (int digits = 1; digits <= 17; digits++) {
        int n = snprintf(buf, cap, "%.*g", digits, w);
        if (strtod(buf, NULL) == w) return n;
    }
    return snprintf(buf, cap, "%.17g", w);
}

typedef struct { int fd; char *buf; size_t n, cap; int error; } out_t;

static void out_flush(out_t *o) {
    size_t done = 0;
    while (!o->error && done < o->n) {
        ssize_t w = write(o->fd, o->buf + done, o->n - done);
        if (w < 0) { if (errno == EINTR) continue; o->error = errno; break; }
        done += (size_t)w;
    }
    o->n = 0;
}

static void out_put(out_t *o, const char *s, size_t n) {
    while (n && !o->error) {
        size_t k = o->cap - o->n < n ? o->cap - o->n : n;
        memcpy(o->buf + o->n, s, k);
        o->n += k; s += k; n -= k;
        if (o->n == o->cap) out_flush(o);
    }
}

/* Write the folded lines of event `event` (pc_event's numbering) to fd: one line per distinct stack text, sorted as Python
 * sorts str, weighted by the period sum (use_period) or the sample count.  Frames are module!function
 * (function alone without a module), ';' in a name becomes ':' as folded._clean does.  Returns the
 * number of lines written, -PC_NOMEM, or -(1000 + errno) when writing failed (EPIPE: a closed pipe). */
int64_t pc_folded(pc_result *r, int32_t event, int use_period, int fd) {
    size_t nf = count(&r->frames), np_ = r->first_count.n + count(&r->pairs), nl = 0;
    int64_t *name_at = malloc((nf + 1) * sizeof *name_at);
    bytes_t names = {0};
    folded_line *lines = malloc((np_ + 1) * sizeof *lines), *tmp = malloc((np_ + 1) * sizeof *tmp);
    out_t o = {fd, malloc(1 << 20), 0, 1 << 20, 0};
    int64_t result = -PC_NOMEM;
    int32_t id = event >= 0 && (size_t)event < r->order.n ? r->order.p[event] : -1;  /* its id in the tables */
    if (!name_at || !lines || !tmp || !o.buf) goto out;
    for (size_t f = 0; f < nf; f++) {  /* display names, cleaned */
        const char *k = r->frames.arena.p + r->frames.offsets.p[f];
        size_t kn = (size_t)(r->frames.offsets.p[f + 1] - r->frames.offsets.p[f]);
        const char *sep = memchr(k, '\0', kn);
        if (!sep) goto out;  /* every key is module\0function */
        size_t mn = (size_t)(sep - k);
        name_at[f] = (int64_t)names.n;
        if (mn && (put_bytes(&names, k, mn) || put_bytes(&names, "!", 1))) goto out;
        if (put_bytes(&names, sep + 1, kn - mn - 1)) goto out;
        for (size_t c = (size_t)name_at[f]; c < names.n; c++)
            if (names.p[c] == ';') names.p[c] = ':';
    }
    name_at[nf] = (int64_t)names.n;
    int32_t ev, st;
    int64_t samples, nop;
    double sum_;
    for (size_t at = 0; next_tally(r, &at, &ev, &st, &samples, &sum_, &nop);) {  /* the event's stacks and weights */
        if (ev != id) continue;
        lines[nl].stack = st;
        lines[nl].weight = use_period ? sum_ : (double)samples;
        nl++;
    }
    order_ctx c = {names.p, name_at, r};
    sort_lines(lines, tmp, nl, &c);
    int64_t written = 0;
    char w[400];  /* DBL_MAX has 309 digits */
    for (size_t i = 0; i < nl;) {
        size_t j = i + 1;
        double sum = lines[i].weight;
        for (; j < nl && by_text(&c, lines[i].stack, lines[j].stack) == 0; j++) sum += lines[j].weight;  /* one text */
        size_t n;
        const int32_t *ids = stack_ids(r, lines[i].stack, &n);
        for (size_t k = 0; k < n; k++) {
            if (k) out_put(&o, ";", 1);
            out_put(&o, names.p + name_at[ids[k]], (size_t)(name_at[ids[k] + 1] - name_at[ids[k]]));
        }
        w[0] = ' ';
        int k = format_weight(sum, w + 1, sizeof w - 2);
        w[k + 1] = '\n';
        out_put(&o, w, (size_t)k + 2);
        written++;
        i = j;
    }
    out_flush(&o);
    result = o.error ? -(1000 + o.error) : written;
out:
    free(name_at); free(names.p); free(lines); free(tmp); free(o.buf);
    return result;
}

void pc_free(pc_result *r) {
    if (!r) return;
    intern_free(&r->frames); intern_free(&r->stacks); intern_free(&r->events); intern_free(&r->pairs);
    free(r->pair_count.p); free(r->pair_noperiod.p); free(r->pair_sum.p);
    free(r->bad_text.p); free(r->order.p);
    free(r->first_count.p); free(r->first_noperiod.p); free(r->first_sum.p);
    pthread_mutex_destroy(&r->mu);
    free(r);
}
