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
        else if (kind == BE_PGNATIVE)
            pg_native_start(&srv);
        else
            pglite_start(&srv);
        started = 1;
    }
    return &srv;
}

const char *be_store(void) { return kind == BE_SQLITE ? "sqlite" : pg_url(be_server()); }

mnemo *be_open(const char *ws, ...)
{
    /* The store setting first: a test may still name another. */
    char store[512];
    snprintf(store, sizeof store, "store=%s", be_store());
    va_list ap;
    va_start(ap, ws);
    mnemo *m = test_openv(ws, "db.sqlite", store, ap);
    va_end(ap);
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
