/*
 * pgquery.c - statements on the handle's PostgreSQL connection (see
 * pgint.h): run at once, prepared, or sent and collected later; the
 * side connection beside it, the worker handle for another thread, and the
 * writer slot.
 */
#include "store/postgres/pgint.h"

#include <stdlib.h>
#include <string.h>

#include "engine/core.h"

/* pg_try_advisory_lock(class, slot) of the writers' slots; not the class of
 * the syncs' locks (SYNC_LOCK, 7170532), whose second key is a hash. */
#define SLOT_LOCK "7170533"
#define WRITER_SLOTS "64"

static int q(mnemo *m, pg_conn *c, const char *what, const char *sql, int n,
             const char *const *params, pg_rows **out)
{
    return pgconn_query(m, c, 0, what, sql, n, params, out);
}

int pgquery_slot(mnemo *m, int *slot)
{
    pg_conn *c;
    *slot = 0;
    int rc = pgschema_primary(m, &c); /* writes go to the primary */
    if (rc)
        return rc;
    struct pgstate *s = PGB(m)->conn;
    if (!s->slot) {
        /* The first free slot (a session lock, released when the connection
         * ends), else one shared by the process id. */
        pg_rows *r = NULL;
        rc = q(m, c, "writer slot",
               "SELECT coalesce((SELECT s FROM generate_series(1, " WRITER_SLOTS ") s WHERE "
               "pg_try_advisory_lock(" SLOT_LOCK ", s) LIMIT 1), 1 + pg_backend_pid() % "
               WRITER_SLOTS ")",
               0, NULL, &r);
        if (!rc)
            s->slot = (int)strtol(pg_value(r, 0, 0), NULL, 10);
        pg_rows_free(r);
        if (!rc && s->slot <= 0)
            rc = core_error(m, MNEMO_DB, "PostgreSQL writer slot: no answer");
        if (rc)
            return rc;
    }
    *slot = s->slot;
    return MNEMO_OK;
}

int pgquery_q(mnemo *m, const char *what, const char *sql, int n, const char *const *params,
              pg_rows **out)
{
    pg_conn *c;
    if (out)
        *out = NULL;
    int rc = pgschema_conn(m, &c);
    return rc ? rc : q(m, c, what, sql, n, params, out);
}

/* Whether C's server runs every connection in one session (PGlite): a
 * second connection's settings would be the first one's too. */
static int shared_session(mnemo *m, pg_conn *c)
{
    pg_rows *r = NULL;
    int rc = q(m, c, "side connection", "SELECT version() ILIKE '%emscripten%'", 0, NULL, &r);
    int shared = rc || strcmp(pg_value(r, 0, 0), "f") != 0;
    pg_rows_free(r);
    core_clear(m);
    return shared;
}

int pgquery_side(mnemo *m, pg_conn **out)
{
    *out = NULL;
    pg_conn *c;
    if (pgschema_conn(m, &c)) {
        core_clear(m);
        return 0;
    }
    struct pgstate *s = pgconn_cur(m);
    if (s->side && pg_ok(s->side) && !pg_inflight(s->side)) {
        *out = s->side;
        return 1;
    }
    /* Not for a handle's first read, nor inside a transaction (the side
     * sees only what is committed). */
    if (s->side_off || ++s->side_asks < 2 || pg_in_transaction(c))
        return 0;
    pg_close(s->side);
    s->side = NULL;
    if (shared_session(m, c)) {
        s->side_off = 1;
        return 0;
    }
    buf err;
    buf_init(&err, 0);
    int rc = s->dsn ? pgconn_connect_to(m, s->dsn, 0, PGCONN_STATEMENT_TIMEOUT_MS, &s->side, &err)
                    : pgconn_connect(m, 0, PGCONN_STATEMENT_TIMEOUT_MS, &s->side, &err);
    buf_cleanup(&err);
    if (rc) {
        /* The server may be at its connection limit: the handle's own
         * connection does the work, as before. */
        s->side = NULL;
        s->side_off = 1;
        return 0;
    }
    *out = s->side;
    return 1;
}

mnemo *pgquery_worker(mnemo *m)
{
    pg_conn *c;
    if (pgschema_primary(m, &c) || pg_in_transaction(c) || shared_session(m, c)) {
        core_clear(m);
        return NULL;
    }
    mnemo *w = calloc(1, sizeof *w);
    pgback *b = w ? calloc(1, sizeof *b) : NULL;
    struct pgstate *s = b ? calloc(1, sizeof *s) : NULL;
    if (w)
        w->store = b;
    if (b)
        b->conn = s;
    if (!s || !(b->tenant = strdup(pgconn_tenant(m)))) {
        pgquery_worker_free(w);
        return NULL;
    }
    buf_init(&w->err, 0);
    buf_init(&w->warn, 0);
    s->fixed = 1;
    if (pgconn_primary_target(m, &s->dsn, &s->env)) {
        pgquery_worker_free(w);
        return NULL;
    }
    return w;
}

void pgquery_worker_free(mnemo *w)
{
    if (!w)
        return;
    pgback *b = PGB(w);
    if (b) {
        pgconn_state_free(b->conn);
        free(b->tenant);
        free(b);
    }
    buf_cleanup(&w->err);
    buf_cleanup(&w->warn);
    free(w);
}

/* The state whose side connection is C, NULL when none is (any more). */
static struct pgstate *side_owner(mnemo *m, const pg_conn *c)
{
    pgback *b = PGB(m);
    if (!b || !c)
        return NULL;
    if (b->read && b->read->side == c)
        return b->read;
    return b->conn && b->conn->side == c ? b->conn : NULL;
}

void pgquery_side_drop(mnemo *m, pg_conn *c, int off)
{
    struct pgstate *s = side_owner(m, c);
    if (!s)
        return;
    pg_close(s->side);
    s->side = NULL;
    s->side_off |= off;
}

/* After a failure on C: the server's error leaves the connection as it
 * was; a lost one is closed and not opened again. */
static int side_fail(mnemo *m, pg_conn *c, int rc)
{
    if (!pg_ok(c))
        pgquery_side_drop(m, c, 1);
    return rc;
}

int pgquery_side_send(mnemo *m, pg_conn *c, const char *sql, int prepared, int n,
                      const char *const *params)
{
    buf err;
    buf_init(&err, 0);
    int rc = prepared ? pg_send_prepared(c, sql, n, params, PGCONN_QUERY_TIMEOUT_MS, &err)
                      : pg_send(c, sql, n, params, NULL, NULL, &err);
    buf_cleanup(&err);
    return rc ? side_fail(m, c, rc) : MNEMO_OK;
}

int pgquery_side_collect(mnemo *m, pg_conn *c, pg_rows **out)
{
    buf err;
    buf_init(&err, 0);
    int rc = pg_collect(c, PGCONN_QUERY_TIMEOUT_MS, out, &err);
    buf_cleanup(&err);
    return rc ? side_fail(m, c, rc) : MNEMO_OK;
}

int pgquery_qp(mnemo *m, const char *what, const char *sql, int n, const char *const *params,
               pg_rows **out)
{
    pg_conn *c;
    if (out)
        *out = NULL;
    int rc = pgschema_conn(m, &c);
    return rc ? rc : pgconn_query(m, c, 1, what, sql, n, params, out);
}

int pgquery_send(mnemo *m, const char *what, const char *sql, int n, const char *const *params,
                 const int *lens, const int *formats)
{
    pg_conn *c;
    int rc = pgschema_primary(m, &c);
    if (rc)
        return rc;
    buf err;
    buf_init(&err, 0);
    if ((rc = pg_send(c, sql, n, params, lens, formats, &err)))
        rc = pgconn_fail(m, rc, what, &err);
    buf_cleanup(&err);
    return rc;
}

int pgquery_collect(mnemo *m, const char *what, pg_rows **out)
{
    if (out)
        *out = NULL;
    pgback *b = PGB(m);
    pg_conn *c = b && b->conn ? b->conn->c : NULL;
    pg_rows *r = NULL;
    buf err;
    buf_init(&err, 0);
    int rc = c ? pg_collect(c, PGCONN_QUERY_TIMEOUT_MS, &r, &err) : MNEMO_UNAVAILABLE;
    if (!c)
        buf_puts(&err, "PostgreSQL connection lost");
    if (rc)
        rc = pgconn_fail(m, rc, what, &err);
    else if (out)
        *out = r;
    else
        pg_rows_free(r);
    buf_cleanup(&err);
    return rc;
}

int pgquery_inflight(mnemo *m)
{
    pgback *b = PGB(m);
    return b && b->conn && pg_inflight(b->conn->c);
}
