/* pgmem.c - placeholder while the PostgreSQL backend is being written. */
#include "pgmem.h"

#include "core.h"
#include "pgschema.h"

const char *const pgmem_ddl[] = {"CREATE TABLE IF NOT EXISTS mnemo_memories(tenant text NOT NULL)", NULL};

int pgmem_add(mnemo *m, const char *record, char **out)
{
    (void)m;
    (void)record;
    (void)out;
    return core_error(m, MNEMO_UNAVAILABLE, "PostgreSQL backend: not built yet");
}

int pgmem_update(mnemo *m, const char *id, const char *changes, char **out)
{
    (void)m;
    (void)id;
    (void)changes;
    (void)out;
    return core_error(m, MNEMO_UNAVAILABLE, "PostgreSQL backend: not built yet");
}

int pgmem_delete(mnemo *m, const char *id)
{
    (void)m;
    (void)id;
    return core_error(m, MNEMO_UNAVAILABLE, "PostgreSQL backend: not built yet");
}

int pgmem_purge(mnemo *m, const char *id, size_t *purged)
{
    (void)m;
    (void)id;
    (void)purged;
    return core_error(m, MNEMO_UNAVAILABLE, "PostgreSQL backend: not built yet");
}

int pgmem_get(mnemo *m, const char *id, char **out)
{
    (void)m;
    (void)id;
    (void)out;
    return core_error(m, MNEMO_UNAVAILABLE, "PostgreSQL backend: not built yet");
}

int pgmem_confirm(mnemo *m, const char *id, char **out)
{
    (void)m;
    (void)id;
    (void)out;
    return core_error(m, MNEMO_UNAVAILABLE, "PostgreSQL backend: not built yet");
}

int pgmem_history(mnemo *m, const char *id, char **out)
{
    (void)m;
    (void)id;
    (void)out;
    return core_error(m, MNEMO_UNAVAILABLE, "PostgreSQL backend: not built yet");
}

int pgmem_list(mnemo *m, const char *options, char **out)
{
    (void)m;
    (void)options;
    (void)out;
    return core_error(m, MNEMO_UNAVAILABLE, "PostgreSQL backend: not built yet");
}

int pgmem_search(mnemo *m, const char *query, const char *options, char **out)
{
    (void)m;
    (void)query;
    (void)options;
    (void)out;
    return core_error(m, MNEMO_UNAVAILABLE, "PostgreSQL backend: not built yet");
}

int pgmem_recall(mnemo *m, const char *options, char **out)
{
    (void)m;
    (void)options;
    (void)out;
    return core_error(m, MNEMO_UNAVAILABLE, "PostgreSQL backend: not built yet");
}

int pgmem_export(mnemo *m, mnemo_write_fn write, void *ud, size_t *count)
{
    (void)m;
    (void)write;
    (void)ud;
    (void)count;
    return core_error(m, MNEMO_UNAVAILABLE, "PostgreSQL backend: not built yet");
}

int pgmem_import(mnemo *m, const char *jsonl, size_t len, size_t *imported, size_t *skipped)
{
    (void)m;
    (void)jsonl;
    (void)len;
    (void)imported;
    (void)skipped;
    return core_error(m, MNEMO_UNAVAILABLE, "PostgreSQL backend: not built yet");
}

void pgmem_close(mnemo *m) { (void)m; }
