/*
 * pgschema.h - mnemo's own schema on PostgreSQL: migrations, run on each
 * new connection to the primary, and whether pgvector is there.
 *
 * Every table has a tenant column first in its primary key (usable as a
 * Citus distribution column; see docs/scaling.md). Migrations are numbered
 * and recorded in mnemo_migrations; a process that finds the database behind
 * applies the missing ones in one transaction under an advisory lock, so
 * several processes starting at once migrate exactly once. A database newer
 * than this build is refused (MNEMO_CORRUPT), never downgraded.
 *
 *   1  files and chunks (pgstore.c: pgstore_ddl)
 *   2  memories and their history (pgmem.c: pgmem_ddl)
 *   3  document frequencies of the chunks' lexemes (pgstore.c: pgstore_ddl3)
 *   4  memories' BM25 statistics: live memories and their tokens per tenant,
 *      document frequency per lexeme, created and backfilled (pgmem.c:
 *      pgmem_ddl4)
 *   5  per lexeme of the chunks, the largest frequency and the shortest
 *      chunk holding it: MaxScore's bounds (pgstore.c: pgstore_ddl5)
 *   6  the chunks' inverted index: posting segments per lexeme, the merged
 *      mark and the dead chunks and the live generation of
 *      each tenant's files and chunks (pgstore.c: pgstore_ddl6); the index
 *      is filled by the next sync
 *   7  the memories' statistics in slots, one per concurrent writer, summed
 *      when read (pgmem.c: pgmem_ddl7)
 *   8  an index of each scope's live memories in creation order, which
 *      episodes read their neighbours by, and the memories' inverted index:
 *      posting segments per scope and lexeme, the merged mark, the dead
 *      (pgmem.c: pgmem_ddl8, pgmpost.c); the index is filled by a later
 *      write
 *   9  the chunks' GIN index and foreign key dropped (the postings find
 *      every query's rows; a file's statements remove its chunks), chunk
 *      rows kept whole up to 8 KB, the postings' lexemes in the C
 *      collation (pgstore.c: pgstore_ddl9)
 *  10  a chunk's vectors are its parts' (chunk_parts): the chunk vector
 *      tables key their rows by chunk and part (pgstore.c: pgstore_ddl10)
 *  11  the memories' statistics count the memories the memories' index
 *      merged, not each add (an add writes no counter row): counted again
 *      (pgmem.c: pgmem_ddl11)
 *  12  the memories' GIN index keeps a smaller pending list (pgmem.c:
 *      pgmem_ddl12)
 *
 * Vectors live in tables per dimension count, created on first use when the
 * vector extension is available: mnemo_chunk_vec_<d> (tenant, chunk_id,
 * part, model, embedding vector(d)) and mnemo_memory_vec_<d> (tenant,
 * memory_id, model, embedding), each with an HNSW index for cosine
 * distance, and mnemo_calib_vec_<d> (tenant, identity, i, embedding): the
 * fixed texts vector scores are measured against (engine/calib.h).
 */
#ifndef MNEMO_PGSCHEMA_H
#define MNEMO_PGSCHEMA_H

#include "mnemo.h"
#include "store/postgres/pg.h"

#define PGSCHEMA_VERSION 12

/* The DDL of each migration, defined by the module that owns the tables. */
extern const char *const pgstore_ddl[]; /* NULL-terminated statements */
extern const char *const pgmem_ddl[];
extern const char *const pgmem_ddl4[];
extern const char *const pgstore_ddl3[];
extern const char *const pgstore_ddl5[];
extern const char *const pgstore_ddl6[];
extern const char *const pgmem_ddl7[];
extern const char *const pgmem_ddl8[];
extern const char *const pgstore_ddl9[];
extern const char *const pgstore_ddl10[];
extern const char *const pgmem_ddl11[];
extern const char *const pgmem_ddl12[];

/* 1 when pgvector is usable on the connection (CREATE EXTENSION IF NOT
 * EXISTS vector is tried once per connection); else 0 with the reason in
 * *WHY (static or handle-owned text). */
int pgschema_vectors(mnemo *m, const char **why);

/* Creates (if needed) the vector table of KIND ("chunk" or "memory", or
 * "calib": the fixed texts' vectors of engine/calib.h, no index) for DIMS
 * dimensions with its HNSW index, and writes its name into NAME
 * (mnemo_<kind>_vec_<dims>). Requires pgschema_vectors. Runs its own
 * transaction: call it outside one. With DEFERRED, an empty table is left
 * without its index (*DEFERRED 1): the caller loads it, then builds the
 * index with pgschema_vec_index; a table whose load stopped before that
 * gets its index here, from the rows it holds, the next time. */
int pgschema_vec_table(mnemo *m, const char *kind, int dims, char *name, size_t size,
                       int *deferred);
int pgschema_vec_index(mnemo *m, const char *name);

/* The connection the current operation's statements run on: a replica's
 * during a read routed there (pgroute.c), else the handle's writable
 * connection, connected (pgconn_open) and migrated on first use and again
 * after the server went away. *OUT belongs to the handle. Errors
 * (with the message on the handle, credentials redacted): MNEMO_UNAVAILABLE
 * when the server cannot be reached, MNEMO_CORRUPT for a schema newer than
 * this build, MNEMO_DB otherwise. */
int pgschema_conn(mnemo *m, pg_conn **out);

/* The primary's connection whatever the current route (pgschema_conn
 * gives a replica's during a read routed there). */
int pgschema_primary(mnemo *m, pg_conn **out);

struct pgstate;
/* Checks a replica's schema version (never migrates it): MNEMO_OK when it
 * is this build's (then not asked again on this connection),
 * MNEMO_UNAVAILABLE when behind (the primary's migration not replayed
 * yet, or no mnemo schema at all), MNEMO_CORRUPT when newer; the reason
 * in ERR. */
int pgschema_replica_schema(mnemo *m, struct pgstate *s, buf *err);

#endif
