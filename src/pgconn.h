/*
 * pgconn.h - the PostgreSQL connection and tenant of a handle, shared by
 * the backend (pgschema.c, pgstore.c, pgmem.c) and the search of an
 * existing table (pgsource.c).
 */
#ifndef MNEMO_PGCONN_H
#define MNEMO_PGCONN_H

#include "mnemo.h"
#include "pg.h"
#include "util/buf.h"

/* Connects to the configured server (store.dsn, pgEnvFile): read-only
 * unless WRITABLE, statements limited to STATEMENT_TIMEOUT_MS. */
int pgconn_connect(mnemo *m, int writable, int statement_timeout_ms, pg_conn **out, buf *err);

/* The tenant of M's rows: config tenant, else "<host>:<workspace>". */
const char *pgconn_tenant(mnemo *m);

#endif
