/*
 * mfilter.c - compiling the memory filter language to SQL (see mfilter.h).
 */
#include "mfilter.h"

#include <stdlib.h>
#include <string.h>

#include "mnemo.h"

void mfilter_init(mfilter *f)
{
    memset(f, 0, sizeof *f);
    buf_init(&f->sql, 1 << 20);
}

void mfilter_cleanup(mfilter *f)
{
    for (size_t i = 0; i < f->nargs; i++)
        free(f->args[i].text);
    free(f->args);
    buf_cleanup(&f->sql);
    memset(f, 0, sizeof *f);
}

int mfilter_compile(const char *json, const char *alias, mfilter *f, char *err, size_t errlen)
{
    (void)json;
    (void)alias;
    (void)err;
    (void)errlen;
    return buf_puts(&f->sql, "1");
}

int mfilter_bind(const mfilter *f, sqlite3_stmt *st, int first)
{
    (void)f;
    (void)st;
    (void)first;
    return SQLITE_OK;
}

int mfilter_register(sqlite3 *db)
{
    (void)db;
    return SQLITE_OK;
}
