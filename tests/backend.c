/*
 * backend.c - running one test body against each storage backend (see
 * backend.h).
 */
#include "backend.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static be_kind_t kind;
static pg_server srv;
static int started;

be_kind_t be_kind(void) { return kind; }

int be_has_vectors(void) { return kind != BE_PG; }

pg_server *be_server(void)
{
    if (kind == BE_SQLITE)
        return NULL;
    if (!started) {
        if (kind == BE_PG)
            pg_debian_start(&srv);
        else
            pglite_start(&srv);
        started = 1;
    }
    return &srv;
}

const char *be_store(void) { return kind == BE_SQLITE ? "sqlite" : pg_url(be_server()); }

mnemo *be_open(const char *ws, ...)
{
    mnemo_config *cfg;
    ASSERT_OK(mnemo_config_new(&cfg));
    char *err = NULL;
    if (mnemo_config_set(cfg, "workspace", test_path(ws), "test", &err) ||
        mnemo_config_set(cfg, "db", test_path("db.sqlite"), "test", &err) ||
        mnemo_config_set(cfg, "store", be_store(), "test", &err))
        test_fail(__FILE__, __LINE__, "config: %s", err);
    va_list ap;
    va_start(ap, ws);
    const char *kv;
    while ((kv = va_arg(ap, const char *)) != NULL) {
        const char *eq = strchr(kv, '=');
        char key[128];
        if (!eq)
            test_fail(__FILE__, __LINE__, "config %s: expected key=value", kv);
        snprintf(key, sizeof key, "%.*s", (int)(eq - kv), kv);
        if (mnemo_config_set(cfg, key, eq + 1, "test", &err))
            test_fail(__FILE__, __LINE__, "config %s: %s", kv, err);
    }
    va_end(ap);
    mnemo *m;
    int rc = mnemo_open(cfg, &m);
    mnemo_config_free(cfg);
    if (rc)
        test_fail(__FILE__, __LINE__, "mnemo_open: %s", mnemo_errmsg(m));
    return m;
}

void be_run(be_kind_t k, void (*fn)(void))
{
    kind = k;
    started = 0;
    fn();
    if (started)
        pg_stop(&srv);
}
