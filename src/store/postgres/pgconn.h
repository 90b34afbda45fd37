/*
 * pgconn.h - the PostgreSQL backend's state on a handle, its connection
 * and tenant, shared by the backend's files (pgschema.c, pgstore.c,
 * pgmem.c) and, for the connection, the search of an existing table
 * (pgsource.c).
 */
#ifndef MNEMO_PGCONN_H
#define MNEMO_PGCONN_H

#include "mnemo.h"
#include "store/postgres/pg.h"
#include "text/tok.h"
#include "util/buf.h"

/* The PostgreSQL backend's state of a handle (PGB(m), in m->store), made
 * by the backend's open and freed by its close (pgback.c), each part by
 * the file named. */
typedef struct pgback {
    struct pgstate *conn;    /* the backend's connection to the primary (pgschema.c) */
    struct pgstate *read;    /* a replica's, while a read runs there (pgroute.c); else NULL */
    struct pgroute *route;   /* the read replicas and the routing's state (pgroute.c) */
    struct pgstore *files;   /* the backend's chunk side (pgstore.c) */
    struct pgmem *mem;       /* the backend's memory side (pgmem.c) */
    char *tenant;            /* the default tenant (pgconn_tenant), built on first use */
} pgback;

#define PGB(m) ((pgback *)(m)->store)

/* PGB(m), made if needed; NULL when out of memory. */
pgback *pgconn_state(mnemo *m);

/* Frees PGB(m) itself (its parts are freed by their owners first). */
void pgconn_close(mnemo *m);

/* Connects to the configured server (store.dsn, pgEnvFile): read-only
 * unless WRITABLE, statements limited to STATEMENT_TIMEOUT_MS. */
int pgconn_connect(mnemo *m, int writable, int statement_timeout_ms, pg_conn **out, buf *err);

/* The same to DSN (a read replica's) with the configured pgEnvFile. */
int pgconn_connect_to(mnemo *m, const char *dsn, int writable, int statement_timeout_ms,
                      pg_conn **out, buf *err);

/* Copies of what pgconn_connect connects with (the primary's DSN, the env
 * file's path, "" for none), for a connection made where the
 * configuration is not at hand (pg_connect on another thread). */
int pgconn_primary_target(mnemo *m, char **dsn, char **env_file);

/* The tenant of M's rows: config tenant, else "<host>:<workspace>". */
const char *pgconn_tenant(mnemo *m);

/* The query tokenizer: PostgreSQL's rows are tokenized with the configured
 * language (a sync re-tokenizes a tenant indexed with another one). */
int pgconn_qtok(mnemo *m, tok **out);

#endif
