/*
 * pg.c - PostgreSQL connections through libpq loaded at run time (see pgint.h).
 *
 * libpq is opened with dlopen("libpq.so.5") the first time a connection is
 * made; its headers are only needed to build. Queries are sent
 * asynchronously and waited for with poll(), so a server that stops
 * answering costs at most the query's deadline, never a hung search.
 */
#include "store/postgres/pgint.h"

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "mnemo.h"
#include "util/dl.h"
#include "util/hash.h"
#include "util/time.h"

/* ----------------------------------------------------------------------
 * Loading libpq
 * -------------------------------------------------------------------- */

typedef struct pq_api {
    PGconn *(*connectdb_params)(const char *const *keys, const char *const *values, int expand);
    ConnStatusType (*status)(const PGconn *c);
    char *(*error_message)(const PGconn *c);
    void (*finish)(PGconn *c);
    char *(*pass)(const PGconn *c);
    PQnoticeProcessor (*set_notice_processor)(PGconn *c, PQnoticeProcessor fn, void *arg);
    PGresult *(*exec)(PGconn *c, const char *sql);
    int (*send_query_params)(PGconn *c, const char *sql, int n, const Oid *types,
                             const char *const *values, const int *lens, const int *formats,
                             int result_format);
    int (*send_prepare)(PGconn *c, const char *name, const char *sql, int n, const Oid *types);
    int (*send_query_prepared)(PGconn *c, const char *name, int n, const char *const *values,
                               const int *lens, const int *formats, int result_format);
    int (*consume_input)(PGconn *c);
    int (*is_busy)(PGconn *c);
    PGresult *(*get_result)(PGconn *c);
    int (*socket)(const PGconn *c);
    PGcancel *(*get_cancel)(PGconn *c);
    int (*cancel)(PGcancel *cn, char *errbuf, int errbufsize);
    void (*free_cancel)(PGcancel *cn);
    ExecStatusType (*result_status)(const PGresult *r);
    char *(*result_error_message)(const PGresult *r);
    char *(*result_error_field)(const PGresult *r, int code);
    PGTransactionStatusType (*transaction_status)(const PGconn *c);
    int (*ntuples)(const PGresult *r);
    int (*nfields)(const PGresult *r);
    char *(*getvalue)(const PGresult *r, int row, int col);
    int (*getisnull)(const PGresult *r, int row, int col);
    void (*clear)(PGresult *r);
} pq_api;

static pq_api pq;
static char load_error[256];
static int loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
    static const char *const names[] = {"libpq.so.5", "libpq.so"};
    static const dl_sym syms[] = {
#define SYM(field, name) {name, offsetof(pq_api, field)}
        SYM(connectdb_params, "PQconnectdbParams"),
        SYM(status, "PQstatus"),
        SYM(error_message, "PQerrorMessage"),
        SYM(finish, "PQfinish"),
        SYM(pass, "PQpass"),
        SYM(set_notice_processor, "PQsetNoticeProcessor"),
        SYM(exec, "PQexec"),
        SYM(send_query_params, "PQsendQueryParams"),
        SYM(send_prepare, "PQsendPrepare"),
        SYM(send_query_prepared, "PQsendQueryPrepared"),
        SYM(consume_input, "PQconsumeInput"),
        SYM(is_busy, "PQisBusy"),
        SYM(get_result, "PQgetResult"),
        SYM(socket, "PQsocket"),
        SYM(get_cancel, "PQgetCancel"),
        SYM(cancel, "PQcancel"),
        SYM(free_cancel, "PQfreeCancel"),
        SYM(result_status, "PQresultStatus"),
        SYM(result_error_message, "PQresultErrorMessage"),
        SYM(result_error_field, "PQresultErrorField"),
        SYM(transaction_status, "PQtransactionStatus"),
        SYM(ntuples, "PQntuples"),
        SYM(nfields, "PQnfields"),
        SYM(getvalue, "PQgetvalue"),
        SYM(getisnull, "PQgetisnull"),
        SYM(clear, "PQclear"),
#undef SYM
    };
    if (!dl_load(names, sizeof names / sizeof *names, syms, sizeof syms / sizeof *syms, &pq,
                 "libpq",
                 "PostgreSQL needs libpq (libpq.so.5, Debian: apt-get install libpq5), "
                 "which could not be loaded",
                 "", load_error, sizeof load_error))
        return;
    loaded = 1;
}

/* ----------------------------------------------------------------------
 * Identifiers
 * -------------------------------------------------------------------- */

void pg_quote_ident(buf *b, const char *name)
{
    /* Validated names hold no quotes; doubling them anyway keeps this safe
     * on its own. */
    buf_putc(b, '"');
    for (const char *p = name; *p; p++) {
        if (*p == '.') {
            buf_puts(b, "\".\"");
            continue;
        }
        if (*p == '"')
            buf_putc(b, '"');
        buf_putc(b, *p);
    }
    buf_putc(b, '"');
}

/* ----------------------------------------------------------------------
 * The env file
 * -------------------------------------------------------------------- */

#define ENVFILE_MAX (1 << 20)

int pg_envfile_parse(const char *path, void (*fn)(void *ud, const char *key, const char *value),
                     void *ud, buf *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        buf_printf(err, "pgEnvFile %s: %s", path, strerror(errno));
        return MNEMO_IO;
    }
    char *line = NULL;
    size_t cap = 0, total = 0;
    ssize_t len;
    int rc = MNEMO_OK, lineno = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        total += (size_t)len;
        if (total > ENVFILE_MAX) {
            buf_printf(err, "pgEnvFile %s: larger than 1 MiB", path);
            rc = MNEMO_INVALID;
            break;
        }
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = 0;
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p || *p == '#')
            continue;
        if (strncmp(p, "export", 6) == 0 && (p[6] == ' ' || p[6] == '\t')) {
            p += 6;
            while (*p == ' ' || *p == '\t')
                p++;
        }
        char *eq = strchr(p, '=');
        char *k_end = eq;
        while (k_end && k_end > p && (k_end[-1] == ' ' || k_end[-1] == '\t'))
            k_end--;
        int key_ok = eq && k_end > p;
        for (char *q = p; key_ok && q < k_end; q++)
            if (!(isalnum((unsigned char)*q) || *q == '_'))
                key_ok = 0;
        if (!key_ok) {
            /* The line may hold a secret: name it by number only. */
            buf_printf(err, "pgEnvFile %s:%d: expected KEY=VALUE", path, lineno);
            rc = MNEMO_INVALID;
            break;
        }
        *k_end = 0;
        char *v = eq + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        size_t vl = strlen(v);
        if (vl >= 2 && (v[0] == '"' || v[0] == '\'') && v[vl - 1] == v[0]) {
            v[vl - 1] = 0;
            v++;
        } else {
            /* Unquoted: a " #" starts a comment; trailing blanks go. */
            char *hash = strstr(v, " #");
            if (hash)
                *hash = 0;
            vl = strlen(v);
            while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
                v[--vl] = 0;
        }
        fn(ud, p, v);
    }
    free(line);
    fclose(f);
    return rc;
}

/* ----------------------------------------------------------------------
 * Connections
 * -------------------------------------------------------------------- */

#define MAX_PREPARED 16

struct pg_conn {
    PGconn *c;
    char sqlstate[6]; /* of the last failed query, "" when none */
    const char *prepared[MAX_PREPARED]; /* pg_query_prepared's statements, by address */
    int nprepared;
    const char *seen[MAX_PREPARED]; /* run once, unprepared */
    int nseen;
    int inflight; /* pg_send's statement awaits pg_collect */
};

struct pg_rows {
    PGresult *r;
};

/* Env file variables and the conninfo keywords they stand for. */
static const char *const env_map[][2] = {
    {"PGHOST", "host"},
    {"PGHOSTADDR", "hostaddr"},
    {"PGPORT", "port"},
    {"PGUSER", "user"},
    {"PGPASSWORD", "password"},
    {"PGDATABASE", "dbname"},
    {"PGSERVICE", "service"},
    {"PGSSLMODE", "sslmode"},
    {"PGCONNECT_TIMEOUT", "connect_timeout"},
    {"PGAPPNAME", "application_name"},
    {"PGPASSFILE", "passfile"},
};
#define NMAP (sizeof env_map / sizeof *env_map)

typedef struct envvals {
    char *v[NMAP];
    char *database_url;
    int nomem;
} envvals;

static void on_env(void *ud, const char *key, const char *value)
{
    envvals *e = ud;
    char **slot = NULL;
    if (strcmp(key, "DATABASE_URL") == 0)
        slot = &e->database_url;
    for (size_t i = 0; !slot && i < NMAP; i++)
        if (strcmp(key, env_map[i][0]) == 0)
            slot = &e->v[i];
    if (!slot)
        return;
    free(*slot);
    *slot = strdup(value);
    if (!*slot)
        e->nomem = 1;
}

static void notice_ignore(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

int pg_connect(const pg_target *t, int statement_timeout_ms, pg_conn **out, buf *err)
{
    *out = NULL;
    pthread_once(&once, load);
    if (!loaded) {
        buf_puts(err, load_error);
        return MNEMO_UNAVAILABLE;
    }
    envvals ev;
    memset(&ev, 0, sizeof ev);
    int rc = MNEMO_OK;
    if (t->env_file && *t->env_file) {
        rc = pg_envfile_parse(t->env_file, on_env, &ev, err);
        if (!rc && ev.nomem)
            rc = MNEMO_NOMEM;
        if (rc)
            goto done;
    }
    /* Later entries win; the DSN (expanded from dbname) is last but one. */
    const char *keys[NMAP + 5], *vals[NMAP + 5];
    int n = 0;
    char timeout[16];
    const char *env_timeout = getenv("PGCONNECT_TIMEOUT");
    if (!env_timeout || !*env_timeout) {
        snprintf(timeout, sizeof timeout, "%d",
                 t->connect_timeout_s > 0 ? t->connect_timeout_s : 3);
        keys[n] = "connect_timeout";
        vals[n++] = timeout;
    }
    for (size_t i = 0; i < NMAP; i++) {
        if (ev.v[i]) {
            keys[n] = env_map[i][1];
            vals[n++] = ev.v[i];
        }
    }
    const char *dsn = t->dsn && *t->dsn ? t->dsn : ev.database_url;
    if (dsn && *dsn) {
        keys[n] = "dbname";
        vals[n++] = dsn;
    }
    keys[n] = "fallback_application_name";
    vals[n++] = "mnemo";
    keys[n] = NULL;
    vals[n] = NULL;
    PGconn *c = pq.connectdb_params(keys, vals, 1);
    if (!c) {
        rc = MNEMO_NOMEM;
        goto done;
    }
    pq.set_notice_processor(c, notice_ignore, NULL);
    if (pq.status(c) != CONNECTION_OK) {
        buf raw;
        buf_init(&raw, 0);
        buf_puts(&raw, "cannot connect to PostgreSQL: ");
        buf_puts(&raw, pq.error_message(c));
        while (raw.len && (raw.data[raw.len - 1] == '\n' || raw.data[raw.len - 1] == ' '))
            raw.data[--raw.len] = 0;
        dsn_redact(err, raw.data, pq.pass(c));
        buf_cleanup(&raw);
        pq.finish(c);
        rc = MNEMO_UNAVAILABLE;
        goto done;
    }
    pg_conn *pc = calloc(1, sizeof *pc);
    if (!pc) {
        pq.finish(c);
        rc = MNEMO_NOMEM;
        goto done;
    }
    pc->c = c;
    /* Read-only on the server's side too unless asked, and bounded. One
     * round trip. */
    char setup[160];
    snprintf(setup, sizeof setup, "SET default_transaction_read_only = %s; SET statement_timeout = %d",
             t->writable ? "off" : "on", statement_timeout_ms > 0 ? statement_timeout_ms : 0);
    PGresult *r = pq.exec(c, setup);
    if (!r || pq.result_status(r) != PGRES_COMMAND_OK) {
        buf_puts(err, "PostgreSQL session setup failed: ");
        dsn_redact(err, r ? pq.result_error_message(r) : pq.error_message(c), pq.pass(c));
        if (r)
            pq.clear(r);
        pg_close(pc);
        rc = MNEMO_UNAVAILABLE;
        goto done;
    }
    pq.clear(r);
    *out = pc;
done:
    for (size_t i = 0; i < NMAP; i++) {
        if (ev.v[i])
            memset(ev.v[i], 0, strlen(ev.v[i]));
        free(ev.v[i]);
    }
    if (ev.database_url)
        memset(ev.database_url, 0, strlen(ev.database_url));
    free(ev.database_url);
    return rc;
}

void pg_close(pg_conn *c)
{
    if (!c)
        return;
    pq.finish(c->c);
    free(c);
}

int pg_ok(const pg_conn *c) { return c && pq.status(c->c) == CONNECTION_OK; }

static void cancel(PGconn *c)
{
    PGcancel *cn = pq.get_cancel(c);
    char ebuf[256];
    if (cn) {
        pq.cancel(cn, ebuf, (int)sizeof ebuf);
        pq.free_cancel(cn);
    }
}

/* Waits until a result can be taken without blocking; past the deadline
 * the query is cancelled once and its answer awaited a second longer.
 * 0 when the connection broke or never answered. */
static int wait_result(PGconn *c, double *deadline, int *timed_out)
{
    while (pq.is_busy(c)) {
        double left = *deadline - time_mono();
        if (left <= 0) {
            if (*timed_out)
                return 0;
            *timed_out = 1;
            cancel(c);
            *deadline = time_mono() + 1.0;
            continue;
        }
        struct pollfd fd = {.fd = pq.socket(c), .events = POLLIN};
        int pr = poll(&fd, 1, (int)(left * 1000.0) + 1);
        if (pr < 0 && errno != EINTR)
            return 0;
        if (pr > 0 && !pq.consume_input(c))
            return 0;
    }
    return 1;
}

/* The answer to the query just sent: its rows into *OUT (see pg_query). */
static int answer(pg_conn *pc, int timeout_ms, pg_rows **out, buf *err)
{
    PGconn *c = pc->c;
    double deadline = time_mono() + timeout_ms / 1000.0;
    int timed_out = 0, answered = 1, rc = MNEMO_OK;
    PGresult *r, *last = NULL;
    /* Every result until the NULL that ends the query; the last counts. */
    for (;;) {
        if (!(answered = wait_result(c, &deadline, &timed_out)))
            break;
        if (!(r = pq.get_result(c)))
            break;
        if (last)
            pq.clear(last);
        last = r;
    }
    if (!answered) {
        /* No answer even after the cancel, or the connection broke: the
         * connection is not usable any more. */
        buf_puts(err, timed_out ? "PostgreSQL query timed out" : "PostgreSQL connection lost: ");
        if (!timed_out)
            dsn_redact(err, pq.error_message(c), pq.pass(c));
        if (last)
            pq.clear(last);
        return timed_out ? MNEMO_TIMEOUT : MNEMO_UNAVAILABLE;
    }
    ExecStatusType st = last ? pq.result_status(last) : PGRES_FATAL_ERROR;
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        const char *code = last ? pq.result_error_field(last, PG_DIAG_SQLSTATE) : NULL;
        snprintf(pc->sqlstate, sizeof pc->sqlstate, "%s", code ? code : "");
        if (timed_out) {
            buf_printf(err, "PostgreSQL query timed out after %d ms", timeout_ms);
            rc = MNEMO_TIMEOUT;
        } else {
            buf_puts(err, "PostgreSQL: ");
            dsn_redact(err, last ? pq.result_error_message(last) : pq.error_message(c), pq.pass(c));
            while (err->len && (err->data[err->len - 1] == '\n'))
                err->data[--err->len] = 0;
            rc = pq.status(c) == CONNECTION_OK ? MNEMO_DB : MNEMO_UNAVAILABLE;
        }
        if (last)
            pq.clear(last);
        return rc;
    }
    pg_rows *rows = malloc(sizeof *rows);
    if (!rows) {
        pq.clear(last);
        return MNEMO_NOMEM;
    }
    rows->r = last;
    *out = rows;
    return MNEMO_OK;
}

/* 1 (with the reason in ERR) while a statement pg_send sent awaits its
 * answer: no other may go on PC before it. */
static int busy(const pg_conn *pc, buf *err)
{
    if (pc->inflight)
        buf_puts(err, "PostgreSQL: a statement is still on its way");
    return pc->inflight;
}

/* SQL's index among PC's prepared statements, nprepared when it is not. */
static int prepared_at(const pg_conn *pc, const char *sql)
{
    int i = 0;
    while (i < pc->nprepared && pc->prepared[i] != sql)
        i++;
    return i;
}

int pg_send(pg_conn *pc, const char *sql, int n, const char *const *params, const int *lens,
            const int *formats, buf *err)
{
    PGconn *c = pc->c;
    pc->sqlstate[0] = 0;
    if (busy(pc, err))
        return MNEMO_INVALID;
    if (!pq.send_query_params(c, sql, n, NULL, params, lens, formats, 0)) {
        buf_puts(err, "PostgreSQL: ");
        dsn_redact(err, pq.error_message(c), pq.pass(c));
        return MNEMO_UNAVAILABLE;
    }
    pc->inflight = 1;
    return MNEMO_OK;
}

int pg_collect(pg_conn *pc, int timeout_ms, pg_rows **out, buf *err)
{
    *out = NULL;
    if (!pc->inflight) {
        buf_puts(err, "PostgreSQL connection lost");
        return MNEMO_UNAVAILABLE;
    }
    pc->inflight = 0;
    return answer(pc, timeout_ms, out, err);
}

int pg_inflight(const pg_conn *pc) { return pc && pc->inflight; }

int pg_query(pg_conn *pc, const char *sql, int n, const char *const *params, int timeout_ms,
             pg_rows **out, buf *err)
{
    *out = NULL;
    PGconn *c = pc->c;
    pc->sqlstate[0] = 0;
    if (busy(pc, err))
        return MNEMO_INVALID;
    if (!pq.send_query_params(c, sql, n, NULL, params, NULL, NULL, 0)) {
        buf_puts(err, "PostgreSQL: ");
        dsn_redact(err, pq.error_message(c), pq.pass(c));
        return MNEMO_UNAVAILABLE;
    }
    return answer(pc, timeout_ms, out, err);
}

/* A prepared statement's name, from its text: a server session that
 * several connections share (PGlite) may have it already, from another
 * connection, as the same statement. */
static void stmt_name(const char *sql, char name[32])
{
    snprintf(name, 32, "mnemo_%016llx", (unsigned long long)hash64(sql, strlen(sql)));
}

/* Prepares SQL on PC as NAME, waiting for the answer, and remembers it. */
static int prepare(pg_conn *pc, const char *name, const char *sql, int n, int timeout_ms,
                   buf *err)
{
    pc->sqlstate[0] = 0;
    if (!pq.send_prepare(pc->c, name, sql, n, NULL)) {
        buf_puts(err, "PostgreSQL: ");
        dsn_redact(err, pq.error_message(pc->c), pq.pass(pc->c));
        return MNEMO_UNAVAILABLE;
    }
    pg_rows *r = NULL;
    int rc = answer(pc, timeout_ms, &r, err);
    pg_rows_free(r);
    if (rc == MNEMO_DB && !strcmp(pc->sqlstate, "42P05")) {
        buf_reset(err); /* duplicate_prepared_statement: there already */
        rc = MNEMO_OK;
    }
    if (!rc)
        pc->prepared[pc->nprepared++] = sql;
    return rc;
}

int pg_send_prepared(pg_conn *pc, const char *sql, int n, const char *const *params,
                     int timeout_ms, buf *err)
{
    if (busy(pc, err))
        return MNEMO_INVALID;
    int i = prepared_at(pc, sql);
    if (i == MAX_PREPARED || pg_in_transaction(pc))
        return pg_send(pc, sql, n, params, NULL, NULL, err);
    char name[32];
    stmt_name(sql, name);
    int rc = i == pc->nprepared ? prepare(pc, name, sql, n, timeout_ms, err) : MNEMO_OK;
    if (rc)
        return rc;
    pc->sqlstate[0] = 0;
    if (!pq.send_query_prepared(pc->c, name, n, params, NULL, NULL, 0)) {
        buf_puts(err, "PostgreSQL: ");
        dsn_redact(err, pq.error_message(pc->c), pq.pass(pc->c));
        return MNEMO_UNAVAILABLE;
    }
    pc->inflight = 1;
    return MNEMO_OK;
}

int pg_query_prepared(pg_conn *pc, const char *sql, int n, const char *const *params,
                      int timeout_ms, pg_rows **out, buf *err)
{
    *out = NULL;
    if (busy(pc, err))
        return MNEMO_INVALID;
    int i = prepared_at(pc, sql);
    /* Prepared the second time, so that a process running it once pays no
     * extra round trip; and outside transactions only: a failed Parse would
     * abort one. */
    int again = 0;
    for (int k = 0; k < pc->nseen && !again; k++)
        again = pc->seen[k] == sql;
    if (i == pc->nprepared && !again && pc->nseen < MAX_PREPARED)
        pc->seen[pc->nseen++] = sql;
    if (i == MAX_PREPARED || (i == pc->nprepared && (!again || pg_in_transaction(pc))))
        return pg_query(pc, sql, n, params, timeout_ms, out, err);
    PGconn *c = pc->c;
    char name[32];
    stmt_name(sql, name);
    for (int attempt = 0;; attempt++) {
        pc->sqlstate[0] = 0;
        if (i == pc->nprepared) {
            int rc = prepare(pc, name, sql, n, timeout_ms, err);
            if (rc)
                return rc;
        }
        if (!pq.send_query_prepared(c, name, n, params, NULL, NULL, 0)) {
            buf_puts(err, "PostgreSQL: ");
            dsn_redact(err, pq.error_message(c), pq.pass(c));
            return MNEMO_UNAVAILABLE;
        }
        int rc = answer(pc, timeout_ms, out, err);
        /* Gone from the session (DISCARD ALL, a pooler's new server
         * connection): prepared again, once. */
        if (rc != MNEMO_DB || strcmp(pc->sqlstate, "26000") != 0 || attempt)
            return rc;
        pc->nprepared = 0;
        i = 0;
        if (pg_in_transaction(pc))
            return rc; /* aborted: prepared again by the next statement outside one */
        buf_reset(err);
    }
}

const char *pg_sqlstate(const pg_conn *c) { return c ? c->sqlstate : ""; }

int pg_in_transaction(const pg_conn *c)
{
    if (!c)
        return 0;
    PGTransactionStatusType t = pq.transaction_status(c->c);
    return t == PQTRANS_INTRANS || t == PQTRANS_INERROR;
}

void pg_text_array(buf *b, const char *const *v, size_t n)
{
    buf_putc(b, '{');
    for (size_t i = 0; i < n; i++) {
        if (i)
            buf_putc(b, ',');
        buf_putc(b, '"');
        for (const char *p = v[i]; *p; p++) {
            if (*p == '"' || *p == '\\')
                buf_putc(b, '\\');
            buf_putc(b, *p);
        }
        buf_putc(b, '"');
    }
    buf_putc(b, '}');
}

size_t pg_nrows(const pg_rows *r) { return r ? (size_t)pq.ntuples(r->r) : 0; }

const char *pg_value(const pg_rows *r, size_t row, int col)
{
    if (!r || row >= (size_t)pq.ntuples(r->r) || col >= pq.nfields(r->r))
        return "";
    return pq.getvalue(r->r, (int)row, col);
}

int pg_isnull(const pg_rows *r, size_t row, int col)
{
    if (!r || row >= (size_t)pq.ntuples(r->r) || col >= pq.nfields(r->r))
        return 1;
    return pq.getisnull(r->r, (int)row, col);
}

void pg_rows_free(pg_rows *r)
{
    if (!r)
        return;
    pq.clear(r->r);
    free(r);
}
