/*
 * pgconn.c - what every PostgreSQL user of the handle needs (see pgint.h):
 * a connection to the configured server, the state kept on each of the
 * handle's connections (the primary's, the replicas'), and the tenant its
 * rows carry.
 */
#include "store/postgres/pgint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "engine/core.h"

/* The configured primary's DSN, "" when none (libpq's defaults). */
static char *primary_dsn(mnemo *m)
{
    json_t *st = json_loads(cfg_str(m->cfg, CFG_STORE), 0, NULL);
    const char *dsn = json_string_value(json_object_get(st, "dsn"));
    char *out = strdup(dsn ? dsn : "");
    json_decref(st);
    return out;
}

/* The env file's path (pgEnvFile: ~/ is the home folder, a relative path
 * is in the workspace), "" for none; NULL when out of memory. */
static char *env_path(mnemo *m)
{
    const char *ef = cfg_str(m->cfg, CFG_PG_ENV_FILE), *home = getenv("HOME");
    buf path;
    buf_init(&path, 8192);
    if (ef[0] == '~' && ef[1] == '/' && home)
        buf_printf(&path, "%s/%s", home, ef + 2);
    else if (*ef && ef[0] != '/')
        buf_printf(&path, "%s/%s", m->workspace, ef);
    else
        buf_puts(&path, ef);
    char *out = buf_err(&path) ? NULL : strdup(path.data ? path.data : "");
    buf_cleanup(&path);
    return out;
}

int pgconn_connect(mnemo *m, int writable, int statement_timeout_ms, pg_conn **out, buf *err)
{
    char *dsn = primary_dsn(m);
    int rc = dsn ? pgconn_connect_to(m, dsn, writable, statement_timeout_ms, out, err)
                 : MNEMO_NOMEM;
    free(dsn);
    return rc;
}

int pgconn_connect_to(mnemo *m, const char *dsn, int writable, int statement_timeout_ms,
                      pg_conn **out, buf *err)
{
    char *env = env_path(m);
    pg_target t = {dsn, env, 3, writable};
    int rc = env ? pg_connect(&t, statement_timeout_ms, out, err) : MNEMO_NOMEM;
    free(env);
    return rc;
}

int pgconn_primary_target(mnemo *m, char **dsn, char **env_file)
{
    *dsn = primary_dsn(m);
    *env_file = env_path(m);
    if (*dsn && *env_file)
        return MNEMO_OK;
    free(*dsn);
    free(*env_file);
    *dsn = *env_file = NULL;
    return MNEMO_NOMEM;
}

pgback *pgconn_state(mnemo *m)
{
    if (!m->store)
        m->store = calloc(1, sizeof(pgback));
    return PGB(m);
}

void pgconn_close(mnemo *m)
{
    pgback *b = PGB(m);
    if (!b)
        return;
    free(b->tenant);
    free(b);
    m->store = NULL;
}

const char *pgconn_tenant(mnemo *m)
{
    const char *t = m->cfg ? cfg_str(m->cfg, CFG_TENANT) : ""; /* a worker has none */
    if (*t)
        return t;
    pgback *b = pgconn_state(m);
    if (b && !b->tenant) {
        char host[256] = "localhost";
        if (gethostname(host, sizeof host - 1) != 0)
            snprintf(host, sizeof host, "localhost");
        host[sizeof host - 1] = 0;
        size_t n = strlen(host) + strlen(m->workspace) + 2;
        if ((b->tenant = malloc(n)))
            snprintf(b->tenant, n, "%s:%s", host, m->workspace);
    }
    return b && b->tenant ? b->tenant : "default";
}

int pgconn_qtok(mnemo *m, tok **out)
{
    return core_qtok(m, cfg_str(m->cfg, CFG_LANGUAGE), out);
}

/* Closes S's connections and clears it. */
static void state_clear(struct pgstate *s)
{
    pg_close(s->side);
    pg_close(s->c);
    free(s->dsn);
    free(s->env);
    memset(s, 0, sizeof *s);
}

int pgconn_fail(mnemo *m, int rc, const char *what, buf *err)
{
    rc = core_error(m, rc, "PostgreSQL %s: %s", what, err->data ? err->data : "failed");
    buf_reset(err);
    return rc;
}

int pgconn_query(mnemo *m, pg_conn *c, int prepared, const char *what, const char *sql, int n,
                 const char *const *params, pg_rows **out)
{
    pg_rows *r = NULL;
    buf err;
    buf_init(&err, 0);
    int rc = prepared ? pg_query_prepared(c, sql, n, params, PGCONN_QUERY_TIMEOUT_MS, &r, &err)
                      : pg_query(c, sql, n, params, PGCONN_QUERY_TIMEOUT_MS, &r, &err);
    if (rc) {
        rc = pgconn_fail(m, rc, what, &err);
        buf_cleanup(&err);
        return rc;
    }
    buf_cleanup(&err);
    if (out)
        *out = r;
    else
        pg_rows_free(r);
    return MNEMO_OK;
}

struct pgstate *pgconn_cur(mnemo *m) { return PGB(m)->read ? PGB(m)->read : PGB(m)->conn; }

int pgconn_open(mnemo *m, pg_conn **out, int *fresh)
{
    *out = NULL;
    *fresh = 0;
    pgback *b = pgconn_state(m);
    if (!b || (!b->conn && !(b->conn = calloc(1, sizeof *b->conn))))
        return core_error(m, MNEMO_NOMEM, "out of memory");
    struct pgstate *s = b->conn;
    if (s->c && pg_ok(s->c)) {
        *out = s->c;
        return MNEMO_OK;
    }
    if (s->fixed) {
        buf err;
        buf_init(&err, 0);
        pg_target t = {s->dsn, s->env, 3, 1};
        int rc = s->tried ? MNEMO_UNAVAILABLE
                          : pg_connect(&t, PGCONN_STATEMENT_TIMEOUT_MS, &s->c, &err);
        s->tried = 1;
        if (!rc)
            *out = s->c;
        else
            core_error(m, rc, "%s", err.data ? err.data : "PostgreSQL: connection lost");
        buf_cleanup(&err);
        return rc;
    }
    state_clear(s);
    buf err;
    buf_init(&err, 0);
    int rc = pgconn_connect(m, 1, PGCONN_STATEMENT_TIMEOUT_MS, &s->c, &err);
    if (rc) {
        rc = core_error(m, rc, "%s", err.data ? err.data : "cannot connect to PostgreSQL");
        buf_cleanup(&err);
        return rc;
    }
    buf_cleanup(&err);
    *out = s->c;
    *fresh = 1;
    return MNEMO_OK;
}

int pgconn_replica_open(mnemo *m, const char *dsn, struct pgstate **io, buf *err)
{
    struct pgstate *s = *io;
    if (s && s->c && pg_ok(s->c))
        return MNEMO_OK;
    if (!s && !(s = *io = calloc(1, sizeof *s)))
        return MNEMO_NOMEM;
    state_clear(s);
    s->replica = 1;
    if (!(s->dsn = strdup(dsn)))
        return MNEMO_NOMEM;
    return pgconn_connect_to(m, dsn, 0, PGCONN_STATEMENT_TIMEOUT_MS, &s->c, err);
}

pg_conn *pgconn_state_conn(const struct pgstate *s) { return s ? s->c : NULL; }

void pgconn_state_free(struct pgstate *s)
{
    if (!s)
        return;
    state_clear(s);
    free(s);
}

void pgconn_disconnect(mnemo *m)
{
    if (!m || !PGB(m) || !PGB(m)->conn)
        return;
    state_clear(PGB(m)->conn);
    free(PGB(m)->conn);
    PGB(m)->conn = NULL;
}
