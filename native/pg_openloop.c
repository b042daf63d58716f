/* pg_openloop: the sessions driver's open-loop window, in C, on connections Python has already opened.
 *
 * Why: in Python the driver spent 54 us of client CPU per call against pgbench's 32 us (bench-driver, open loop
 * at 90% of pgbench's rate), and on a 2-CPU machine that CPU is taken from the server, so the driver's p99 was
 * several times pgbench -R's at the same schedule.  This program does what pgbench -R does in its threads and
 * nothing more: take the next scheduled start when a session is free, send the call at that time, read its result,
 * record (scheduled start, send, end).  No libpq: Python connects, authenticates, runs each session's setup and
 * prepares the statement (harness/native_window.py); this program inherits the sockets and speaks the PostgreSQL
 * frontend/backend protocol version 3.0's extended query messages on them (Bind, Execute, Sync; answered by
 * BindComplete, DataRow, CommandComplete, ErrorResponse, ReadyForQuery:
 * https://www.postgresql.org/docs/15/protocol-message-formats.html).  When it ends every connection it did not
 * lose is idle again (ReadyForQuery seen), and Python takes it back.
 *
 *   pg_openloop SPEC OUT
 *
 * SPEC (little-endian, written by Python):
 *   "OLSPEC1\0" int32 sessions, threads, max_retries, max_errors, ops_cap (-1: none), poisson (0/1)
 *   double rate (calls/s over all sessions), duration_s; uint64 seed
 *   int32 n_retry, then n_retry 5-byte codes; int32 n_refused, then n_refused 5-byte codes
 *   per session: int32 fd, int32 name_len, name bytes, int32 nparams, int32 nsets, int32 constant (1: the one
 *                set is every call's values; 0: call k takes set k, and the session ends after the last),
 *                int32 exhausted_is_done (1: Python's values ended with SessionDone), then nsets x nparams
 *                values, each int32 len (-1: NULL) and its text bytes
 * OUT: "OLOUT001", int64 window start ns (CLOCK_MONOTONIC, Python's perf_counter clock), int64 end ns,
 *      int64 record count, then records (struct rec below), then per session int32 length and the server's
 *      message for its first error (length 0: none).
 * stdout: one line "pg_openloop: calls=N errors=E retries=R lost=L cpu_us_per_call=X".
 */
#include "common.h"

#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/socket.h>

enum { REC_OK = 0, REC_ERROR = 1, REC_RETRY = 2, REC_LOST = 3, REC_OUT_OF_VALUES = 4 };

struct rec {          /* 48 bytes; harness/native_window.py reads it with the same layout */
    int64_t origin;   /* scheduled start (ns) */
    int64_t start;    /* this try's send (ns) */
    int64_t end;      /* result (ns) */
    int32_t session, op, kind, pad;
    char code[8];     /* SQLSTATE of an error, NUL-padded */
};

struct session {
    int i, fd, fd_flags;
    char *msg;         /* Bind+Execute+Sync of the current call */
    size_t msg_len, msg_cap;
    const char *name;  /* prepared statement */
    int nparams, nsets, constant, exhausted_is_done;
    const uint8_t **sets; /* nsets x nparams pointers to (int32 len, bytes) */
    int busy, done, lost, tries, op, errors;
    int64_t origin, start;
    char err[8];       /* SQLSTATE of the current call's ErrorResponse */
    int fatal;
    char first_message[256]; /* the server's words for this session's first error (for the run's error samples) */
    uint8_t *in;       /* bytes read, not yet parsed */
    size_t in_len, in_cap;
};

struct thread_ctx {
    struct session **s;
    int n;
    double gap_ns;
    int64_t next;      /* this thread's next scheduled start (pgbench -R keeps one schedule per thread) */
    uint64_t rng;
    struct rec *recs;
    size_t nrecs, cap;
    pthread_t tid;
} CB_ALIGNED;

static int g_poisson, g_max_retries, g_max_errors, g_ops_cap;
static int64_t g_start, g_end;
static char (*g_retry)[6], (*g_refused)[6];
static int g_nretry, g_nrefused;
static atomic_int g_stop;

static void die(const char *msg) { cb_die("pg_openloop", msg); }

static int in_list(const char *code, char (*list)[6], int n) {
    for (int k = 0; k < n; k++)
        if (memcmp(code, list[k], 5) == 0) return 1;
    return 0;
}

static double uniform(uint64_t *x) { /* xorshift64*: (0, 1) */
    *x ^= *x >> 12; *x ^= *x << 25; *x ^= *x >> 27;
    return ((*x * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0) + 1e-300;
}

static void put32(char *p, int32_t v) { uint32_t u = (uint32_t)v; p[0] = (char)(u >> 24); p[1] = (char)(u >> 16); p[2] = (char)(u >> 8); p[3] = (char)u; }
static void put16(char *p, int16_t v) { uint16_t u = (uint16_t)v; p[0] = (char)(u >> 8); p[1] = (char)u; }
static int32_t get32(const uint8_t *p) { return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]); }
static int32_t rd32le(const uint8_t *p) { int32_t v; memcpy(&v, p, 4); return v; }

static void need(struct session *s, size_t more) {
    if (s->msg_len + more <= s->msg_cap) return;
    while (s->msg_len + more > s->msg_cap) s->msg_cap = s->msg_cap ? s->msg_cap * 2 : 256;
    s->msg = realloc(s->msg, s->msg_cap);
    if (!s->msg) die("out of memory");
}

/* Bind (unnamed portal, the session's prepared statement, text values), Execute, Sync. */
static void build(struct session *s, int set) {
    size_t name_len = strlen(s->name);
    s->msg_len = 0;
    size_t body = 4 + 1 + name_len + 1 + 2 + 2 + 2;
    const uint8_t **vals = s->sets + (size_t)set * s->nparams;
    for (int k = 0; k < s->nparams; k++) {
        int32_t len = rd32le(vals[k]);
        body += 4 + (len > 0 ? (size_t)len : 0);
    }
    need(s, 1 + body + 10 + 5);
    char *p = s->msg;
    *p++ = 'B'; put32(p, (int32_t)body); p += 4;
    *p++ = 0;
    memcpy(p, s->name, name_len + 1); p += name_len + 1;
    put16(p, 0); p += 2;                       /* every parameter in text format */
    put16(p, (int16_t)s->nparams); p += 2;
    for (int k = 0; k < s->nparams; k++) {
        int32_t len = rd32le(vals[k]);
        put32(p, len); p += 4;
        if (len > 0) { memcpy(p, vals[k] + 4, (size_t)len); p += len; }
    }
    put16(p, 0); p += 2;                       /* results in text format */
    *p++ = 'E'; put32(p, 9); p += 4; *p++ = 0; put32(p, 0); p += 4;
    *p++ = 'S'; put32(p, 4); p += 4;
    s->msg_len = (size_t)(p - s->msg);
}

static void record(struct thread_ctx *t, struct session *s, int kind, int64_t end) {
    if (t->nrecs == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 4096;
        t->recs = realloc(t->recs, t->cap * sizeof *t->recs);
        if (!t->recs) die("out of memory");
    }
    struct rec *r = &t->recs[t->nrecs++];
    memset(r, 0, sizeof *r);
    r->origin = s->origin; r->start = s->start; r->end = end;
    r->session = s->i; r->op = s->op; r->kind = kind;
    if (kind != REC_OK) memcpy(r->code, s->err, 5);
}

static void lose(struct thread_ctx *t, struct session *s, int64_t now) {
    if (!s->err[0] || !s->fatal) memcpy(s->err, "08006", 6); /* the server's FATAL (e.g. 57P01) if it sent one */
    s->busy = 0; s->done = 1; s->lost = 1;
    record(t, s, REC_LOST, now);
}

static void send_call(struct thread_ctx *t, struct session *s, int64_t now) {
    s->start = now;
    s->err[0] = 0; s->fatal = 0;
    size_t off = 0;
    while (off < s->msg_len) {
        ssize_t w = send(s->fd, s->msg + off, s->msg_len - off, MSG_NOSIGNAL);
        if (w > 0) { off += (size_t)w; continue; }
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd p = {.fd = s->fd, .events = POLLOUT};
            poll(&p, 1, 100);
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        lose(t, s, cb_now_ns());
        return;
    }
    s->busy = 1;
}

/* The session is free: end it, or take its next scheduled start and send when that comes. */
static void next_call(struct thread_ctx *t, struct session *s) {
    s->tries = 0;
    if (atomic_load(&g_stop) || (g_ops_cap >= 0 && s->op >= g_ops_cap)) { s->done = 1; return; }
    if (!s->constant && s->op >= s->nsets) {
        s->done = 1;
        if (!s->exhausted_is_done) { s->origin = s->start = 0; record(t, s, REC_OUT_OF_VALUES, cb_now_ns()); }
        return;
    }
    if (t->next >= g_end) { s->done = 1; return; }
    s->origin = t->next;
    t->next += (int64_t)(g_poisson ? -log(uniform(&t->rng)) * t->gap_ns : t->gap_ns);
    if (!s->constant || !s->msg_len) build(s, s->constant ? 0 : s->op);
}

static void call_ended(struct thread_ctx *t, struct session *s, int64_t end) {
    s->busy = 0;
    if (!s->err[0]) {
        record(t, s, REC_OK, end);
        s->op++;
        next_call(t, s);
        return;
    }
    if (in_list(s->err, g_retry, g_nretry) && s->tries < g_max_retries && !atomic_load(&g_stop)) {
        s->tries++;
        record(t, s, REC_RETRY, end);
        send_call(t, s, end);
        return;
    }
    record(t, s, REC_ERROR, end);
    s->op++;
    if (in_list(s->err, g_refused, g_nrefused)) atomic_store(&g_stop, 1); /* no retry can change it: all stop */
    if (++s->errors >= g_max_errors) { s->done = 1; return; }  /* as the Python loop: "stopped after N errors" */
    next_call(t, s);
}

/* Parse what the server sent; returns 1 when the call's ReadyForQuery has come. */
static int parse(struct session *s) {
    size_t pos = 0;
    int ready = 0;
    while (s->in_len - pos >= 5) {
        uint8_t type = s->in[pos];
        int32_t len = get32(s->in + pos + 1);
        if (len < 4) die("the server sent a message with a length below 4: the protocol is out of step");
        if (s->in_len - pos < (size_t)len + 1) break;
        const uint8_t *body = s->in + pos + 5;
        size_t blen = (size_t)len - 4;
        if (type == 'E') {  /* fields: a type byte, a NUL-terminated string; 0 ends them */
            size_t k = 0;
            while (k < blen && body[k]) {
                uint8_t f = body[k++];
                const char *v = (const char *)body + k;
                size_t vl = strnlen(v, blen - k);
                if (f == 'C' && vl == 5) { memcpy(s->err, v, 5); s->err[5] = 0; }
                if (f == 'M' && !s->first_message[0])
                    snprintf(s->first_message, sizeof s->first_message, "%.*s", (int)vl, v);
                if (f == 'V' && (strncmp(v, "FATAL", vl) == 0 || strncmp(v, "PANIC", vl) == 0)) s->fatal = 1;
                k += vl + 1;
            }
            if (!s->err[0]) memcpy(s->err, "XX000", 6);
        } else if (type == 'Z') {
            ready = 1;
            pos += (size_t)len + 1;
            break;
        }
        pos += (size_t)len + 1;
    }
    memmove(s->in, s->in + pos, s->in_len - pos);
    s->in_len -= pos;
    return ready;
}

static void readable(struct thread_ctx *t, struct session *s) {
    for (;;) {
        if (s->in_cap - s->in_len < 4096) {
            s->in_cap = s->in_cap ? s->in_cap * 2 : 16384;
            s->in = realloc(s->in, s->in_cap);
            if (!s->in) die("out of memory");
        }
        size_t room = s->in_cap - s->in_len;
        ssize_t r = recv(s->fd, s->in + s->in_len, room, 0);
        if (r > 0) {
            s->in_len += (size_t)r;
            if ((size_t)r < room) break;  /* a short read: nothing more waiting now */
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        parse(s);  /* the FATAL that said why, if it came before the close */
        lose(t, s, cb_now_ns());
        return;
    }
    if (parse(s)) call_ended(t, s, cb_now_ns());
}

static void *serve(void *arg) {
    struct thread_ctx *t = arg;
    struct pollfd *fds = calloc((size_t)t->n, sizeof *fds);
    struct session **who = calloc((size_t)t->n, sizeof *who);
    if (!fds || !who) die("out of memory");
    for (int k = 0; k < t->n; k++) next_call(t, t->s[k]);
    for (;;) {
        int64_t now = cb_now_ns();
        int64_t wait = 50 * 1000000ll;  /* at least every 50 ms: a refused statement elsewhere stops this thread */
        int nf = 0, live = 0;
        for (int k = 0; k < t->n; k++) {
            struct session *s = t->s[k];
            if (s->done) continue;
            live++;
            if (!s->busy) {
                if (atomic_load(&g_stop)) { s->done = 1; live--; continue; }
                if (s->origin <= now) send_call(t, s, now);
                else if (s->origin - now < wait) wait = s->origin - now;
            }
            if (s->busy) { fds[nf] = (struct pollfd){.fd = s->fd, .events = POLLIN}; who[nf++] = s; }
        }
        if (!live) break;
        if (!nf) {
            struct timespec ts = {.tv_sec = wait / 1000000000ll, .tv_nsec = wait % 1000000000ll};
            clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
            continue;
        }
        struct timespec ts = {.tv_sec = wait / 1000000000ll, .tv_nsec = wait % 1000000000ll};
        int n = ppoll(fds, (nfds_t)nf, &ts, NULL);
        if (n < 0 && errno != EINTR) die("ppoll failed");
        for (int k = 0; k < nf && n > 0; k++) {
            if (fds[k].revents) readable(t, who[k]);
        }
    }
    free(fds); free(who);
    return NULL;
}

static const uint8_t *g_spec;
static size_t g_spec_len, g_pos;

static const uint8_t *take(size_t n) {
    if (g_spec_len - g_pos < n) die("the spec file ends early: it was not written by harness/native_window.py");
    const uint8_t *p = g_spec + g_pos;
    g_pos += n;
    return p;
}
static int32_t take32(void) { return rd32le(take(4)); }

int main(int argc, char **argv) {
    if (argc != 3) die("usage: pg_openloop SPEC OUT");
    FILE *f = fopen(argv[1], "rb");
    if (!f) die("cannot open the spec file");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *spec = malloc((size_t)size + 1);
    if (!spec || fread(spec, 1, (size_t)size, f) != (size_t)size) die("cannot read the spec file");
    fclose(f);
    g_spec = spec; g_spec_len = (size_t)size;
    if (memcmp(take(8), "OLSPEC1", 8) != 0) die("the spec file does not start with OLSPEC1");
    int sessions = take32(), threads = take32();
    g_max_retries = take32(); g_max_errors = take32(); g_ops_cap = take32(); g_poisson = take32();
    double rate, duration;
    uint64_t seed;
    memcpy(&rate, take(8), 8); memcpy(&duration, take(8), 8); memcpy(&seed, take(8), 8);
    if (sessions < 1 || threads < 1 || threads > sessions || !(rate > 0) || !(duration > 0))
        die("the spec's sessions, threads, rate or duration is out of range");
    g_nretry = take32();
    g_retry = calloc((size_t)g_nretry + 1, 6);
    for (int k = 0; k < g_nretry; k++) memcpy(g_retry[k], take(5), 5);
    g_nrefused = take32();
    g_refused = calloc((size_t)g_nrefused + 1, 6);
    for (int k = 0; k < g_nrefused; k++) memcpy(g_refused[k], take(5), 5);
    struct session *all = calloc((size_t)sessions, sizeof *all);
    if (!all) die("out of memory");
    for (int i = 0; i < sessions; i++) {
        struct session *s = &all[i];
        s->i = i;
        s->fd = take32();
        int32_t nl = take32();
        char *name = calloc((size_t)nl + 1, 1);
        memcpy(name, take((size_t)nl), (size_t)nl);
        s->name = name;
        s->nparams = take32(); s->nsets = take32(); s->constant = take32(); s->exhausted_is_done = take32();
        if (s->nparams < 0 || s->nsets < 0 || (s->constant && s->nsets != 1))
            die("the spec's parameters or value sets are out of range");
        s->sets = calloc((size_t)s->nsets * (size_t)s->nparams + 1, sizeof *s->sets);
        for (size_t k = 0; k < (size_t)s->nsets * (size_t)s->nparams; k++) {
            const uint8_t *v = take(4);
            int32_t len = rd32le(v);
            if (len > 0) take((size_t)len);
            s->sets[k] = v;
        }
        s->fd_flags = fcntl(s->fd, F_GETFL);
        if (s->fd_flags < 0) die("a session's socket is not open in this process (was it passed with pass_fds?)");
        fcntl(s->fd, F_SETFL, s->fd_flags | O_NONBLOCK);
    }
    struct thread_ctx *ts = calloc((size_t)threads, sizeof *ts);
    for (int k = 0; k < threads; k++) {
        ts[k].s = calloc((size_t)sessions, sizeof *ts[k].s);
        ts[k].gap_ns = 1e9 * threads / rate;
        ts[k].rng = seed * 0x9E3779B97F4A7C15ull + (uint64_t)k + 1;
    }
    for (int i = 0; i < sessions; i++) { struct thread_ctx *t = &ts[i % threads]; t->s[t->n++] = &all[i]; }
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    g_start = cb_now_ns();
    g_end = g_start + (int64_t)(duration * 1e9);
    for (int k = 0; k < threads; k++) {
        ts[k].next = g_start + (int64_t)(k * 1e9 / rate);  /* fixed gaps: the threads' schedules interleave evenly */
        if (pthread_create(&ts[k].tid, NULL, serve, &ts[k]) != 0) die("cannot start a thread");
    }
    for (int k = 0; k < threads; k++) pthread_join(ts[k].tid, NULL);
    int64_t stop = cb_now_ns();
    getrusage(RUSAGE_SELF, &ru1);
    for (int i = 0; i < sessions; i++) fcntl(all[i].fd, F_SETFL, all[i].fd_flags);
    FILE *out = fopen(argv[2], "wb");
    if (!out) die("cannot write the output file");
    int64_t total = 0, calls = 0, errs = 0, retries = 0, lost = 0;
    for (int k = 0; k < threads; k++) total += (int64_t)ts[k].nrecs;
    fwrite("OLOUT001", 1, 8, out);
    fwrite(&g_start, 8, 1, out); fwrite(&stop, 8, 1, out); fwrite(&total, 8, 1, out);
    for (int k = 0; k < threads; k++) {
        if (ts[k].nrecs && fwrite(ts[k].recs, sizeof(struct rec), ts[k].nrecs, out) != ts[k].nrecs)
            die("cannot write the output file");
        for (size_t r = 0; r < ts[k].nrecs; r++) {
            int kind = ts[k].recs[r].kind;
            calls += kind == REC_OK; errs += kind == REC_ERROR || kind == REC_LOST;
            retries += kind == REC_RETRY; lost += kind == REC_LOST;
        }
    }
    for (int i = 0; i < sessions; i++) {
        int32_t len = (int32_t)strlen(all[i].first_message);
        fwrite(&len, 4, 1, out);
        fwrite(all[i].first_message, 1, (size_t)len, out);
    }
    if (fclose(out) != 0) die("cannot write the output file");
    double cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec + ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) * 1e6 +
                 (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec + ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec);
    printf("pg_openloop: calls=%lld errors=%lld retries=%lld lost=%lld cpu_us_per_call=%.2f\n", (long long)calls,
           (long long)errs, (long long)retries, (long long)lost, calls + errs ? cpu / (double)(calls + errs) : 0.0);
    return 0;
}
