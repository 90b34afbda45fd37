/*
 * pgconn.h - the PostgreSQL backend's state on a handle: its connections
 * (the primary's, a replica's, each with its side connection) and tenant,
 * shared by the backend's files and, for connecting, the search of an
 * existing table (pgsource.c). Migrating a new connection is pgschema.c's;
 * statements on it are pgquery.c's.
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
    struct pgstate *conn;    /* the backend's connection to the primary (pgconn.c) */
    struct pgstate *read;    /* a replica's, while a read runs there (pgroute.c); else NULL */
    struct pgroute *route;   /* the read replicas and the routing's state (pgroute.c) */
    struct pgstore *files;   /* the backend's chunk side (pgstore.c) */
    struct pgmem *mem;       /* the backend's memory side (pgmem.c) */
    char *tenant;            /* the default tenant (pgconn_tenant), built on first use */
} pgback;

#define PGB(m) ((pgback *)(m)->store)

#define PGCONN_STATEMENT_TIMEOUT_MS 60000 /* a connection's statement_timeout */
#define PGCONN_QUERY_TIMEOUT_MS 60000     /* the deadline of one statement */
#define PGCONN_VEC_TABLES 8               /* vector tables remembered per connection */

/* One server's connection and what is known on it: the primary's
 * (PGB(m)->conn) or a replica's (pgroute.c). */
struct pgstate {
    pg_conn *c;
    int replica;   /* read-only: never migrated, nothing created */
    int schema_ok; /* a replica's schema version is this build's */
    int vec_checked, vec_ok;
    char vec_why[512];
    char vec_tables[PGCONN_VEC_TABLES][64]; /* created or seen on this connection */
    int nvec;
    int slot; /* pgquery_slot's, 0 until claimed */
    /* The side connection (pgquery_side): to the same server, read-only. */
    pg_conn *side;
    char *dsn;      /* a replica's DSN (NULL: the configured primary) */
    int side_asks;  /* times it was asked for */
    int side_off;   /* not to be opened again on this connection */
    /* A worker's (pgquery_worker): connected once, on first use, to the
     * primary's DSN (dsn) with the env file at env; never again. */
    int fixed, tried;
    char *env;
};

/* The state the current operation uses: a replica's during a read routed
 * there, else the primary's. */
struct pgstate *pgconn_cur(mnemo *m);

/* The primary's connection (PGB(m)->conn), connected if it is not (again
 * after the server went away; a worker's once only): *FRESH is 1 when it
 * was just made, for pgschema_primary to migrate. *OUT belongs to the
 * handle. Errors on the handle (credentials redacted): MNEMO_UNAVAILABLE
 * when the server cannot be reached. */
int pgconn_open(mnemo *m, pg_conn **out, int *fresh);

/* Runs SQL with text parameters on C (PREPARED: pg_query_prepared, SQL
 * stays at its address while the handle lives) with the default deadline;
 * on failure records "WHAT: <server message>" on the handle. *OUT may be
 * NULL when the rows are not wanted. */
int pgconn_query(mnemo *m, pg_conn *c, int prepared, const char *what, const char *sql, int n,
                 const char *const *params, pg_rows **out);

/* Records "PostgreSQL WHAT: <ERR>" on the handle and empties ERR; RC. */
int pgconn_fail(mnemo *m, int rc, const char *what, buf *err);

/* A read replica's state (*IO, made if NULL): connected read-only to DSN
 * unless it still is. MNEMO_UNAVAILABLE when it cannot be reached, the
 * reason (redacted) in ERR. */
int pgconn_replica_open(mnemo *m, const char *dsn, struct pgstate **io, buf *err);
pg_conn *pgconn_state_conn(const struct pgstate *s);
void pgconn_state_free(struct pgstate *s);

/* Frees the connection state kept on the handle. Accepts a handle without. */
void pgconn_disconnect(mnemo *m);

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
