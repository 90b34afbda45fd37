/*
 * pgint.h - what the files of the PostgreSQL backend share, one section per
 * file (a comment naming the file, then its declarations), each section
 * after the ones whose types it uses: libpq and the text forms (pg.c,
 * pgtext.c), the connection (pgconn.c, pgschema.c, pgquery.c, pgroute.c),
 * MaxScore and the inverted index (pgmaxscore.c, pgpost.c), the files and
 * chunks (pgstore.c, pgnpost.c, pgsync.c, pgkeyword.c, pgsearch.c), the
 * memories (pgmem.c, pgmpost.c, pgmwrite.c, pgmsearch.c), and the two
 * whose declarations are the engine's (pgsource.c, pgback.c). Not for use
 * outside src/store/postgres: the engine reaches the backend through
 * engine/backend.h.
 */
#ifndef MNEMO_PGINT_H
#define MNEMO_PGINT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "embed/embed.h"
#include "engine/calib.h"
#include "engine/core.h"
#include "engine/memory.h"
#include "mnemo.h"
#include "text/bm25.h"
#include "text/chunk.h"
#include "text/dsn.h"
#include "text/mfilter.h"
#include "text/query.h"
#include "text/tok.h"
#include "util/buf.h"

/* ======================================================================
 * pg.c - PostgreSQL connections: libpq loaded with dlopen on first use (like
 * libcurl in curl_dl.h: a process that never talks to PostgreSQL never pays
 * for loading it), connection settings from the DSN, an env file of
 * KEY=VALUE lines and libpq's own environment, queries with a deadline, and
 * the redaction every message goes through so credentials never reach a log.
 */

typedef struct pg_conn pg_conn;

/* A result set of text values (rows x cols); NULL values are "" with
 * pg_isnull() true. */
typedef struct pg_rows pg_rows;

/* Where to connect: DSN (a postgres:// URI or "key=value ..." string, may be
 * "" to leave it to libpq's PG* environment) and ENV_FILE (KEY=VALUE lines,
 * "" for none). CONNECT_TIMEOUT_S applies unless the DSN, the env file or
 * PGCONNECT_TIMEOUT sets one. */
typedef struct pg_target {
    const char *dsn;
    const char *env_file;
    int connect_timeout_s;
    int writable;   /* 0: the session is read-only (default_transaction_read_only) */
} pg_target;

/* Connects. Errors: MNEMO_UNAVAILABLE (libpq missing, server unreachable,
 * authentication), MNEMO_IO / MNEMO_INVALID (env file), with a redacted
 * message in ERR. The session is read-only (default_transaction_read_only)
 * unless T->writable, with STATEMENT_TIMEOUT_MS as its statement timeout. */
int pg_connect(const pg_target *t, int statement_timeout_ms, pg_conn **out, buf *err);
void pg_close(pg_conn *c);

/* 1 while the connection is usable. */
int pg_ok(const pg_conn *c);

/* Runs SQL with N text parameters ($1..$N; values are never spliced into the
 * SQL), waiting at most TIMEOUT_MS for the answer (then the query is
 * cancelled: MNEMO_TIMEOUT). A query error is MNEMO_DB with the server's
 * message (redacted) in ERR. On success *out holds the rows. */
int pg_query(pg_conn *c, const char *sql, int n, const char *const *params, int timeout_ms,
             pg_rows **out, buf *err);

/* pg_query for a statement run often: SQL, which must stay at its address
 * as long as C lives (a string literal or static array), runs as is the
 * first time, is prepared on the connection the next time it runs outside
 * a transaction (parsed and analyzed once; the server may keep a generic
 * plan) and is executed by name from then on, inside transactions too. */
int pg_query_prepared(pg_conn *c, const char *sql, int n, const char *const *params,
                      int timeout_ms, pg_rows **out, buf *err);
/* pg_send for a statement run often (SQL stays at its address as long as C
 * lives): prepared on C first (waiting for that answer, once), then its
 * execution sent without waiting; pg_collect takes the answer. */
int pg_send_prepared(pg_conn *c, const char *sql, int n, const char *const *params,
                     int timeout_ms, buf *err);

/* Sends SQL with N parameters and returns without waiting for the answer,
 * which pg_collect takes (no other query may run on C before it): PARAMS[i]
 * holds LENS[i] bytes in FORMATS[i] (0 text, 1 PostgreSQL's binary form;
 * LENS and FORMATS NULL: all text). The server works on it meanwhile. */
int pg_send(pg_conn *c, const char *sql, int n, const char *const *params, const int *lens,
            const int *formats, buf *err);

/* The answer to pg_send's statement, as pg_query's (TIMEOUT_MS from now). */
int pg_collect(pg_conn *c, int timeout_ms, pg_rows **out, buf *err);

/* 1 while a statement pg_send sent awaits pg_collect. */
int pg_inflight(const pg_conn *c);
size_t pg_nrows(const pg_rows *r);

/* The SQLSTATE of C's last failed query ("40001", "23505" ...), "" when the
 * last query succeeded or failed without reaching the server. */
const char *pg_sqlstate(const pg_conn *c);

/* 1 while C is inside a transaction block (BEGIN without COMMIT yet). */
int pg_in_transaction(const pg_conn *c);

/* Appends V[0..N) as a PostgreSQL text[] literal ({"a","b\"c"}), to be
 * passed as a parameter ($1::text[]), never spliced into SQL. */
void pg_text_array(buf *b, const char *const *v, size_t n);
const char *pg_value(const pg_rows *r, size_t row, int col);
int pg_isnull(const pg_rows *r, size_t row, int col);
void pg_rows_free(pg_rows *r);

/* Appends NAME as an SQL identifier, each dot-separated part double-quoted
 * ("schema"."table"). NAME must have passed dsn_ident_valid. */
void pg_quote_ident(buf *b, const char *name);

/* Parses an env file: KEY=VALUE lines, '#' comments, blank lines, an
 * optional "export " prefix, values optionally in single or double quotes.
 * Calls FN for each pair. MNEMO_IO when the file cannot be read,
 * MNEMO_INVALID (naming the line, never its value) for a malformed line. */
int pg_envfile_parse(const char *path, void (*fn)(void *ud, const char *key, const char *value),
                     void *ud, buf *err);

/* ======================================================================
 * pgtext.c - PostgreSQL's text forms that the backend writes: tsvector and
 * tsquery lexemes, and pgvector literals. One place for each, so that the
 * note index, the memory store and the sourceTable reader agree. And the
 * binary forms of one-dimensional arrays (array_recv's input), which the
 * server takes without parsing text: a sync's large batches go that way.
 */

/* Appends S (N bytes) as a quoted lexeme of tsvector or tsquery input. */
void pgtext_lexeme(buf *b, const char *s, size_t n);

/* Appends V (DIMS floats) as a pgvector literal, [x,y,...], each with the
 * nine significant digits that bring a float back exactly. */
void pgtext_vector_literal(buf *b, const float *v, int dims);

/* Decodes the hex text form of a bytea (S, with or without its "\\x") into
 * OUT, at most CAP bytes. Returns the bytes written, or -1 when S is not
 * hex or would not fit. */
long pgtext_unhex(const char *s, void *out, size_t cap);

/* The numbers of the text form of a float8[] (S, "{0.1,-2e-05,...}")
 * into OUT, at most MAX of them; returns how many. */
size_t pgtext_float_array(const char *s, double *out, size_t max);

/* The element types of the binary arrays (pg_type's fixed oids). */
enum { PG_INT8OID = 20, PG_INT4OID = 23, PG_TEXTOID = 25, PG_BYTEAOID = 17,
       PG_FLOAT8OID = 701, PG_TSVECTOROID = 3614 };

/* A one-dimensional array in binary form being built: pgtext_barr_start, then
 * its elements, then pgtext_barr_end; the bytes are B (B.len of them), sent
 * with format 1 as a parameter cast to the element type's array. */
typedef struct pgtext_barr {
    buf b;
    uint32_t n;    /* elements */
    size_t open;   /* where the length of the element being written is */
} pgtext_barr;

void pgtext_barr_init(pgtext_barr *a);
void pgtext_barr_cleanup(pgtext_barr *a);
void pgtext_barr_start(pgtext_barr *a, uint32_t elem_oid);
void pgtext_barr_int4(pgtext_barr *a, int32_t v);
void pgtext_barr_int8(pgtext_barr *a, int64_t v);
void pgtext_barr_float8(pgtext_barr *a, double v);
/* A text or bytea element of N bytes. */
void pgtext_barr_bytes(pgtext_barr *a, const void *p, size_t n);
/* An element written piece by piece between these two (a tsvector's). */
void pgtext_barr_open(pgtext_barr *a);
void pgtext_barr_close(pgtext_barr *a);
/* Ends the array: its element count written into the header. */
void pgtext_barr_end(pgtext_barr *a);

/* Big-endian appends: the binary forms' integers (in place while they fit). */
static inline void pgtext_put16(buf *b, uint16_t v)
{
    unsigned char x[2] = {(unsigned char)(v >> 8), (unsigned char)v};
    if (b->err || b->len + 3 > b->cap || b->len + 2 > b->max) {
        buf_append(b, x, 2);
        return;
    }
    b->data[b->len] = (char)x[0];
    b->data[b->len + 1] = (char)x[1];
    b->len += 2;
    b->data[b->len] = 0;
}

static inline void pgtext_put32(buf *b, uint32_t v)
{
    unsigned char x[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};
    if (b->err || b->len + 5 > b->cap || b->len + 4 > b->max) {
        buf_append(b, x, 4);
        return;
    }
    memcpy(b->data + b->len, x, 4);
    b->len += 4;
    b->data[b->len] = 0;
}

/* ======================================================================
 * pgconn.c - the PostgreSQL backend's state on a handle: its connections
 * (the primary's, a replica's, each with its side connection) and tenant,
 * shared by the backend's files and, for connecting, the search of an
 * existing table (pgsource.c). Migrating a new connection is pgschema.c's;
 * statements on it are pgquery.c's.
 */

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

/* ======================================================================
 * pgschema.c - mnemo's own schema on PostgreSQL: migrations, run on each
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
 *  13  images and audio (multimodal): a media file's MIME type, the
 *      sequence of the media's chunk ids (from PGSTORE_MEDIA_ID_BASE up)
 *      and each tenant's count of media chunks (pgstore.c: pgstore_ddl13)
 *
 * Vectors live in tables per dimension count, created on first use when the
 * vector extension is available: mnemo_chunk_vec_<d> (tenant, chunk_id,
 * part, model, embedding vector(d)) and mnemo_memory_vec_<d> (tenant,
 * memory_id, model, embedding), each with an HNSW index for cosine
 * distance, and mnemo_calib_vec_<d> (tenant, identity, i, embedding): the
 * fixed texts vector scores are measured against (engine/calib.h).
 */

#define PGSCHEMA_VERSION 13

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
extern const char *const pgstore_ddl13[];

/* The chunks of images and audio (multimodal) have ids from here up (a
 * sequence of their own; notes' ids are the identity's, far below), so
 * that the media are a range of ids, as on SQLite. They are found by their
 * vectors and their paths: their rows hold no words (an empty tsvector)
 * and stay out of the postings. PGSTORE_MEDIA_IDS: the same in SQL. */
#define PGSTORE_MEDIA_ID_BASE ((int64_t)1 << 41)
#define PGSTORE_MEDIA_IDS "2199023255552"

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

/* Checks a replica's schema version (never migrates it): MNEMO_OK when it
 * is this build's (then not asked again on this connection),
 * MNEMO_UNAVAILABLE when behind (the primary's migration not replayed
 * yet, or no mnemo schema at all), MNEMO_CORRUPT when newer; the reason
 * in ERR. */
int pgschema_replica_schema(mnemo *m, struct pgstate *s, buf *err);

/* ======================================================================
 * pgquery.c - statements on the handle's PostgreSQL connection (the one
 * pgschema_conn gives: a replica's during a read routed there, else the
 * primary's), the side connection beside it, the worker handle for
 * another thread, and the writer slot.
 */

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

/* ======================================================================
 * pgroute.c - read replicas: which PostgreSQL server each operation of
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

/* ======================================================================
 * pgmaxscore.c - MaxScore over PostgreSQL's GIN index, one driver for the
 * note chunks (pgkeyword.c) and the memories (pgmsearch.c).
 *
 * The caller orders the query's terms (rarest first) and bounds each one's
 * share of a row's score. Rounds read rows through tsqueries: the first
 * round the first terms, each next round the next terms less the rows read
 * already (or, with a full pool, the rows holding a set of unread terms
 * whose bounds may still reach the threshold), until no unread row can
 * reach the results: they are then exactly those of reading every match.
 * What a row scores, what "full" means and what may reach the threshold
 * stay with the caller.
 */

#define PGMS_MAX_TERMS 64

typedef struct pgms {
    int n;                            /* terms, in reading order */
    const char *lex[PGMS_MAX_TERMS];  /* each term's lexeme */
    double ub[PGMS_MAX_TERMS];        /* each term's most to a row's score */
    int first;                        /* terms the first round reads, at least 1 */
    int sets;                         /* whether a round may read sets of unread terms */
    int advance;                      /* whether a round reads as many terms as the threshold needs */
    const char *tail;                 /* tsquery text appended to every round, "" for none */
    /* Reads the rows matching tsquery TSQ; ROUND counts from 0. */
    int (*read)(void *ud, const char *tsq, int round);
    /* Whether the pool is full, its threshold into *THETA. */
    int (*full)(void *ud, double *theta);
    /* Whether a row whose terms' bounds sum to BOUND may reach THETA. */
    int (*reach)(void *ud, double theta, double bound);
    void *ud;
} pgms;

/* Runs the rounds of MS (read's errors are returned). */
int pgmaxscore_run(mnemo *m, const pgms *ms);

/* ======================================================================
 * pgpost.c - the inverted index on PostgreSQL, one module for the notes'
 * chunks (pgnpost.c) and the memories (pgmpost.c): posting lists per
 * tenant, scope and lexeme in compressed segments, the table of postings
 * being written, writing and folding segments, and reading a query's
 * lists document at a time (see pgpost.c).
 *
 * An index says which tables it writes and what its entries hold in a
 * pgpost_table; when it merges, what a scope is, and how a search reads
 * its lists stay with it.
 */

#define PGPOST_MAX_KEY 5 /* key columns of a segment: the scope's, then the lexeme */
#define PGPOST_ROWS 2000 /* documents a page of pgpost_pages holds (its statement's LIMIT) */

/* ----------------------------------------------------------------------
 * Encoding
 * -------------------------------------------------------------------- */

/* One posting: a document (chunk id or memory seq), its length in tokens
 * and the lexeme's frequency in it. */
typedef struct pgposting {
    int64_t id;
    int ntok;
    int tf;
} pgposting;

/* V as a little-endian base-128 varint appended to B; the next varint of
 * *P (before END) into *V, moving *P: 0 when it is cut short. */
void pgpost_put_varint(buf *b, uint64_t v);
int pgpost_get_varint(const unsigned char **p, const unsigned char *end, uint64_t *v);

/* One posting into B after the one of id *LAST (0 before the first). */
void pgpost_put(buf *b, int64_t *last, int64_t id, int tf, int ntok);

/* Moves *P past a posting's bytes after its id (pgpost_table.tail): 0
 * when they are cut short. */
int pgpost_tail(const unsigned char **p, const unsigned char *end);

/* Whether ID is one of the sorted DEAD[0..NDEAD), *AT moving on: the ids
 * asked come in order. */
static inline int pgpost_is_dead(const int64_t *dead, size_t ndead, size_t *at, int64_t id)
{
    while (*at < ndead && dead[*at] < id)
        (*at)++;
    return *at < ndead && dead[*at] == id;
}

/* Appends the postings of segment P[0..N) to *V (growing *CAP), those of
 * the sorted DEAD[0..NDEAD) left out: 1, 0 when the segment is damaged,
 * -1 out of memory. */
int pgpost_decode(const unsigned char *p, size_t n, const int64_t *dead, size_t ndead,
                  pgposting **v, size_t *nv, size_t *cap);

/* A bytea's hex text ("\x0a1b...") decoded into OUT (0: not hex). */
int pgpost_unhex(const char *s, buf *out);

/* Calls FN for each lexeme of tsvector text T ('lex':1,5 'b''c':2) with its
 * unescaped bytes and its number of positions (W is scratch). */
int pgpost_tsv_each(const char *t, buf *w,
                    int (*fn)(void *ud, const char *lex, size_t n, int npos), void *ud);

/* ----------------------------------------------------------------------
 * Postings being written
 * -------------------------------------------------------------------- */

/* Postings being written, by key: the key's columns one after the other,
 * each NUL-terminated (bytes, compared whole). */
typedef struct pgterm {
    char *key; /* NULL: an empty slot */
    size_t klen;
    uint32_t hash;
    long long n;  /* postings in data */
    int64_t last; /* the last id put (pgpost_put) */
    buf data;
} pgterm;

typedef struct pgterms {
    pgterm *t;
    size_t cap, used;
    size_t posts; /* postings put by pgpost_terms_post since the last cleanup */
} pgterms;

/* The entry of KEY[0..N), made if new; NULL out of memory. */
pgterm *pgpost_terms_get(pgterms *p, const char *key, size_t n);
void pgpost_terms_cleanup(pgterms *p);

/* Puts the posting of document ID (NTOK long, NPOS positions of the
 * lexeme) under the key of the scope in KEY[0..SCOPE) and lexeme
 * LEX[0..N) (KEY is scratch past SCOPE): MNEMO_NOMEM or MNEMO_OK. */
int pgpost_terms_post(pgterms *p, buf *key, size_t scope, const char *lex, size_t n, int64_t id,
                      int npos, int ntok);

/* The first N columns of KEY. */
void pgpost_key_parts(const char *key, int n, const char **part);

/* ----------------------------------------------------------------------
 * Segments
 * -------------------------------------------------------------------- */

/* A table of segments: rows (tenant, key columns, gen, n, data). */
typedef struct pgpost_table {
    int nkey;            /* key columns (at most PGPOST_MAX_KEY) */
    /* The INSERT of a batch: $1 the tenant, then a text[] per key column,
     * and the gens (bigint[]), counts (int[]) and data (bytea[]). */
    const char *insert;
    const char *write;   /* what writing is called in errors */
    const char *damaged; /* the error of a damaged segment */
    /* Moves *P past an entry's bytes after its id: 0 when cut short. */
    int (*tail)(const unsigned char **p, const unsigned char *end);
} pgpost_table;

/* A batch of segments for one INSERT, as binary arrays (pgtext_barr), which
 * the server reads without parsing text. */
typedef struct pgpost_segs {
    const pgpost_table *t;
    const char *tenant;
    pgtext_barr a[PGPOST_MAX_KEY + 3];
} pgpost_segs;

void pgpost_segs_init(pgpost_segs *g, const pgpost_table *t, const char *tenant);
void pgpost_segs_cleanup(pgpost_segs *g);

/* Adds the segment DATA[0..LEN) of N entries of the key in columns PART
 * at GEN, and writes the batch once large. */
int pgpost_segs_add(mnemo *m, pgpost_segs *g, const char *const *part, long long gen,
                    long long n, const char *data, size_t len);

/* Inserts what waits in G, and starts it again. */
int pgpost_segs_write(mnemo *m, pgpost_segs *g);

/* Each key of TERMS as a segment at GEN, all written. */
int pgpost_segs_terms(mnemo *m, pgpost_segs *g, const pgterms *terms, long long gen);

/* Reads the documents above *AFTER a page at a time: SQL with N
 * parameters PRM, $2 the id to read above (set here), its rows in id
 * order with the id first, at most PGPOST_ROWS of them, until a page
 * comes short. Each page goes to FN, MORE set when another may follow;
 * *AFTER moves to the last id read. */
int pgpost_pages(mnemo *m, const char *what, const char *sql, int n, const char **prm,
                 int64_t *after, int (*fn)(void *ud, const pg_rows *r, int more), void *ud);

/* The ids one statement gives in its first column (SQL with $1 the
 * tenant, in order) into *V, which the caller frees. */
int pgpost_ids(mnemo *m, const char *what, const char *sql, const char *tenant, int64_t **v,
               size_t *n);

/* Folds the segments R holds (rows of the key's columns, then gen and
 * data::text from column GEN on: what a DELETE ... RETURNING gave back)
 * into one per key at its largest gen, the sorted DEAD[0..NDEAD) left out,
 * written into table T again. */
int pgpost_fold(mnemo *m, const pgpost_table *t, const char *tenant, const pg_rows *r, int gen,
                const int64_t *dead, size_t ndead);

/* ----------------------------------------------------------------------
 * Reading
 * -------------------------------------------------------------------- */

/* A query term's postings as they are read: segments and rows in any
 * order (sorted by pgpost_list_sort), then walked (at). */
typedef struct pgpost_list {
    pgposting *v;
    size_t n, cap, at;
    int unsorted;
} pgpost_list;

/* Appends a posting. */
int pgpost_list_push(pgpost_list *l, int64_t id, int ntok, int tf);

/* Segment HEX (a bytea's text; RAW is scratch) into the lists L[k] whose
 * term LEX[k] is LEXEME, the sorted DEAD left out: MNEMO_CORRUPT when it
 * is damaged. */
int pgpost_lists_segment(pgpost_list *l, const char *const *lex, int nlex, const char *lexeme,
                         const char *hex, buf *raw, const int64_t *dead, size_t ndead);

/* A document's postings, from its tsvector text T, into the lists L[k]
 * whose term LEX[k] it holds (W is scratch). */
int pgpost_lists_tsv(pgpost_list *l, const char *const *lex, int nlex, int64_t id, int ntok,
                     const char *t, buf *w);

/* Sorts a list that came out of order; every list starts its walk. */
void pgpost_lists_sort(pgpost_list *l, int n);

/* Document at a time: the smallest id at the heads of L[0..N) (INT64_MAX
 * once none is left); the lists holding it move past it, each one's
 * frequency into TF[k] (0 for the others), the length into *NTOK and
 * which lists into *MASK. */
int64_t pgpost_next(pgpost_list *l, int n, uint8_t *tf, int *ntok, uint64_t *mask);

void pgpost_lists_free(pgpost_list *l, int n);

/* ======================================================================
 * pgstore.c - the PostgreSQL backend for files and chunks: sync of the
 * memory files into mnemo_files / mnemo_chunks (tsvector from mnemo's own
 * tokenizer, GIN index; embeddings in mnemo_chunk_vec_<d>, HNSW), search
 * with the same legs and ranking as the SQLite index, get, status and the
 * recall triggers of the entry files. Contracts: the public functions of
 * the same names in mnemo.h.
 *
 * The files of this side share what follows: pgstore.c (schema, helpers,
 * status), pgsync.c (sync), pgsearch.c (the search and its rows),
 * pgkeyword.c (the keyword leg) and pgnpost.c (the chunks in the inverted
 * index).
 */

#define BATCH_FILES 200     /* files per commit */
#define BATCH_CHUNKS 4000   /* chunks per commit */
#define EMBED_ROWS 256      /* chunks per embedding round */
#define MEDIA_BATCH 4       /* media files per embedding call: each is held in memory */
#define MAX_POSITIONS 255   /* per lexeme; BM25's tf saturates there too */
#define TSV_MAX_POS 16383   /* PostgreSQL's largest tsvector position */
#define PATH_ROWS_MAX 2000
#define SYNC_LOCK "7170532" /* first key of the tenant's sync lock */

/* A chunk's ranking factors, kept by the handle across searches
 * (pgsearch.c): valid while the index's stamp has not moved. */
typedef struct pgfactor {
    int64_t id; /* 0: empty slot */
    double when;
    int importance;
    uint32_t vec; /* 1 + the index of its first part's unit vector in vc, 0: not kept */
    int nvec;     /* its parts' vectors there, one after the other */
} pgfactor;

struct pgstore {
    tok *qtok, *dtok; /* query and document tokenizers */
    char lang[64];
    int stop_words;
    int64_t post_mark; /* the postings' merged mark last seen (pgnpost.c) */
    int post_seen;
    char *live;        /* the live generation's key (pgstore_live) */
    /* Factors cache: the generation key and stamp it belongs to, and an
     * open-addressing table of fc_cap (a power of two) slots. */
    char *fc_key;
    pgfactor *fc;
    size_t fc_n, fc_cap;
    int fc_warm;       /* the key was searched before */
    /* The candidates' unit vectors kept with their factors: vc_n of
     * vc_dims, room for vc_cap. */
    float *vc;
    size_t vc_n, vc_cap;
    int vc_dims;
    /* The factors statement of each vector table, kept at one address for
     * the connection's prepared statements (pgsearch.c). */
    char *fsql[8];
    int nfsql;
    /* The vector calibration's sample (pgsearch.c): cal_n unit vectors of
     * cal_dims for the key cal_key (generation, corpus version, vector
     * setup); cal_seen: the key the last search saw, fetched on its
     * second search. */
    char *cal_key, *cal_seen;
    float *cal;
    size_t cal_n;
    int cal_dims;
    /* The media's baseline (the fixed texts' cosines with them, pgsearch.c)
     * for the key mref_key (as cal_key). */
    char *mref_key;
    calib_null mref;
};

/* The handle's chunk-side state, made on first use; NULL out of memory. */
struct pgstore *pgstore_state(mnemo *m);

/* The key of TENANT's live generation of files and chunks (mnemo_live,
 * pgstore.c: the tenant itself unless a rebuild switched it), owned by the
 * handle until the next call; NULL on an error (set on M). */
const char *pgstore_live(mnemo *m, const char *tenant);

/* The query and document tokenizers for the configured language. */
int pgstore_tokenizers(mnemo *m, tok **qt, tok **dt);

/* Appends one element to an array literal being built in B ("{" first):
 * S (N bytes) as text, or V. */
void pgstore_arr_add(buf *b, const char *s, size_t n);
void pgstore_arr_int(buf *b, long long v);

/* B reset to the bigint[] literal of IDS[0..N). */
void pgstore_ids_literal(buf *b, const int64_t *ids, size_t n);

/* The tsvector text of pre-tokenized data TOKS[0..N): positions as FTS5
 * counts them (colocated tokens share one); *NTOK: the length in
 * positions. Or of TEXT, tokenized by T. */
int pgstore_tsvector_of(const char *toks, size_t n, buf *out, int *ntok);
/* The same in binary form (tsvectorrecv's input; pgnpost_add_bin reads it). */
int pgstore_tsvector_bin(const char *toks, size_t n, buf *out, int *ntok);
int pgstore_tsvector_text(tok *t, const char *text, buf *out);

/* Lowercase (ASCII, as SQLite's lower()) of S[0..N) into OUT. */
void pgstore_ascii_lower(buf *out, const char *s, size_t n);

/* One statement on the backend's connection (pgquery_q); pgstore_qp for one a
 * search runs every time (prepared on the connection: SQL must be a string
 * literal or otherwise stay at its address). */
int pgstore_q(mnemo *m, const char *what, const char *sql, int n, const char *const *params,
              pg_rows **out);
int pgstore_qp(mnemo *m, const char *what, const char *sql, int n, const char *const *params,
               pg_rows **out);
/* pgquery_send and pgquery_collect on the backend's connection. */
int pgstore_send(mnemo *m, const char *what, const char *sql, int n, const char *const *params,
                 const int *lens, const int *formats);
int pgstore_collect(mnemo *m, const char *what, pg_rows **out);

/* Column COL of row ROW as an integer; an int array literal {1,2,3}
 * parsed into V (at most CAP), the count. */
long long pgstore_ll(const pg_rows *r, size_t row, int col);
size_t pgstore_int_array(const char *s, long long *v, size_t cap);

/* The query as PostgreSQL sees it: per phrase its lexemes (space
 * separated) and prefix flag, the tsquery of the whole query and of each
 * positive phrase, and of the excluded phrases. When every positive
 * phrase is one lexeme matched whole (or none), `simple` is set and
 * `words` holds each one's lexeme at woff[k] (NUL-terminated, "" for
 * none), `lexs` the non-empty ones as an array literal. For every query,
 * `toks` holds each phrase's lexemes (the excluded ones from npos on) at
 * toff[k] (space separated, NUL-terminated) and pfx[k] says whether it is
 * one lexeme as a prefix. */
typedef struct pgsearch_query {
    buf phrases, prefix, tsq, ptsq, one, req, neg, words, lexs, toks;
    size_t woff[BM25_MAX_PHRASES], toff[BM25_MAX_PHRASES];
    unsigned char pfx[BM25_MAX_PHRASES];
    int np, npos, simple;
    int negmulti; /* an excluded phrase is not one whole lexeme */
} pgsearch_query;

typedef struct hitrow {
    int64_t id;
    int ntok;
    uint8_t tf[BM25_MAX_PHRASES];
} hitrow;

typedef struct prow {
    int64_t id;
    int have_f, have_r, have_cos;
    double when;
    int importance;
    float cos[CHUNK_MAX_PARTS]; /* of each of its parts, ncos of them */
    int ncos;
    int fetching; /* its parts' cosines are coming in a fetch */
    char *text, *path, *source, *next;
    char *mime; /* an image or audio file's MIME type, else NULL */
    int first_line, next_first_line;
    uint32_t *map;
    size_t nmap;
} prow;

typedef struct pgsearch {
    mnemo *m;
    const char *tenant;
    const query *qy;
    /* keyword leg */
    hitrow *hits;
    size_t nhits;
    double idf[BM25_MAX_PHRASES], avgdl, k1, b;
    int np;
    /* The index's stamp when the postings were read (pgnpost.c): it moves
     * with every sync commit. Empty: not known, the factors cache is not
     * used. */
    char stamp[32];
    /* vector leg */
    int vec;
    char table[64], ident[1024];
    buf qvec;
    float *qunit; /* the query vector, unit length */
    int dims;
    /* The vector leg's statement from vector_start to vector_end: its SQL
     * (vq: the stable copy, or vsql), parameters, and the side connection
     * it was sent on (NULL: it runs on the handle's at vector_end). */
    int vstate, vown, vnp;
    const char *vq, *vp[7], *vprov, *vmodel;
    char vsql[3072], vlim[32], vcal[32], vname[32];
    /* The fixed texts' vectors (engine/calib.h): their setup, and whether
     * their table is there. */
    char cident[1200];
    int ccal;
    struct pg_conn *vside;
    /* Images and audio: the tenant's media chunks (mnemo_corpus.nmedia;
     * none: no media leg, and the text leg's statements as before), what
     * the search keeps (search_legs.media), the corpus row's version. */
    long long nmedia;
    int media;
    char xmin[32];
    /* rows fetched, sorted by id */
    prow *rows;
    size_t nrows, cap;
} pgsearch;

/* BM25 of hit H, as bm25_score() computes it (every weight 1). */
double pgstore_hit_bm25(const pgsearch *s, const hitrow *h);

int pgstore_get(mnemo *m, const char *path, int from, int lines, mnemo_excerpt *out);
int pgstore_status_json(mnemo *m, int deep, char **out);
int pgstore_index_count(mnemo *m, long long *files);
/* The tenant's live files by path (backend_ops.files, files.h); an empty
 * list with indexed 0 before the first sync. */
struct file_list;
int pgstore_files(mnemo *m, size_t limit, struct file_list *out);
int pgstore_recall_triggers(mnemo *m, const char *message, char **out);

/* Frees the chunk-side state kept on the handle. */
void pgstore_close(mnemo *m);

/* ======================================================================
 * pgnpost.c - the notes' chunks in the inverted index (pgpost.c): per
 * tenant, source and lexeme, posting lists in compressed segments, merged
 * by the sync, read only for a query's terms and ranked here with exact
 * BM25 (see pgnpost.c).
 *
 * Tables (migration 6): mnemo_postings (tenant, source, lexeme, gen, n,
 * data) holds the segments; mnemo_post_state (tenant, merged) says that
 * every chunk of the tenant with an id up to `merged` is in them, except the
 * ids in mnemo_post_dead (chunks deleted since their segments were written).
 * Chunks above `merged` (a batch not merged yet, or a sync that was killed)
 * are read from their tsvectors at search time and merged by the next sync.
 */

/* The statement part recording chunks deleted by a CTE "d" (returning
 * their id) as dead when their segments hold them; $1 is the tenant. */
#define PGNPOST_DEAD                                                                              \
    "pd AS (INSERT INTO mnemo_post_dead(tenant, id) SELECT $1, d.id FROM d WHERE d.id <= "        \
    "coalesce((SELECT merged FROM mnemo_post_state WHERE tenant = $1), -1) "                    \
    "ON CONFLICT DO NOTHING) "

typedef struct pgnpost pgnpost;

/* Starts a sync's postings for TENANT (under its sync lock, outside a
 * transaction): chunks above the merged mark left by an earlier sync are
 * merged first. */
int pgnpost_open(mnemo *m, const char *tenant, pgnpost **out);
void pgnpost_free(pgnpost *p);

/* Chunk ID of SOURCE, NTOK long, whose tsvector text is TSV, to be merged. */
int pgnpost_add(pgnpost *p, int64_t id, const char *source, int ntok, const char *tsv);
/* The same from the binary tsvector T[0..N) (pgstore_tsvector_bin). */
int pgnpost_add_bin(pgnpost *p, int64_t id, const char *source, int ntok, const unsigned char *t,
                    size_t n);

/* Writes what was added as new segments, and moves the merged mark, inside
 * the caller's transaction: always with FINAL, else once enough postings
 * wait. Folds the lexemes with too many segments, and every lexeme when
 * many chunks are dead. */
int pgnpost_flush(pgnpost *p, int final);

/* 1 when enough postings wait for pgnpost_flush to write them now. */
int pgnpost_due(const pgnpost *p);
/* Whether postings wait to be written. */
int pgnpost_pending(const pgnpost *p);

/* Drops TENANT's postings (a rebuild), inside the caller's transaction. */
int pgnpost_reset(mnemo *m, const char *tenant);

/* The keyword leg from the postings (pgkeyword.c's contract), for queries
 * of whole words without excluded phrases. MNEMO_NOTFOUND when the tenant
 * has no postings yet (never synced since migration 6): use another leg. */
int pgnpost_leg(pgsearch *s, const pgsearch_query *pq, const char *source, size_t pool,
                const int64_t *extra, size_t nextra, double *sum_idf);

/* pgnpost_leg in two steps, so that other work can run between them:
 * pgnpost_read reads the query's posting lists (the statistics into S and
 * *SUM_IDF; MNEMO_NOTFOUND as pgnpost_leg's), pgnpost_walk ranks them with
 * the EXTRA ids known by then into s->hits (again, replacing them, when
 * called again: the best POOL are the same whatever the extra ids). */
typedef struct pgnpost_lists pgnpost_lists;
int pgnpost_read(pgsearch *s, const pgsearch_query *pq, const char *source, pgnpost_lists **out,
                 double *sum_idf);
int pgnpost_walk(pgsearch *s, const pgsearch_query *pq, pgnpost_lists *l, size_t pool,
                 const int64_t *extra, size_t nextra);
void pgnpost_lists_free(pgnpost_lists *l);

/* For any query (phrases, prefixes, excluded phrases): the ids, sorted, of
 * the chunks that may match one of PQ's phrases K0..K1-1 (the positive ones
 * are 0..npos-1, the excluded ones npos..np-1): those holding all the
 * lexemes of one, or a lexeme starting with a prefix; deleted ones too.
 * *MARK: the mark they were read at (every chunk above it may match as
 * well), -1 when the tenant has no postings yet; MNEMO_NOTFOUND when the
 * query is too long to be looked up this way. The caller frees *IDS. */
int pgnpost_candidates(pgsearch *s, const pgsearch_query *pq, int k0, int k1, const char *source,
                       int64_t **ids, size_t *nids, int64_t *mark);

/* ======================================================================
 * pgsync.c - a sync of the memory files into mnemo_files and mnemo_chunks:
 * the steps the engine's sync runs.
 */

extern const struct sync_store pgsync_store;

/* ======================================================================
 * pgkeyword.c - the keyword leg of a note search.
 */

/* The keyword leg (pgkeyword.c): the POOL best rows of SOURCE ("" for all)
 * by BM25 into s->hits, and the rows of EXTRA (vector candidates) that
 * match, with their frequencies; *SUM_IDF scales BM25 to 0..1. The postings
 * when every positive phrase is one word matched whole, else every
 * matching row is read and scored. */
int pgkeyword_leg(pgsearch *s, const pgsearch_query *pq, const char *source, size_t pool,
                  const int64_t *extra, size_t nextra, double *sum_idf);

/* ======================================================================
 * pgsearch.c - note search's legs, run by the engine (search.h).
 */

extern const struct search_store pgsearch_notes;

/* ======================================================================
 * pgmem.c - the PostgreSQL backend for structured memories: records with
 * JSONB metadata in mnemo_memories, their history in mnemo_memory_history,
 * vectors in mnemo_memory_vec_<d>; the filter language compiled to
 * PostgreSQL with parameters only. The engine runs the memory operations over
 * the steps below; export and import are the backend's own.
 *
 * The files of this side share what follows: pgmem.c (schema, queries and
 * transactions, derived columns, vectors, statistics, reading), pgmwrite.c
 * (add, update, delete, confirm, purge, export, import) and pgmsearch.c
 * (search).
 */

/* The columns of a memory row (alias m), in the order row_json reads. */
#define COLS                                                                                   \
    "m.id, m.text, m.category, m.importance, m.type, m.subject, m.user_id, m.agent_id, "       \
    "m.run_id, m.metadata::text, m.triggers, m.created_at, m.updated_at, m.expires_at, "       \
    "m.confirmations, m.last_confirmed_at, m.deleted_at, m.seq"

#define NCOLS 18

#define HISTORY_AGG                                                                            \
    "(SELECT json_agg(json_build_array(h.event, h.old_text, h.new_text, h.at, h.detail) "     \
    "ORDER BY h.hid) FROM mnemo_memory_history h WHERE h.tenant = m.tenant AND "             \
    "h.memory_id = m.id)"

struct pgmem {
    tok *dtok;        /* the document tokenizer */
    char *lang;       /* its language */
    int embedded;     /* memories without a vector were embedded once on this handle */
    int64_t post_mark; /* the memory index's mark as this handle saw it last */
    int post_known;    /* post_mark was read */
    struct pgmerger *bg; /* a merge running on its own thread (pgmpost.c) */
    int bg_off;          /* one failed there: the writers merge in the call again */
    long adds;           /* memories this handle added */
};

typedef int (*tx_fn)(mnemo *m, void *ud);

typedef struct tsv_ctx {
    buf *b;
    int pos, ntok;
} tsv_ctx;

/* The derived columns of a text and metadata. */
typedef struct derived {
    buf tsv;
    char *text_fold, *meta_fold;
    char ntok[16];
} derived;

/* The configured embedder when vectors are possible: its table, identity. */
typedef struct vecsetup {
    embedder *e;
    char table[64];
    char ident[1024];
    char calib[64];      /* the fixed texts' table (engine/calib.h), "" if none */
    char cident[1200];   /* and their setup */
} vecsetup;

typedef struct pgmem_params {
    const char **v;
    char (*tmp)[32];
    int n;
} pgmem_params;

struct pgmem *pgmem_state(mnemo *m);

int pgmem_q(mnemo *m, const char *what, const char *sql, int n, const char *const *p,
            pg_rows **out);

/* pgmem_q for a statement run often, prepared on the connection from its
 * second use: SQL is a string literal or static array (pg_query_prepared). */
int pgmem_qp(mnemo *m, const char *what, const char *sql, int n, const char *const *p,
             pg_rows **out);

const char *pgmem_sqlstate(mnemo *m);

double pgmem_num_at(const pg_rows *r, size_t i, int c);

const char *pgmem_fmt_num(double x, char tmp[32]);

/* Runs FN in a transaction opened by BEGIN, again after a serialization
 * failure or a deadlock (FN starts from scratch each time). BEGIN NULL:
 * FN is one statement, its own transaction, retried the same way. */
int pgmem_in_tx(mnemo *m, const char *begin, tx_fn fn, void *ud);

/* The record at columns C.. (COLS) of row I as JSON. */
json_t *pgmem_row_json(const pg_rows *r, size_t i, int c);

/* The memory ID (any pgmem_state) as JSON; FOR_UPDATE locks its row. */
int pgmem_load(mnemo *m, const char *id, int for_update, json_t **out);

int pgmem_history(mnemo *m, const char *id, const char *event, const char *old_text,
                  const char *new_text, double at, const char *detail);

void pgmem_derived_cleanup(derived *d);

/* TEXT (may be NULL: not changed) and METADATA (JSON text, may be NULL). */
int pgmem_derive(mnemo *m, const char *text, const char *metadata, derived *d);

int pgmem_vec_setup(mnemo *m, vecsetup *v);

/* Embeds memory ID's TEXT when a provider is configured; failures leave it
 * without a vector (embed_missing catches up). */
void pgmem_embed_one(mnemo *m, const char *id, const char *text);

/* Embeds the tenant's live memories that have no vector of the current
 * setup, in batches. */
void pgmem_embed_missing(mnemo *m, const vecsetup *vs);

/* Deletes vectors of the memories matching COND (over alias m, with $1 the
 * tenant and $2 PARAM) from every memory vector table. */
int pgmem_drop_vectors(mnemo *m, const char *cond, const char *param);

/* The statistics kept with the writes, as CTEs named tm (document
 * frequencies) and st (documents and tokens) of one statement: the rows of
 * SRC (a CTE or table alias with columns tsv, ntok, deleted_at) that are
 * live, counted into the tenant's ($1) counters of slot SLOT (SQL text, a
 * parameter), each count multiplied by MULT ("" or "$n::int * "). The
 * counters are per writer slot (pgquery_slot), so concurrent writers do
 * not wait for each other; readers sum the slots. Terms are upserted in
 * lexeme order, so that writers sharing a slot lock them in one order. */
#define PM_STATS_CTES(src, slot, mult)                                                         \
    "tm AS (INSERT INTO mnemo_memory_terms AS t(tenant, lexeme, slot, df) SELECT $1, l, " slot \
    ", " mult "count(*) FROM " src ", unnest(tsvector_to_array(" src ".tsv)) l WHERE " src      \
    ".deleted_at IS NULL GROUP BY l ORDER BY l ON CONFLICT (tenant, lexeme, slot) DO UPDATE "  \
    "SET df = t.df + excluded.df), st AS (INSERT INTO mnemo_memory_stats AS s(tenant, slot, "  \
    "docs, tokens) SELECT $1, " slot ", " mult "count(*), " mult "coalesce(sum(" src          \
    ".ntok), 0) FROM " src " WHERE " src ".deleted_at IS NULL HAVING count(*) > 0 ON "         \
    "CONFLICT (tenant, slot) DO UPDATE SET docs = s.docs + excluded.docs, tokens = s.tokens + " \
    "excluded.tokens)"

/* The statistics (N, the mean length, document frequencies) count the
 * live memories the memories' index has merged (seq up to its mark,
 * pgmpost.c), not each add: an add writes no counter row, the merge counts
 * the memories it merges (pgmem_stats_merged), and a search adds the live
 * memories above the mark from their rows (at most about MERGE_AT of
 * them), in the same statement that reads the counters and the mark. The
 * tenant's ($1) mark as SQL, -1 before the first merge: */
#define PM_MARK_SQL                                                                            \
    "coalesce((SELECT ps.merged FROM mnemo_memory_post_state ps WHERE ps.tenant = $1), -1)"

/* Counts the live memories of seq in (FROM, TO] into the statistics of the
 * handle's writer slot: the merge's, under the exclusive lock. */
int pgmem_stats_merged(mnemo *m, int64_t from, int64_t to);

/* Drops the tenant's statistics (a merge that starts from no mark). */
int pgmem_stats_reset(mnemo *m);

/* Counts memory ID, when live and merged, into the statistics (SIGN 1) or
 * out of them (SIGN -1): call it after a memory becomes live or its text
 * changed, and before it stops being live or its text changes, under the
 * shared lock (so that the mark stays). */
int pgmem_stats_one(mnemo *m, const char *id, int sign);

/* Folds the tenant's per-slot counters into slot 0 (rows a writer holds
 * are skipped) and drops those at 0. */
int pgmem_stats_fold(mnemo *m);

/* History entries from a json_agg of [event, old_text, new_text, at, detail]. */
json_t *pgmem_history_from_agg(const char *agg);

/* The reads the engine runs (mem_store's read_history, list, count and count_spans). */
int pgmem_read_history(mnemo *m, const char *id, json_t **out);
int pgmem_list(mnemo *m, const mem_opts *o, double now, json_t *out);
int pgmem_count(mnemo *m, const mem_opts *o, double now, long long max, long long *n);
int pgmem_count_spans(mnemo *m, const mem_opts *o, double now, double from, long long width,
                      long long origin, mem_span_fn fn, void *ud);

int pgmem_params_make(mnemo *m, const mfilter *args, int extra, pgmem_params *p);

/* Appends a parameter; returns its number. */
int pgmem_params_add(pgmem_params *p, const char *v);

void pgmem_params_free(pgmem_params *p);

/* Frees the memory-side state kept on the handle. */
void pgmem_close(mnemo *m);

/* ======================================================================
 * pgmpost.c - the memories in the inverted index (pgpost.c): the locks the
 * writes share with its merge, the merge after a write, and the reading of
 * a search's postings.
 */

/* pg_advisory_xact_lock class of a tenant's memory writes (second key
 * hashtext(tenant)): shared by every write, exclusive for the moment a
 * merge reads the newest memory (pgmpost.c). */
#define PM_POST_LOCK "7170534"

/* The class of the tenant's merge lock: exclusive for a merge, shared by
 * updates, deletes and confirmations (which change merged memories). */
#define PM_MERGE_LOCK "7170535"

/* The CTE (named lk) taking it shared in an add's or import's statement,
 * $1 the tenant; the INSERT reads FROM lk, so that the lock is held before
 * its rows take their seq. */
#define PM_POST_LOCK_CTE                                                                       \
    "lk AS (SELECT pg_advisory_xact_lock_shared(" PM_POST_LOCK ", hashtext($1)))"

/* Takes both locks shared in the caller's transaction (updates, deletes,
 * confirmations): after a merge running commits. */
int pgmpost_lock_shared(mnemo *m);

/* Records memory ID dead in the index when it was merged (its postings no
 * longer count; searches read its row): after it changed or was deleted,
 * under the shared lock. */
int pgmpost_dead(mnemo *m, const char *id);

/* After a write committed memories up to SEQ (-1: ask the server): merges
 * the memories above the mark once enough wait. After an add (SEQ given),
 * from a handle's second add on, the merge runs on a thread and a
 * connection of its own while the caller goes on (one at a time; where no
 * second connection can be had, as on PGlite, or once one failed there,
 * in the call); after an import or a handle's first add, in the call,
 * once a merge running has ended. Never fails: a merge that does not happen leaves
 * them to be read from their rows. Call it outside a transaction. */
int pgmpost_catch_up(mnemo *m, int64_t seq);

/* A memory's score factor inputs (mcand's). */
typedef struct pgmpost_factors {
    double importance, created, confirmed, confirmations;
    int about_user, known;
} pgmpost_factors;

/* A search of plain lexemes through the index. */
typedef struct pgmpost_query {
    const char *const *lex; /* the lexemes (no prefixes) */
    int nlex;               /* at most BM25_MAX_PHRASES */
    const char *lexs;       /* the same as a text array literal */
    const char *tsq;        /* their tsquery (ORed) */
    const char *scope;      /* mem_where_scope_pg's condition (alias m) */
    const char *where;      /* the search's whole condition (alias m) */
    const char *now;        /* the time expiry is checked at */
    pgmem_params *p;        /* $1 the tenant, then the conditions' arguments */
} pgmpost_query;

/* The memories in scope holding any of the lexemes, by seq: their length,
 * each lexeme's frequency (tf[i * BM25_MAX_PHRASES + k]) and factors. */
typedef struct pgmpost_docs {
    int64_t *seq;
    int *ntok;
    uint8_t *tf;
    pgmpost_factors *f; /* their factor inputs (known: read) */
    size_t n;
} pgmpost_docs;

/* Reads Q's matches in one statement (in the caller's snapshot), with the
 * same frequencies, lengths and set as reading every matching row gives.
 * MNEMO_NOTFOUND, nothing recorded, when the tenant's index was never
 * built: read the rows. */
int pgmpost_read(mnemo *m, const pgmpost_query *q, pgmpost_docs *out);
void pgmpost_docs_cleanup(pgmpost_docs *d);

/* Waits for the handle's merge running on its thread, if any: before the
 * handle's memory side is freed (pgmem_close). */
void pgmpost_wait(mnemo *m);

/* ======================================================================
 * pgmwrite.c - the storage steps of the memory operations (with pgmem.c's
 * reads), run by the engine (memory.h).
 */

extern const mem_store pgmwrite_store;

/* ======================================================================
 * pgmsearch.c - memory search's legs, run by the engine (memory.h).
 */

extern const mem_searcher pgmsearch_searcher;

/* ======================================================================
 * pgsource.c - searching an existing pgvector table: pgsource_wrap is
 * declared in engine/backend.h.
 */

/* ======================================================================
 * pgback.c - the backend's table, backend_postgres, declared in
 * engine/backend.h.
 */

#endif
