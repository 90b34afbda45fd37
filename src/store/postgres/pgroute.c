/*
 * pgroute.c - read replicas (see pgint.h): the configured servers, their
 * state, the choice of a server for each read, and the WAL position a
 * process's reads wait for.
 *
 * A replica's position is pg_last_wal_replay_lsn() (pg_current_wal_lsn()
 * on a server not in recovery); its lag in time is now() minus the replay
 * time of the last transaction while it has received WAL it has not
 * replayed yet (0 when it has replayed all it received, so an idle
 * primary does not make a replica look behind). A replica is probed
 * before a read when it was last probed more than PROBE_MS ago, or when it
 * had not reached the position this process waits for.
 */
#include "store/postgres/pgint.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/core.h"
#include "text/dsn.h"
#include "util/hash.h"
#include "util/time.h"

#define PROBE_MS 1000       /* a replica's position is at most this old */
#define PROBE_TIMEOUT_MS 2000
#define POLL_MS 5           /* between probes while waiting for a replica */
#define REASON_MAX 400

enum { ST_UNKNOWN, ST_OK, ST_LAGGING, ST_DOWN };
static const char *const state_names[] = {"unknown", "ok", "lagging", "down"};

typedef struct replica {
    char *dsn, *label;     /* label: the DSN without credentials */
    struct pgstate *st;    /* its connection (pgconn.c) */
    int state;
    char reason[REASON_MAX];
    double retry_at;       /* a skipped replica is tried again from then */
    double probed_at;
    uint64_t lsn;          /* replayed, at probed_at */
    char lsn_text[40];
    int standby;           /* in recovery: a replica following a primary */
    double lag_ms;
    int schema_ok;         /* else schema_why says why it cannot serve reads */
    char schema_why[REASON_MAX];
} replica;

struct pgroute {
    replica *r;
    size_t n, next;        /* next: where the round robin over replicas starts */
    char *primary_label;
    uint64_t key;          /* of the primary's DSN, for the process's position */
    int wait_ms, max_lag_ms, retry_ms;
    int depth;             /* nesting of reads and writes */
    struct pgstate *saved; /* the route a nested write interrupted */
    double primary_retry_at;
    int primary_down;
    size_t tries;
    /* the read running now: its server (-1: the primary), what it did */
    int server;
    double waited_ms;
    int fell_back;
    char why[REASON_MAX];
    /* the last read that ended */
    int have_last, last_server, last_fell_back;
    double last_waited_ms;
    char last_why[REASON_MAX];
};

/* ----------------------------------------------------------------------
 * The process's position
 *
 * Process-wide on purpose: the daemon gives each worker its own handle,
 * and a memory added through one worker must be found by a search through
 * another. One entry per primary (a hash of its DSN), under a mutex.
 * -------------------------------------------------------------------- */

#define SEEN_MAX 16
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    uint64_t key, lsn;
} seen[SEEN_MAX];

static void seen_note(uint64_t key, uint64_t lsn)
{
    pthread_mutex_lock(&seen_lock);
    size_t i = 0;
    while (i < SEEN_MAX && seen[i].key && seen[i].key != key)
        i++;
    if (i == SEEN_MAX) /* full: the oldest primary gives way */
        i = (size_t)(key % SEEN_MAX);
    if (seen[i].key != key || seen[i].lsn < lsn) {
        seen[i].key = key;
        seen[i].lsn = lsn;
    }
    pthread_mutex_unlock(&seen_lock);
}

static uint64_t seen_get(uint64_t key)
{
    uint64_t lsn = 0;
    pthread_mutex_lock(&seen_lock);
    for (size_t i = 0; i < SEEN_MAX; i++)
        if (seen[i].key == key)
            lsn = seen[i].lsn;
    pthread_mutex_unlock(&seen_lock);
    return lsn;
}

/* "16/B374D848" as a number; 0 for anything else. */
static uint64_t lsn_parse(const char *s)
{
    char *e;
    unsigned long long hi = strtoull(s, &e, 16), lo;
    if (*e != '/')
        return 0;
    lo = strtoull(e + 1, &e, 16);
    return (uint64_t)hi << 32 | (uint64_t)(lo & 0xffffffffu);
}

/* ----------------------------------------------------------------------
 * Configuration
 * -------------------------------------------------------------------- */

static char *redacted(const char *dsn)
{
    buf b;
    buf_init(&b, 0);
    dsn_redact(&b, dsn, NULL);
    if (!b.data)
        buf_puts(&b, "");
    return buf_detach(&b);
}

static int num_field(json_t *o, const char *key, int def)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int)json_integer_value(v) : def;
}

/* The routing state, made on first use; NULL without replicas. */
static struct pgroute *route(mnemo *m)
{
    pgback *b = pgconn_state(m);
    if (!b)
        return NULL;
    if (b->route)
        return b->route->n ? b->route : NULL;
    struct pgroute *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    b->route = r;
    json_t *st = json_loads(cfg_str(m->cfg, CFG_STORE), 0, NULL);
    json_t *list = json_object_get(st, "readDsns");
    const char *dsn = json_string_value(json_object_get(st, "dsn"));
    r->wait_ms = num_field(st, "replicaWaitMs", 200);
    r->max_lag_ms = num_field(st, "replicaMaxLagMs", 10000);
    r->retry_ms = num_field(st, "replicaRetryMs", 2000);
    r->server = -1;
    size_t n = json_array_size(list);
    if (n && (r->r = calloc(n, sizeof *r->r))) {
        r->primary_label = redacted(dsn ? dsn : "");
        r->key = hash64(dsn ? dsn : "", dsn ? strlen(dsn) : 0) | 1;
        for (size_t i = 0; i < n; i++) {
            const char *d = json_string_value(json_array_get(list, i));
            replica *x = &r->r[r->n];
            if (!d || !(x->dsn = strdup(d)) || !(x->label = redacted(d))) {
                free(x->dsn);
                x->dsn = NULL;
                continue;
            }
            r->n++;
        }
        if (!r->primary_label)
            r->n = 0;
    }
    json_decref(st);
    return r->n ? r : NULL;
}

/* ----------------------------------------------------------------------
 * Replicas' state
 * -------------------------------------------------------------------- */

/* Warnings go to stderr as libpq's notices do by default: a skipped
 * replica is an operator's concern, seen once per change of state. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("mnemo: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void mark_down(struct pgroute *r, replica *x, const char *why)
{
    /* libpq's messages run over lines: one line, blanks collapsed. */
    size_t n = 0;
    for (const char *p = why; *p && n + 1 < sizeof x->reason; p++) {
        int blank = *p == '\n' || *p == '\t' || *p == ' ';
        if (blank && (n == 0 || x->reason[n - 1] == ' '))
            continue;
        x->reason[n++] = blank ? ' ' : *p;
    }
    while (n && (x->reason[n - 1] == ' ' || x->reason[n - 1] == ';'))
        n--;
    x->reason[n] = 0;
    if (x->state != ST_DOWN)
        say("warning: PostgreSQL replica %s is skipped: %s; reads go to another server "
            "meanwhile (tried again every %d ms)",
            x->label, x->reason, r->retry_ms);
    x->state = ST_DOWN;
    x->retry_at = time_mono() + r->retry_ms / 1000.0;
    pgconn_state_free(x->st);
    x->st = NULL;
}

static void mark_lagging(struct pgroute *r, replica *x)
{
    if (x->state != ST_LAGGING)
        say("warning: PostgreSQL replica %s is skipped: it lags %.0f ms behind the primary "
            "(store.replicaMaxLagMs %d)",
            x->label, x->lag_ms, r->max_lag_ms);
    x->state = ST_LAGGING;
    snprintf(x->reason, sizeof x->reason, "lagging %.0f ms behind the primary", x->lag_ms);
    x->retry_at = time_mono() + r->retry_ms / 1000.0;
}

static void mark_ok(replica *x)
{
    if (x->state == ST_DOWN || x->state == ST_LAGGING)
        say("PostgreSQL replica %s is back: reads go to it again", x->label);
    x->state = ST_OK;
    x->reason[0] = 0;
}

/* Connects X if needed and reads its position and lag. 0 on success;
 * else X is marked down. */
static int probe(mnemo *m, struct pgroute *r, replica *x)
{
    buf err;
    buf_init(&err, 4096);
    int rc = pgconn_replica_open(m, x->dsn, &x->st, &err);
    pg_rows *rows = NULL;
    if (!rc)
        rc = pg_query(pgconn_state_conn(x->st),
                      "SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
                      "ELSE pg_current_wal_lsn() END)::text, "
                      "(CASE WHEN NOT pg_is_in_recovery() OR pg_last_wal_receive_lsn() IS NULL "
                      "OR pg_last_wal_receive_lsn() <= pg_last_wal_replay_lsn() THEN 0 ELSE "
                      "coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()) * "
                      "1000, 0) END)::float8, pg_is_in_recovery()",
                      0, NULL, PROBE_TIMEOUT_MS, &rows, &err);
    if (rc) {
        mark_down(r, x, err.data ? err.data : "cannot connect");
        buf_cleanup(&err);
        return -1;
    }
    /* A server out of recovery (promoted, or no replica at all) follows no
     * primary: nothing to wait for there. */
    snprintf(x->lsn_text, sizeof x->lsn_text, "%s", pg_value(rows, 0, 0));
    x->standby = !strcmp(pg_value(rows, 0, 2), "t");
    x->lsn = x->standby ? lsn_parse(x->lsn_text) : UINT64_MAX;
    x->lag_ms = strtod(pg_value(rows, 0, 1), NULL);
    x->probed_at = time_mono();
    pg_rows_free(rows);
    /* After the position: a replica behind on the schema may only be
     * behind on the WAL that migrates it. */
    buf_reset(&err);
    int src = pgschema_replica_schema(m, x->st, &err);
    x->schema_ok = src == MNEMO_OK;
    snprintf(x->schema_why, sizeof x->schema_why, "%s", src && err.data ? err.data : "");
    buf_cleanup(&err);
    if (src == MNEMO_CORRUPT || (src && src != MNEMO_UNAVAILABLE)) {
        mark_down(r, x, x->schema_why[0] ? x->schema_why : "schema check failed");
        return -1;
    }
    return 0;
}

/* A replica whose schema is behind although it has replayed NEED: not
 * mnemo's database (or the primary not migrated yet): skipped. */
static int schema_unusable(struct pgroute *r, replica *x, uint64_t need)
{
    if (x->schema_ok || x->lsn < need)
        return 0;
    mark_down(r, x, x->schema_why);
    return 1;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Points the read at replica I (-1: the primary). */
static void use(mnemo *m, struct pgroute *r, int i)
{
    r->server = i;
    PGB(m)->read = i >= 0 ? r->r[i].st : NULL;
    if (i >= 0)
        r->next = ((size_t)i + 1) % r->n;
}

/* Chooses the read's server: a replica that is up, within the lag bound
 * and has replayed NEED; else one that is behind, waited for within the
 * budget left; else the primary (or, when the primary is known to be
 * down, the replica behind: better stale than nothing). */
static void pick(mnemo *m, struct pgroute *r, uint64_t need)
{
    double now = time_mono();
    int behind = -1;
    for (size_t k = 0; k < r->n; k++) {
        size_t i = (r->next + k) % r->n;
        replica *x = &r->r[i];
        if ((x->state == ST_DOWN || x->state == ST_LAGGING) && now < x->retry_at)
            continue;
        if (!x->st || !pg_ok(pgconn_state_conn(x->st)) || x->state != ST_OK ||
            x->lsn < need || now - x->probed_at >= PROBE_MS / 1000.0) {
            if (probe(m, r, x))
                continue;
        }
        if (r->max_lag_ms > 0 && x->lag_ms > r->max_lag_ms) {
            mark_lagging(r, x);
            continue;
        }
        if (schema_unusable(r, x, need))
            continue;
        if (x->schema_ok)
            mark_ok(x);
        if (x->lsn >= need && x->schema_ok) {
            use(m, r, (int)i);
            return;
        }
        if (behind < 0)
            behind = (int)i;
    }
    if (behind >= 0) {
        replica *x = &r->r[behind];
        double t0 = time_mono(), left = r->wait_ms - r->waited_ms;
        int alive = 1;
        if (r->primary_down && t0 < r->primary_retry_at)
            left = 0; /* nothing better to wait for */
        while (left > 0 && (x->lsn < need || !x->schema_ok)) {
            sleep_ms(POLL_MS);
            if (probe(m, r, x) || schema_unusable(r, x, need)) {
                alive = 0;
                break;
            }
            left = r->wait_ms - r->waited_ms - (time_mono() - t0) * 1000.0;
        }
        r->waited_ms += (time_mono() - t0) * 1000.0;
        if (alive && x->lsn >= need && x->schema_ok) {
            mark_ok(x);
            use(m, r, behind);
            return;
        }
        if (alive && x->schema_ok && r->primary_down && time_mono() < r->primary_retry_at) {
            use(m, r, behind);
            r->fell_back = 1;
            snprintf(r->why, sizeof r->why,
                     "the primary is unavailable: read from replica %s, which may miss this "
                     "process's last write",
                     x->label);
            return;
        }
        if (alive)
            snprintf(r->why, sizeof r->why,
                     "replica %s had not replayed this process's last write after %.0f ms: "
                     "read from the primary",
                     x->label, r->waited_ms);
        else
            snprintf(r->why, sizeof r->why, "replica %.150s: %.200s: read from the primary", x->label,
                     x->reason);
    } else {
        snprintf(r->why, sizeof r->why, "no replica is available: read from the primary");
    }
    r->fell_back = 1;
    use(m, r, -1);
}

/* ----------------------------------------------------------------------
 * Reads and writes
 * -------------------------------------------------------------------- */

void pgroute_read_begin(mnemo *m)
{
    struct pgroute *r = route(m);
    if (!r || r->depth++)
        return;
    r->tries = 0;
    r->waited_ms = 0;
    r->fell_back = 0;
    r->why[0] = 0;
    pick(m, r, seen_get(r->key));
}

/* SQLSTATEs after which a read is worth running on another server: the
 * connection's (08), the server shutting down (57), a replica's query
 * cancelled by recovery (40001). */
static int server_failed(const char *state)
{
    return !strncmp(state, "08", 2) || !strncmp(state, "57", 2) || !strcmp(state, "40001");
}

static void read_end(mnemo *m, struct pgroute *r)
{
    r->depth = 0;
    r->have_last = 1;
    r->last_server = r->server;
    r->last_waited_ms = r->waited_ms;
    r->last_fell_back = r->fell_back;
    memcpy(r->last_why, r->why, sizeof r->why);
    PGB(m)->read = NULL;
}

int pgroute_read_again(mnemo *m, int rc)
{
    struct pgroute *r = PGB(m) ? PGB(m)->route : NULL;
    if (!r || !r->n || r->depth == 0)
        return 0;
    if (r->depth > 1) {
        r->depth--;
        return 0;
    }
    if (rc == MNEMO_OK || r->tries++ > r->n) {
        read_end(m, r);
        return 0;
    }
    if (r->server >= 0) {
        replica *x = &r->r[r->server];
        pg_conn *c = pgconn_state_conn(x->st);
        if (rc == MNEMO_UNAVAILABLE || rc == MNEMO_TIMEOUT || !pg_ok(c) ||
            server_failed(pg_sqlstate(c))) {
            mark_down(r, x, core_errmsg(m));
            PGB(m)->read = NULL;
            core_clear(m);
            pick(m, r, seen_get(r->key));
            return 1;
        }
    } else if (rc == MNEMO_UNAVAILABLE) {
        /* The primary is gone: any replica that answers, however far
         * behind this process's writes. */
        r->primary_down = 1;
        r->primary_retry_at = time_mono() + r->retry_ms / 1000.0;
        pick(m, r, 0);
        if (r->server >= 0) {
            r->fell_back = 1;
            snprintf(r->why, sizeof r->why,
                     "the primary is unavailable: read from replica %s, which may miss this "
                     "process's last write",
                     r->r[r->server].label);
            core_clear(m);
            return 1;
        }
    }
    read_end(m, r);
    return 0;
}

void pgroute_write_begin(mnemo *m)
{
    struct pgroute *r = route(m);
    if (!r || r->depth++)
        return;
    r->saved = PGB(m)->read;
    PGB(m)->read = NULL;
}

int pgroute_write_end(mnemo *m, int rc)
{
    struct pgroute *r = PGB(m) ? PGB(m)->route : NULL;
    if (!r || !r->n || r->depth == 0)
        return rc;
    if (--r->depth)
        return rc;
    PGB(m)->read = r->saved;
    r->saved = NULL;
    /* Whatever committed, committed before this position. */
    pg_conn *c = pgconn_state_conn(PGB(m)->conn);
    if (pg_ok(c)) {
        pg_rows *rows = NULL;
        buf err;
        buf_init(&err, 4096);
        if (!pg_query(c, "SELECT pg_current_wal_lsn()::text", 0, NULL, PROBE_TIMEOUT_MS, &rows,
                      &err)) {
            seen_note(r->key, lsn_parse(pg_value(rows, 0, 0)));
            r->primary_down = 0;
        }
        pg_rows_free(rows);
        buf_cleanup(&err);
    }
    /* A server killed under a statement may answer with its shutdown's
     * error (SQLSTATE 57P01) before the connection drops. */
    if (rc == MNEMO_DB && (!pg_ok(c) || server_failed(pg_sqlstate(c))))
        rc = MNEMO_UNAVAILABLE;
    if (rc == MNEMO_UNAVAILABLE) {
        r->primary_down = 1;
        r->primary_retry_at = time_mono() + r->retry_ms / 1000.0;
        buf keep;
        buf_init(&keep, 0);
        buf_puts(&keep, core_errmsg(m));
        core_error(m, rc, "writes go to the primary %s, which is unavailable (reads continue "
                          "from the replicas): %s",
                   r->primary_label, keep.data ? keep.data : "");
        buf_cleanup(&keep);
    }
    return rc;
}

/* ----------------------------------------------------------------------
 * Status
 * -------------------------------------------------------------------- */

static const char *label_of(const struct pgroute *r, int server)
{
    return server >= 0 ? r->r[server].label : r->primary_label;
}

void pgroute_status(mnemo *m, json_t *root)
{
    struct pgroute *r = route(m);
    if (!r)
        return;
    json_t *reads = json_object();
    json_object_set_new(reads, "server", json_string(r->server >= 0 ? "replica" : "primary"));
    json_object_set_new(reads, "dsn", json_string(label_of(r, r->server)));
    json_object_set_new(reads, "waitedMs", json_real(r->waited_ms));
    json_object_set_new(reads, "fellBack", json_boolean(r->fell_back));
    if (r->why[0])
        json_object_set_new(reads, "reason", json_string(r->why));
    json_object_set_new(reads, "replicaWaitMs", json_integer(r->wait_ms));
    json_object_set_new(reads, "replicaMaxLagMs", json_integer(r->max_lag_ms));
    if (r->have_last) {
        json_t *last = json_object();
        json_object_set_new(last, "server",
                            json_string(r->last_server >= 0 ? "replica" : "primary"));
        json_object_set_new(last, "dsn", json_string(label_of(r, r->last_server)));
        json_object_set_new(last, "waitedMs", json_real(r->last_waited_ms));
        json_object_set_new(last, "fellBack", json_boolean(r->last_fell_back));
        if (r->last_why[0])
            json_object_set_new(last, "reason", json_string(r->last_why));
        json_object_set_new(reads, "last", last);
    }
    /* The primary's position, then each replica's distance from it. */
    json_t *pj = json_object();
    json_object_set_new(pj, "dsn", json_string(r->primary_label));
    uint64_t plsn = 0;
    struct pgstate *keep = PGB(m)->read;
    PGB(m)->read = NULL;
    pg_conn *c = NULL;
    int prc = pgschema_primary(m, &c);
    PGB(m)->read = keep;
    pg_rows *rows = NULL;
    buf err;
    buf_init(&err, 4096);
    if (!prc)
        prc = pg_query(c, "SELECT pg_current_wal_lsn()::text", 0, NULL, PROBE_TIMEOUT_MS, &rows,
                       &err);
    if (!prc) {
        plsn = lsn_parse(pg_value(rows, 0, 0));
        json_object_set_new(pj, "state", json_string("ok"));
        json_object_set_new(pj, "lsn", json_string(pg_value(rows, 0, 0)));
    } else {
        json_object_set_new(pj, "state", json_string("down"));
        json_object_set_new(pj, "reason",
                            json_string(err.len ? err.data : core_errmsg(m)));
    }
    pg_rows_free(rows);
    buf_cleanup(&err);
    core_clear(m);
    json_object_set_new(reads, "primary", pj);
    json_t *arr = json_array();
    for (size_t i = 0; i < r->n; i++) {
        replica *x = &r->r[i];
        /* Probed now, also in its back-off: status is asked for. */
        if (probe(m, r, x) || schema_unusable(r, x, seen_get(r->key)))
            ;
        else if (r->max_lag_ms > 0 && x->lag_ms > r->max_lag_ms)
            mark_lagging(r, x);
        else if (x->schema_ok)
            mark_ok(x);
        if ((int)i == r->server)
            PGB(m)->read = x->st; /* the probe may have reconnected it */
        json_t *xj = json_object();
        json_object_set_new(xj, "dsn", json_string(x->label));
        json_object_set_new(xj, "state", json_string(state_names[x->state]));
        if (x->state != ST_DOWN) {
            json_object_set_new(xj, "standby", json_boolean(x->standby));
            json_object_set_new(xj, "lsn", json_string(x->lsn_text));
            json_object_set_new(xj, "lagMs", json_real(x->lag_ms));
            if (plsn && x->standby)
                json_object_set_new(xj, "lagBytes",
                                    json_integer(plsn > x->lsn ? (json_int_t)(plsn - x->lsn) : 0));
        }
        if (x->reason[0])
            json_object_set_new(xj, "reason", json_string(x->reason));
        json_array_append_new(arr, xj);
    }
    json_object_set_new(reads, "replicas", arr);
    json_object_set_new(root, "reads", reads);
}

void pgroute_close(mnemo *m)
{
    if (!m || !PGB(m) || !PGB(m)->route)
        return;
    struct pgroute *r = PGB(m)->route;
    for (size_t i = 0; i < r->n; i++) {
        pgconn_state_free(r->r[i].st);
        free(r->r[i].dsn);
        free(r->r[i].label);
    }
    free(r->r);
    free(r->primary_label);
    free(r);
    PGB(m)->route = NULL;
    PGB(m)->read = NULL;
}
