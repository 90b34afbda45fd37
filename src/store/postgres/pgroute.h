/*
 * pgroute.h - read replicas: which PostgreSQL server each operation of
 * the backend goes to.
 *
 * With config store.readDsns, reads (search, get, listings, recall,
 * status, export) go to a streaming replica and writes (sync, memory
 * writes, migrations) to the primary (store.dsn). A process sees its own
 * writes: after each write the primary's WAL position is remembered, and
 * a read waits (at most store.replicaWaitMs) for a replica to have
 * replayed it, else reads from the primary. A replica that cannot be
 * reached, whose schema is behind, or that lags past store.replicaMaxLagMs
 * is skipped with one warning on stderr, and tried again after
 * store.replicaRetryMs. A read that loses its replica runs again on the
 * next server; a read that loses the primary runs on a replica.
 *
 * Without readDsns every call here returns at once and the backend uses
 * the primary alone, as before.
 */
#ifndef MNEMO_PGROUTE_H
#define MNEMO_PGROUTE_H

#include <jansson.h>

#include "mnemo.h"

/* Before a read: chooses its server (PGB(m)->read: a replica's state, or
 * NULL for the primary). Nested calls keep the outer choice. */
void pgroute_read_begin(mnemo *m);

/* After the read ended with RC: 1 when it should run again because its
 * server failed under it (the route then points to another one), else 0
 * (the read is over). Pairs with pgroute_read_begin. */
int pgroute_read_again(mnemo *m, int rc);

/* Around a write: on the primary; afterwards its WAL position is what
 * later reads of this process wait for. An unreachable primary's error
 * names it. Returns RC. */
void pgroute_write_begin(mnemo *m);
int pgroute_write_end(mnemo *m, int rc);

/* Adds "reads" to the status object ROOT when replicas are configured:
 * where reads go, each server's state and what the last read did. */
void pgroute_status(mnemo *m, json_t *root);

/* Frees the routing state and the replicas' connections. */
void pgroute_close(mnemo *m);

#endif
