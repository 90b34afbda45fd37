/*
 * pgconn.c - what every PostgreSQL user of the handle needs (see pgconn.h):
 * a connection to the configured server, and the tenant its rows carry.
 */
#include "store/postgres/pgconn.h"

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
