/*
 * pg.h - PostgreSQL connections: libpq loaded with dlopen on first use (like
 * libcurl in curl_dl.h: a process that never talks to PostgreSQL never pays
 * for loading it), connection settings from the DSN, an env file of
 * KEY=VALUE lines and libpq's own environment, queries with a deadline, and
 * the redaction every message goes through so credentials never reach a log.
 */
#ifndef MNEMO_PG_H
#define MNEMO_PG_H

#include <stddef.h>

#include "text/dsn.h"
#include "util/buf.h"

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

#endif
