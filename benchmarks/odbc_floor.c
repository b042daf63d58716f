/* The ODBC floor: the fastest any client on psqlODBC can go.
 *
 * N threads, one ODBC connection each (autocommit), run one prepared
 * statement with a bound parameter in a tight loop for a fixed time; no
 * Python anywhere.  bench_driver.py compares it with pgbench: if this loop is
 * already slower, the ODBC driver itself is the cost, not the Python above it.
 *
 *   odbc_floor SECONDS SESSIONS "SQL with one ? (a text parameter)" [SETUP_SQL]
 *
 * The connection string comes from the environment variable ODBC_FLOOR_CONN
 * (never argv: it holds a password).  Output, one line:
 *   calls=N seconds=S cpu_us_per_call=U errors=E
 * cpu_us_per_call is this process's user+system CPU per call (getrusage).
 */
#include <pthread.h>
#include <sql.h>
#include <sqlext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static const char *conn_str, *sql, *setup_sql;
static double seconds;
static pthread_barrier_t ready;
static volatile int stop_flag;

struct worker { long calls, errors; int failed; };

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void report(SQLSMALLINT type, SQLHANDLE h, const char *what) {
    SQLCHAR state[6], msg[512];
    SQLINTEGER native;
    SQLSMALLINT len;
    if (SQLGetDiagRec(type, h, 1, state, &native, msg, sizeof msg, &len) == SQL_SUCCESS)
        fprintf(stderr, "odbc_floor: %s: [%s] %s\n", what, state, msg);
    else
        fprintf(stderr, "odbc_floor: %s failed\n", what);
}

static void *run(void *arg) {
    struct worker *w = arg;
    SQLHENV env = SQL_NULL_HENV;
    SQLHDBC dbc = SQL_NULL_HDBC;
    SQLHSTMT st = SQL_NULL_HSTMT;
    char payload[64] = "odbc floor";
    SQLLEN ind = SQL_NTS;
    SQLAllocHandle(SQL_HANDLE_ENV, SQL_NULL_HANDLE, &env);
    SQLSetEnvAttr(env, SQL_ATTR_ODBC_VERSION, (SQLPOINTER)SQL_OV_ODBC3, 0);
    SQLAllocHandle(SQL_HANDLE_DBC, env, &dbc);
    if (!SQL_SUCCEEDED(SQLDriverConnect(dbc, NULL, (SQLCHAR *)conn_str, SQL_NTS, NULL, 0, NULL,
                                        SQL_DRIVER_NOPROMPT))) {
        report(SQL_HANDLE_DBC, dbc, "connect");
        w->failed = 1;
    } else {
        SQLSetConnectAttr(dbc, SQL_ATTR_AUTOCOMMIT, (SQLPOINTER)SQL_AUTOCOMMIT_ON, 0);
        SQLAllocHandle(SQL_HANDLE_STMT, dbc, &st);
        if (setup_sql && !SQL_SUCCEEDED(SQLExecDirect(st, (SQLCHAR *)setup_sql, SQL_NTS))) {
            report(SQL_HANDLE_STMT, st, "setup");
            w->failed = 1;
        }
        SQLFreeStmt(st, SQL_CLOSE);
        if (!w->failed && (!SQL_SUCCEEDED(SQLPrepare(st, (SQLCHAR *)sql, SQL_NTS)) ||
                           !SQL_SUCCEEDED(SQLBindParameter(st, 1, SQL_PARAM_INPUT, SQL_C_CHAR, SQL_VARCHAR,
                                                           sizeof payload, 0, payload, sizeof payload, &ind)))) {
            report(SQL_HANDLE_STMT, st, "prepare");
            w->failed = 1;
        }
        for (int i = 0; i < 20 && !w->failed; i++) /* warm-up, as the Python driver's */
            SQLExecute(st);
    }
    pthread_barrier_wait(&ready);
    pthread_barrier_wait(&ready);
    while (!w->failed && !stop_flag) {
        if (SQL_SUCCEEDED(SQLExecute(st))) {
            w->calls++;
        } else if (++w->errors == 1) {
            report(SQL_HANDLE_STMT, st, "execute");
        }
    }
    pthread_barrier_wait(&ready);
    if (st) SQLFreeHandle(SQL_HANDLE_STMT, st);
    SQLDisconnect(dbc);
    SQLFreeHandle(SQL_HANDLE_DBC, dbc);
    SQLFreeHandle(SQL_HANDLE_ENV, env);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: odbc_floor SECONDS SESSIONS SQL [SETUP_SQL] (connection string in ODBC_FLOOR_CONN)\n");
        return 2;
    }
    seconds = atof(argv[1]);
    int n = atoi(argv[2]);
    sql = argv[3];
    setup_sql = argc > 4 ? argv[4] : NULL;
    conn_str = getenv("ODBC_FLOOR_CONN");
    if (!conn_str || seconds <= 0 || n < 1) {
        fprintf(stderr, "odbc_floor: expected SECONDS > 0, SESSIONS >= 1 and ODBC_FLOOR_CONN set\n");
        return 2;
    }
    pthread_t *t = calloc(n, sizeof *t);
    struct worker *w = calloc(n, sizeof *w);
    pthread_barrier_init(&ready, NULL, n + 1);
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, run, &w[i]);
    pthread_barrier_wait(&ready); /* everyone connected, prepared and warmed up */
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    double t0 = now_s();
    pthread_barrier_wait(&ready); /* go */
    struct timespec nap = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    nanosleep(&nap, NULL);
    stop_flag = 1;
    pthread_barrier_wait(&ready); /* every loop has stopped */
    double elapsed = now_s() - t0;
    getrusage(RUSAGE_SELF, &r1);
    long calls = 0, errors = 0;
    int failed = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        calls += w[i].calls;
        errors += w[i].errors;
        failed |= w[i].failed;
    }
    double cpu = (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) + (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) / 1e6 +
                 (r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) + (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
    printf("calls=%ld seconds=%.4f cpu_us_per_call=%.2f errors=%ld\n", calls, elapsed,
           calls ? cpu / calls * 1e6 : 0.0, errors);
    return failed ? 1 : 0;
}
