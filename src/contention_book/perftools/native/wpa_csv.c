/* The WPA CSV fast path of perftools, in C: one pass over a wpaexporter "CPU Usage (Sampled)" export.
 *
 * importers/wpa_csv.py reads the same files with pyarrow's CSV reader; this reads the usual shape at
 * memory speed, in two threads for big files, and must give exactly the same Profile
 * (tests/perftools/test_perftools_native.py compares both on every fixture).  Python has already read
 * the header (delimiter, which column is what); per data row this keeps
 *
 *   the Stack cell and the Process cell, interned as raw bytes (quotes and all: Python unquotes and
 *   splits each distinct one once), and
 *   the numeric columns (thread, time, cpu, weight or count) as doubles, NaN when empty.
 *
 * It accepts only what it is sure of -- RFC 4180 fields, '\n' or "\r\n" line ends, empty lines skipped
 * (as pyarrow does), numbers written [+-]digits[.digits][e[+-]digits] in the file's decimal mark ('.'
 * or ','), grouped in threes by the other mark or not, spaces, apostrophes and Unicode spaces between
 * or around the digits as numbers.parse_strings allows -- and gives up (CORE_FALLBACK) on anything else:
 * a row with another number of fields, a quoted field running past its line, a stray carriage return,
 * any other spelling of a number ("inf", "NaN", a quote inside it).  Then
 * the pyarrow reader reads the file and says what is wrong with it, with the line.
 */
#define _GNU_SOURCE
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include "core.h"

#define ROLE_SKIP 0
#define ROLE_STACK 1
#define ROLE_PROCESS 2
#define ROLE_NUMBER 3 /* + the number's slot */
#define MAX_COLUMNS 4096
#define MAX_SLOTS 8

typedef struct {
    intern_t stacks, processes;
    intern_t frames;       /* wc_split: module\0function of every frame piece, in order of first appearance */
    longs_t stack_at;      /* wc_split: stack i's frame ids are stack_frames[stack_at[i] .. stack_at[i+1]) */
    ints_t stack_frames;
    ints_t row_stack, row_process;
    doubles_t numbers[MAX_SLOTS];
    /* how to read a row (shared, read-only) */
    const int32_t *roles;
    int ncols, nslots, skip_header;
    char delim, decimal;
    int64_t line_no;
} wc_result;

void wc_free(wc_result *r);

static locale_t c_locale(void) {  /* strtod in the "C" locale, whatever the embedding program set */
    static locale_t loc;
    if (!loc) loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    return loc;
}

static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A number as the readers of importers/wpa_csv.py read it; 0 = NaN for an empty cell, -1 = not sure.
 * Written [+-]digits[<dec>digits][e[+-]digits] in the file's decimal mark (r->decimal, '.' or ','), the
 * integer part optionally grouped in threes by the other mark (numbers.parse_number's pattern: "1,234.5"
 * in a '.'-file, "1.234,5" in a ','-file).  Correctly rounded, as pyarrow's parser and Python's float()
 * are: digits that fit 2^53 with a power of ten up to 1e22 are one exact IEEE multiply or divide
 * (Clinger's fast path, which fast_float takes too); anything else goes to strtod on the digits. */
static int number(const char *s, const char *e, char dec, double *out) {
    if (s == e) { *out = NAN; return 0; }
    const char grp = dec == '.' ? ',' : '.';
    char buf[64];
    size_t nb = 0;
    const char *p = s;
    int digits = 0, scale = 0, negative = *p == '-';
    uint64_t mantissa = 0;
    if (e - s > 62) return -1;  /* buf holds every byte of a shorter cell */
    if (*p == '+' || *p == '-') buf[nb++] = *p++;
    int run = 0, grouped = 0;  /* digits since the last group mark; whether there was one */
    for (; p < e; p++) {
        if (*p >= '0' && *p <= '9') {
            if (digits < 19) mantissa = mantissa * 10 + (uint64_t)(*p - '0');
            buf[nb++] = *p;
            digits++, run++;
        } else if (*p == grp) {  /* \d{1,3}(<grp>\d{3})+ */
            if (!run || run > 3 || (grouped && run != 3)) return -1;
            grouped = 1, run = 0;
        } else break;
    }
    if (grouped && run != 3) return -1;
    if (p < e && *p == dec) {
        p++;
        buf[nb++] = '.';
        for (; p < e && *p >= '0' && *p <= '9'; p++, digits++, scale--) {
            if (digits < 19) mantissa = mantissa * 10 + (uint64_t)(*p - '0');
            buf[nb++] = *p;
        }
    }
    if (!digits) return -1;
    int exact = digits <= 19;
    const char *x0 = p;
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        int sign = 1, x = 0;
        if (p < e && (*p == '+' || *p == '-')) sign = *p++ == '-' ? -1 : 1;
        if (p == e || *p < '0' || *p > '9') return -1;
        for (; p < e && *p >= '0' && *p <= '9'; p++)
            if (x < 10000) x = x * 10 + (*p - '0');
        scale += sign * x;
    }
    if (p != e) return -1;
    if (exact && mantissa <= (1ULL << 53) && scale >= -22 && scale <= 22) {
        double v = (double)mantissa;
        v = scale < 0 ? v / POW10[-scale] : v * POW10[scale];
        *out = negative ? -v : v;
        return 0;
    }
    memcpy(buf + nb, x0, (size_t)(e - x0));
    buf[nb + (size_t)(e - x0)] = '\0';
    *out = strtod_l(buf, NULL, c_locale());
    return 0;
}

/* A number cell as numbers.parse_strings cleans it: blanks and tabs trimmed off its ends, and the
 * grouping marks Windows locales write removed wherever they are: spaces, apostrophes (de-CH), no-break
 * spaces U+00A0 (ru-RU), narrow no-break spaces U+202F (fr-FR) and thin spaces U+2009.  [*x, *y) is
 * left alone when it holds none, else pointed at its cleaned copy in clean (64 bytes); -1 when longer. */
static int unspace(const char **x, const char **y, char *clean) {
    const unsigned char *p = (const unsigned char *)*x, *e = (const unsigned char *)*y;
    const unsigned char *q = p;
    while (q < e && *q != ' ' && *q != '\t' && *q != '\'' && *q != 0xc2 && *q != 0xe2) q++;
    if (q == e) return 0;  /* the usual case: nothing to clean */
    while (p < e && (*p == ' ' || *p == '\t')) p++;
    while (e > p && (e[-1] == ' ' || e[-1] == '\t')) e--;
    size_t n = 0;
    while (p < e) {
        if (*p == ' ' || *p == '\'') { p++; continue; }
        if (*p == 0xc2 && e - p >= 2 && p[1] == 0xa0) { p += 2; continue; }
        if (*p == 0xe2 && e - p >= 3 && p[1] == 0x80 && (p[2] == 0xaf || p[2] == 0x89)) { p += 3; continue; }
        if (n >= 63) return -1;
        clean[n++] = (char)*p++;
    }
    *x = clean, *y = clean + n;
    return 0;
}

static int row(void *ctx, const char *s, const char *e) {
    wc_result *r = ctx;
    r->line_no++;
    if (r->skip_header) {  /* Python read the header; a quote left open there is not for us */
        r->skip_header = 0;
        int quotes = 0;
        for (const char *p = s; p < e; p++) quotes += *p == '"';
        return quotes % 2 ? CORE_FALLBACK : CORE_OK;
    }
    if (e > s && e[-1] == '\r') e--;
    if (s == e) return CORE_OK;  /* an empty line */
    const char *p = s;
    int col = 0;
    for (;;) {
        const char *a, *b, *next;  /* the cell's raw bytes [a, b); next: after its delimiter, or NULL */
        a = p;
        if (p < e && *p == '"') {
            const char *q = p + 1;
            for (;;) {
                q = memchr(q, '"', (size_t)(e - q));
                if (!q) return CORE_FALLBACK;  /* runs past the line */
                if (q + 1 < e && q[1] == '"') { q += 2; continue; }
                break;
            }
            b = q + 1;
            if (b < e && *b != r->delim) return CORE_FALLBACK;
        } else {
            b = memchr(p, r->delim, (size_t)(e - p));
            if (!b) b = e;
        }
        next = b < e ? b + 1 : NULL;
        if (col >= r->ncols) return CORE_FALLBACK;
        if (memchr(a, '\r', (size_t)(b - a))) return CORE_FALLBACK;
        int role = r->roles[col];
        if (role == ROLE_STACK || role == ROLE_PROCESS) {
            int32_t id = intern(role == ROLE_STACK ? &r->stacks : &r->processes, a, (size_t)(b - a));
            if (id < 0) return CORE_NOMEM;
            if (PUSH(*(role == ROLE_STACK ? &r->row_stack : &r->row_process), id)) return CORE_NOMEM;
        } else if (role >= ROLE_NUMBER) {
            const char *x = a, *y = b;
            if (x < y && *x == '"') {
                x++, y--;
                if (memchr(x, '"', (size_t)(y - x))) return CORE_FALLBACK;
            }
            char clean[64];
            if (unspace(&x, &y, clean)) return CORE_FALLBACK;
            double v;
            if (number(x, y, r->decimal, &v)) return CORE_FALLBACK;
            if (PUSH(r->numbers[role - ROLE_NUMBER], v)) return CORE_NOMEM;
        }
        col++;
        if (!next) break;
        p = next;
    }
    if (col != r->ncols) return CORE_FALLBACK;
    return CORE_OK;
}

static wc_result *result_new(char delim, char decimal, int ncols, const int32_t *roles) {
    wc_result *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    if (intern_init(&r->stacks) || intern_init(&r->processes)) { wc_free(r); return NULL; }
    r->delim = delim; r->decimal = decimal; r->ncols = ncols; r->roles = roles;
    for (int i = 0; i < ncols; i++)
        if (roles[i] >= ROLE_NUMBER && roles[i] - ROLE_NUMBER + 1 > r->nslots) r->nslots = roles[i] - ROLE_NUMBER + 1;
    return r;
}

/* The second part's rows appended to the first's, its stacks and processes re-interned there. */
static int merge_table(intern_t *into, const intern_t *from, const ints_t *ids, ints_t *out) {
    size_t n = count(from);
    int32_t *map = malloc((n + 1) * sizeof *map);
    if (!map) return CORE_NOMEM;
    for (size_t i = 0; i < n; i++) {
        int64_t x = from->offsets.p[i], y = from->offsets.p[i + 1];
        if ((map[i] = intern(into, from->arena.p + x, (size_t)(y - x))) < 0) { free(map); return CORE_NOMEM; }
    }
    for (size_t i = 0; i < ids->n; i++)
        if (PUSH(*out, map[ids->p[i]])) { free(map); return CORE_NOMEM; }
    free(map);
    return CORE_OK;
}

static int merge(wc_result *a, wc_result *b) {
    if (merge_table(&a->stacks, &b->stacks, &b->row_stack, &a->row_stack) ||
        merge_table(&a->processes, &b->processes, &b->row_process, &a->row_process)) return CORE_NOMEM;
    for (int k = 0; k < a->nslots; k++) {
        doubles_t *d = &a->numbers[k];
        if (grow((void **)&d->p, &d->cap, d->n + b->numbers[k].n, sizeof *d->p)) return CORE_NOMEM;
        memcpy(d->p + d->n, b->numbers[k].p, b->numbers[k].n * sizeof *d->p);
        d->n += b->numbers[k].n;
    }
    return CORE_OK;
}

static int end_part(void *r, int status) { (void)r; return status; }
static void *make_like(void *like) {
    wc_result *r = like;
    return result_new(r->delim, r->decimal, r->ncols, r->roles);
}
static int merge_cb(void *a, void *b) { return merge(a, b); }
static void drop_cb(void *r) { wc_free(r); }
static const core_ops OPS = {row, end_part, make_like, merge_cb, drop_cb};

/* Read the file (header line first) with roles[col]: ROLE_SKIP, ROLE_STACK, ROLE_PROCESS or
 * ROLE_NUMBER + slot; CORE_OK with the arrays filled, or why not. */
int wc_parse(const char *path, char delim, char decimal, int ncols, const int32_t *roles, wc_result **out) {
    *out = NULL;
    if (decimal != '.' && decimal != ',') return CORE_FALLBACK;
    if (ncols <= 0 || ncols > MAX_COLUMNS) return CORE_FALLBACK;
    for (int i = 0; i < ncols; i++)
        if (roles[i] < 0 || roles[i] >= ROLE_NUMBER + MAX_SLOTS) return CORE_FALLBACK;
    wc_result *r = result_new(delim, decimal, ncols, roles);
    *out = r;
    if (!r) return CORE_NOMEM;
    r->skip_header = 1;
    return read_file(path, 0, r, &OPS);
}

/* Accessors for ctypes: counts, then copies into arrays Python allocated. */
int64_t wc_count(wc_result *r, int what) {
    switch (what) {
    case 0: return (int64_t)r->row_stack.n;
    case 1: return (int64_t)count(&r->stacks);
    case 2: return (int64_t)r->stacks.arena.n;
    case 3: return (int64_t)count(&r->processes);
    case 4: return (int64_t)r->processes.arena.n;
    }
    return -1;
}

/* which: 0 per-row stack ids, 1 per-row process ids, 2 + k the numbers of slot k */
void wc_column(wc_result *r, int which, void *dest) {
    if (which == 0) memcpy(dest, r->row_stack.p, r->row_stack.n * sizeof(int32_t));
    else if (which == 1) memcpy(dest, r->row_process.p, r->row_process.n * sizeof(int32_t));
    else memcpy(dest, r->numbers[which - 2].p, r->numbers[which - 2].n * sizeof(double));
}

/* which: 0 stacks, 1 processes */
void wc_table(wc_result *r, int which, char *arena, int64_t *offsets) {
    intern_t *t = which == 0 ? &r->stacks : &r->processes;
    memcpy(arena, t->arena.p, t->arena.n);
    memcpy(offsets, t->offsets.p, t->offsets.n * sizeof *offsets);
}

/* -- splitting the distinct Stack cells into frames (importers/wpa_csv._Splitter's rules) ---------- */
/* A '/' cuts the cell when what follows is a module name and '!' ([^/!\s<>()\[\]{},;]+!), or a frame WPA
 * writes without a module (Unknown, ?, n/a, [...]) up to the next '/' or the end.  Pieces are trimmed;
 * a leading [Root] is not a frame of the stack; a cell that is empty, [Root] or n/a is the one frame
 * n/a.  A piece is module!function split at its first '!' past its start.  Where Arrow's Unicode-aware
 * trimming could decide otherwise (a byte >= 0x80 or an odd control byte at a piece's end), or a cell
 * holds a NUL or \x01 (the Python splitter's markers), wc_split returns CORE_FALLBACK. */
static int module_byte(unsigned char c) {
    return !(c == '/' || c == '!' || c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == '<' ||
             c == '>' || c == '(' || c == ')' || c == '[' || c == ']' || c == '{' || c == '}' || c == ',' || c == ';');
}

static int cuts_here(const char *p, const char *e) {  /* p: just after a '/' */
    const char *q = p;
    while (q < e && module_byte((unsigned char)*q)) q++;
    if (q > p && q < e && *q == '!') return 1;
    size_t n = (size_t)(e - p);
    const char *t = NULL;
    if (n >= 7 && memcmp(p, "Unknown", 7) == 0) t = p + 7;
    else if (n >= 1 && *p == '?') t = p + 1;
    else if (n >= 3 && memcmp(p, "n/a", 3) == 0) t = p + 3;
    else if (n >= 1 && *p == '[') {
        q = p + 1;
        while (q < e && *q != ']' && *q != '/') q++;
        if (q < e && *q == ']') t = q + 1;
    }
    return t && (t == e || *t == '/');
}

static int trim_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }
static int unsure_end(unsigned char c) { return c >= 0x80 || (c < 0x20 && !trim_space(c)); }

/* Trim [*a, *b); CORE_FALLBACK when its ends are not plain ASCII. */
static int trim(const char **a, const char **b) {
    while (*a < *b && trim_space((unsigned char)**a)) (*a)++;
    while (*b > *a && trim_space((unsigned char)(*b)[-1])) (*b)--;
    if (*a < *b && (unsure_end((unsigned char)**a) || unsure_end((unsigned char)(*b)[-1]))) return CORE_FALLBACK;
    return CORE_OK;
}

static int add_frame(wc_result *r, bytes_t *key, const char *a, const char *b, int keep) {
    key->n = 0;
    const char *bang = a < b ? memchr(a + 1, '!', (size_t)(b - a - (a < b))) : NULL;  /* first '!' past the start */
    if (bang) {
        if (put_bytes(key, a, (size_t)(bang - a)) || put_bytes(key, "", 1)) return CORE_NOMEM;
        key->p[key->n - 1] = '\0';
        if (put_bytes(key, bang + 1, (size_t)(b - bang - 1))) return CORE_NOMEM;
    } else {
        if (put_bytes(key, "", 1) || put_bytes(key, a, (size_t)(b - a))) return CORE_NOMEM;
        key->p[0] = '\0';
    }
    int32_t id = intern(&r->frames, key->p, key->n);
    if (id < 0) return CORE_NOMEM;
    return keep && PUSH(r->stack_frames, id) ? CORE_NOMEM : CORE_OK;
}

static int split_cell(wc_result *r, const char *s, size_t n, bytes_t *text, bytes_t *key) {
    text->n = 0;  /* the cell unquoted, as native_wpa_csv._unquote does */
    if (n && *s == '"') {
        const char *e = s + (n >= 2 ? n - 1 : 1);
        for (const char *p = s + 1; p < e;) {  /* runs up to each quote, then one quote of a pair */
            const char *q = memchr(p, '"', (size_t)(e - p));
            if (!q) { if (put_bytes(text, p, (size_t)(e - p))) return CORE_NOMEM; break; }
            if (put_bytes(text, p, (size_t)(q - p + 1))) return CORE_NOMEM;
            p = q + 1 + (q + 1 < e && q[1] == '"');
        }
    } else if (put_bytes(text, s, n)) return CORE_NOMEM;
    const char *a = text->p, *e = text->p + text->n;
    if (text->n && (memchr(a, '\0', text->n) || memchr(a, '\1', text->n))) return CORE_FALLBACK;
    const char *ta = a, *tb = e;
    if (trim(&ta, &tb)) return CORE_FALLBACK;
    size_t tn = (size_t)(tb - ta);
    if (tn == 0 || (tn == 6 && memcmp(ta, "[Root]", 6) == 0) || (tn == 3 && memcmp(ta, "n/a", 3) == 0))
        return add_frame(r, key, "n/a", "n/a" + 3, 1);  /* no stack: the frame n/a */
    int first = 1;
    for (const char *p = a;;) {  /* p: the piece's start */
        const char *q = p;
        for (;;) {
            q = memchr(q, '/', (size_t)(e - q));
            if (!q || cuts_here(q + 1, e)) break;
            q++;
        }
        const char *end = q ? q : e, *pa = p, *pb = end;
        if (trim(&pa, &pb)) return CORE_FALLBACK;
        int root = first && pb - pa == 6 && memcmp(pa, "[Root]", 6) == 0;
        int st = add_frame(r, key, pa, pb, !root);
        if (st) return st;
        first = 0;
        if (!q) break;
        p = q + 1;
    }
    return CORE_OK;
}

/* Split every distinct Stack cell (in order of first appearance) into interned frames. */
int wc_split(wc_result *r) {
    bytes_t text = {0}, key = {0};
    int status = CORE_OK;
    if (intern_init(&r->frames) || PUSH(r->stack_at, 0)) return CORE_NOMEM;
    for (size_t i = 0; i < count(&r->stacks) && !status; i++) {
        int64_t x = r->stacks.offsets.p[i], y = r->stacks.offsets.p[i + 1];
        status = split_cell(r, r->stacks.arena.p + x, (size_t)(y - x), &text, &key);
        if (!status && PUSH(r->stack_at, (int64_t)r->stack_frames.n)) status = CORE_NOMEM;
    }
    free(text.p); free(key.p);
    return status;
}

/* After wc_split: 0 frames, 1 the frames' bytes, 2 stacks' frame ids in all. */
int64_t wc_split_count(wc_result *r, int what) {
    switch (what) {
    case 0: return (int64_t)count(&r->frames);
    case 1: return (int64_t)r->frames.arena.n;
    case 2: return (int64_t)r->stack_frames.n;
    }
    return -1;
}

/* The frames (arena, offsets) and the stacks (offsets into ids, ids). */
void wc_split_copy(wc_result *r, char *arena, int64_t *frame_at, int64_t *stack_at, int32_t *ids) {
    memcpy(arena, r->frames.arena.p, r->frames.arena.n);
    memcpy(frame_at, r->frames.offsets.p, r->frames.offsets.n * sizeof *frame_at);
    memcpy(stack_at, r->stack_at.p, r->stack_at.n * sizeof *stack_at);
    memcpy(ids, r->stack_frames.p, r->stack_frames.n * sizeof *ids);
}

void wc_free(wc_result *r) {
    if (!r) return;
    if (r->frames.slots) intern_free(&r->frames);
    free(r->stack_at.p); free(r->stack_frames.p);
    intern_free(&r->stacks); intern_free(&r->processes);
    free(r->row_stack.p); free(r->row_process.p);
    for (int k = 0; k < MAX_SLOTS; k++) free(r->numbers[k].p);
    free(r);
}
