/*
 * backend.c - the public entry points that touch stored data, each a call
 * through the handle's backend (backend.h), and what both PostgreSQL users
 * (the backend and the existing-table search) need to connect.
 */
#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "core.h"
#include "pgmem.h"
#include "pgschema.h"
#include "pgstore.h"

const backend_ops backend_sqlite = {
    "sqlite",
    lite_sync,
    lite_search,
    lite_get,
    lite_status_json,
    lite_recall_triggers,
    lite_memory_add,
    lite_memory_update,
    lite_memory_delete,
    lite_memory_purge,
    lite_memory_get,
    lite_memory_confirm,
    lite_memory_history,
    lite_memory_list,
    lite_memory_search,
    lite_memory_recall,
    lite_memory_export,
    lite_memory_import,
    lite_memory_recover,
    NULL,
};

static void pg_close_all(mnemo *m)
{
    pgstore_close(m);
    pgmem_close(m);
}

const backend_ops backend_postgres = {
    "postgres",
    pgstore_sync,
    pgstore_search,
    pgstore_get,
    pgstore_status_json,
    pgstore_recall_triggers,
    pgmem_add,
    pgmem_update,
    pgmem_delete,
    pgmem_purge,
    pgmem_get,
    pgmem_confirm,
    pgmem_history,
    pgmem_list,
    pgmem_search,
    pgmem_recall,
    pgmem_export,
    pgmem_import,
    NULL,
    pg_close_all,
};

const backend_ops *backend_select(const mnemo *m)
{
    json_t *st = json_loads(cfg_str(m->cfg, CFG_STORE), 0, NULL);
    const char *b = json_string_value(json_object_get(st, "backend"));
    int pg = b && !strcmp(b, "postgres") && !*cfg_str(m->cfg, CFG_SOURCE_TABLE);
    json_decref(st);
    return pg ? &backend_postgres : &backend_sqlite;
}

int backend_pg_connect(mnemo *m, int writable, int statement_timeout_ms, pg_conn **out, buf *err)
{
    json_t *st = json_loads(cfg_str(m->cfg, CFG_STORE), 0, NULL);
    const char *dsn = json_string_value(json_object_get(st, "dsn"));
    /* The env file: ~/ is the home folder, a relative path is in the
     * workspace. */
    const char *ef = cfg_str(m->cfg, CFG_PG_ENV_FILE), *home = getenv("HOME");
    buf path;
    buf_init(&path, 8192);
    if (ef[0] == '~' && ef[1] == '/' && home)
        buf_printf(&path, "%s/%s", home, ef + 2);
    else if (*ef && ef[0] != '/')
        buf_printf(&path, "%s/%s", m->workspace, ef);
    else
        buf_puts(&path, ef);
    pg_target t = {dsn ? dsn : "", path.data ? path.data : "", 3, writable};
    int rc = buf_err(&path) ? MNEMO_NOMEM : pg_connect(&t, statement_timeout_ms, out, err);
    buf_cleanup(&path);
    json_decref(st);
    return rc;
}

const char *backend_tenant(mnemo *m)
{
    const char *t = cfg_str(m->cfg, CFG_TENANT);
    if (*t)
        return t;
    if (!m->tenant) {
        char host[256] = "localhost";
        if (gethostname(host, sizeof host - 1) != 0)
            snprintf(host, sizeof host, "localhost");
        host[sizeof host - 1] = 0;
        size_t n = strlen(host) + strlen(m->workspace) + 2;
        if ((m->tenant = malloc(n)))
            snprintf(m->tenant, n, "%s:%s", host, m->workspace);
    }
    return m->tenant ? m->tenant : "default";
}

/* The public API. */

int mnemo_sync(mnemo *m, const mnemo_sync_opts *opts, mnemo_sync_stats *stats)
{
    return m->be->sync(m, opts, stats);
}

int mnemo_search(mnemo *m, const char *query, const mnemo_search_opts *opts, mnemo_results **out)
{
    return m->be->search(m, query, opts, out);
}

int mnemo_get(mnemo *m, const char *path, int from, int lines, mnemo_excerpt *out)
{
    return m->be->get(m, path, from, lines, out);
}

int mnemo_status_json(mnemo *m, int deep, char **out) { return m->be->status_json(m, deep, out); }

int mnemo_recall_triggers(mnemo *m, const char *message, char **out)
{
    return m->be->recall_triggers(m, message, out);
}

int mnemo_memory_add(mnemo *m, const char *record, char **out)
{
    return m->be->memory_add(m, record, out);
}

int mnemo_memory_update(mnemo *m, const char *id, const char *changes, char **out)
{
    return m->be->memory_update(m, id, changes, out);
}

int mnemo_memory_delete(mnemo *m, const char *id) { return m->be->memory_delete(m, id); }

int mnemo_memory_purge(mnemo *m, const char *id, size_t *purged)
{
    return m->be->memory_purge(m, id, purged);
}

int mnemo_memory_get(mnemo *m, const char *id, char **out) { return m->be->memory_get(m, id, out); }

int mnemo_memory_confirm(mnemo *m, const char *id, char **out)
{
    return m->be->memory_confirm(m, id, out);
}

int mnemo_memory_history(mnemo *m, const char *id, char **out)
{
    return m->be->memory_history(m, id, out);
}

int mnemo_memory_list(mnemo *m, const char *options, char **out)
{
    return m->be->memory_list(m, options, out);
}

int mnemo_memory_search(mnemo *m, const char *query, const char *options, char **out)
{
    return m->be->memory_search(m, query, options, out);
}

int mnemo_memory_recall(mnemo *m, const char *options, char **out)
{
    return m->be->memory_recall(m, options, out);
}

int mnemo_memory_export(mnemo *m, mnemo_write_fn write, void *ud, size_t *count)
{
    return m->be->memory_export(m, write, ud, count);
}

int mnemo_memory_import(mnemo *m, const char *jsonl, size_t len, size_t *imported,
                        size_t *skipped)
{
    return m->be->memory_import(m, jsonl, len, imported, skipped);
}

int mnemo_memory_recover(mnemo *m, const char *path, char **out)
{
    *out = NULL;
    if (!m->be->memory_recover)
        return core_error(m, MNEMO_INVALID,
                          "memory recover writes to a SQLite memory store; on %s, recover into "
                          "one (--set store.backend=sqlite) and move the memories with memory "
                          "export and memory import",
                          m->be->name);
    return m->be->memory_recover(m, path, out);
}
