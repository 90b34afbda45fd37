/* pgstore.c - placeholder while the PostgreSQL backend is being written. */
#include "pgstore.h"

#include "core.h"
#include "pgschema.h"

const char *const pgstore_ddl[] = {"CREATE TABLE IF NOT EXISTS mnemo_files(tenant text NOT NULL)", NULL};

int pgstore_sync(mnemo *m, const mnemo_sync_opts *opts, mnemo_sync_stats *stats)
{
    (void)m;
    (void)opts;
    (void)stats;
    return core_error(m, MNEMO_UNAVAILABLE, "PostgreSQL backend: not built yet");
}

int pgstore_search(mnemo *m, const char *query, const mnemo_search_opts *opts, mnemo_results **out)
{
    (void)m;
    (void)query;
    (void)opts;
    (void)out;
    return core_error(m, MNEMO_UNAVAILABLE, "PostgreSQL backend: not built yet");
}

int pgstore_get(mnemo *m, const char *path, int from, int lines, mnemo_excerpt *out)
{
    (void)m;
    (void)path;
    (void)from;
    (void)lines;
    (void)out;
    return core_error(m, MNEMO_UNAVAILABLE, "PostgreSQL backend: not built yet");
}

int pgstore_status_json(mnemo *m, int deep, char **out)
{
    (void)m;
    (void)deep;
    (void)out;
    return core_error(m, MNEMO_UNAVAILABLE, "PostgreSQL backend: not built yet");
}

int pgstore_recall_triggers(mnemo *m, const char *message, char **out)
{
    (void)m;
    (void)message;
    (void)out;
    return core_error(m, MNEMO_UNAVAILABLE, "PostgreSQL backend: not built yet");
}

void pgstore_close(mnemo *m) { (void)m; }
