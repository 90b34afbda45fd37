/*
 * pgback.c - the PostgreSQL backend's table of operations (backend.h):
 * files and chunks in pgstore.c, memories in pgmem.c, its state made here
 * and freed part by part by the files that own the parts (pgint.h, pgconn.c). With
 * read replicas (pgroute.c), the dispatcher routes each read to the server
 * the routing chooses, again to another one when theirs fails under it;
 * writes to the primary. Export is not routed: its output is written as it
 * is read, so it cannot run again.
 */
#include "engine/backend.h"
#include "engine/core.h"
#include "engine/search.h"
#include "store/postgres/pgint.h"

static int pgback_open(mnemo *m)
{
    return pgconn_state(m) ? MNEMO_OK : core_error(m, MNEMO_NOMEM, "out of memory");
}

static void pgback_close(mnemo *m)
{
    pgroute_close(m);
    pgstore_close(m);
    pgmpost_wait(m); /* a merge of the memories' index on its thread */
    pgmem_close(m);
    pgconn_disconnect(m);
    pgconn_close(m);
}

static void pgback_route(mnemo *m, int write)
{
    if (write)
        pgroute_write_begin(m);
    else
        pgroute_read_begin(m);
}

static int pgback_routed(mnemo *m, int write, int *rc)
{
    if (write) {
        *rc = pgroute_write_end(m, *rc);
        return 0;
    }
    return pgroute_read_again(m, *rc);
}

const backend_ops backend_postgres = {
    "postgres",
    pgback_open,
    pgconn_qtok,
    &pgsync_store,
    search_notes,
    &pgsearch_notes,
    pgstore_get,
    pgstore_status_json,
    pgstore_index_count,
    pgstore_files,
    pgstore_recall_triggers,
    &pgmwrite_store,
    &pgmsearch_searcher,
    NULL,
    pgback_close,
    pgback_route,
    pgback_routed,
};
