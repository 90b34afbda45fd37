/*
 * pgquery.h - statements on the handle's PostgreSQL connection (the one
 * pgschema_conn gives: a replica's during a read routed there, else the
 * primary's), the side connection beside it, the worker handle for
 * another thread, and the writer slot.
 */
#ifndef MNEMO_PGQUERY_H
#define MNEMO_PGQUERY_H

#include "mnemo.h"
#include "store/postgres/pg.h"

/* Runs SQL with text parameters on the handle's connection with the
 * default deadline; on failure records "WHAT: <server message>" on the
 * handle. *OUT may be NULL when the rows are not wanted. */
int pgquery_q(mnemo *m, const char *what, const char *sql, int n, const char *const *params,
              pg_rows **out);

/* pgquery_q for a statement run often (pg_query_prepared: SQL stays at
 * its address while the handle lives). */
int pgquery_qp(mnemo *m, const char *what, const char *sql, int n, const char *const *params,
               pg_rows **out);

/* Sends SQL to the primary without waiting (pg_send: PARAMS[i] of
 * LENS[i] bytes in FORMATS[i], NULLs for all text); pgquery_collect
 * takes its answer, recording "WHAT: <message>" on failure, and must come
 * before any other statement on the handle (pgquery_inflight says
 * whether one is on its way). */
int pgquery_send(mnemo *m, const char *what, const char *sql, int n, const char *const *params,
                 const int *lens, const int *formats);
int pgquery_collect(mnemo *m, const char *what, pg_rows **out);
int pgquery_inflight(mnemo *m);

/* A second read-only connection to the server the current operation reads
 * from, for a statement to run beside the handle's own (the vector leg of
 * a hybrid search beside its keyword leg): 1 and *OUT, or 0 when there is
 * none. It is opened on the second ask, so that a handle that reads once
 * (a command) never opens it; not inside a transaction; never on a server
 * that runs every connection in one session (PGlite); and not again after
 * it failed to open or was dropped with OFF (pgquery_side_drop). */
int pgquery_side(mnemo *m, pg_conn **out);

/* Sends SQL (PREPARED: pg_send_prepared, SQL stays at its address; else
 * pg_send) with N text parameters on the side connection C without
 * waiting; pgquery_side_collect takes the answer. Neither records an
 * error on the handle: the caller runs the statement on the handle's own
 * connection instead. A connection lost is closed and not opened again. */
int pgquery_side_send(mnemo *m, pg_conn *c, const char *sql, int prepared, int n,
                      const char *const *params);
int pgquery_side_collect(mnemo *m, pg_conn *c, pg_rows **out);

/* Closes the side connection C (a statement left on it unanswered); OFF:
 * not opened again on this connection. */
void pgquery_side_drop(mnemo *m, pg_conn *c, int off);

/* A handle of its own for work on another thread beside M (a merge of
 * the memories' index): only a writable connection to M's primary (its
 * schema checked through M's), made by its first statement, and M's
 * tenant, no configuration; never connected again once lost (its
 * statements fail). NULL when it cannot be made (inside a transaction, on
 * a server that runs every connection in one session), M's error
 * untouched. What the caller hangs on it (PGB(m)->mem)
 * it frees before pgquery_worker_free. */
mnemo *pgquery_worker(mnemo *m);
void pgquery_worker_free(mnemo *w);

/* The writer slot of the connection, 1..64: the first one no other
 * connection holds, claimed with a session advisory lock on first use and
 * kept while the connection lives (a new connection claims again); when
 * all are taken, one chosen by the server process id. Rows that writers
 * update in every transaction (counters) are kept per slot, so that
 * concurrent writers do not wait for each other's row locks; sharing a
 * slot costs only that wait. */
int pgquery_slot(mnemo *m, int *slot);

#endif
