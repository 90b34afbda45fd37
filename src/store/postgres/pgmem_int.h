/*
 * pgmem_int.h - what the files of PostgreSQL's memory side share:
 * pgmem.c (schema, queries and transactions, derived columns, vectors,
 * statistics, reading), pgmwrite.c (add, update, delete, confirm, purge,
 * export, import) and pgmsearch.c (search). Not for use outside them.
 */
#ifndef MNEMO_PGMEM_INT_H
#define MNEMO_PGMEM_INT_H

#include <stdint.h>

#include <jansson.h>

#include "engine/core.h"
#include "engine/memory.h"
#include "embed/embed.h"
#include "store/postgres/pg.h"
#include "text/mfilter.h"
#include "text/tok.h"
#include "util/buf.h"

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

typedef struct params {
    const char **v;
    char (*tmp)[32];
    int n;
} params;

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

/* The reads the engine runs (mem_store's read_history, list and count). */
int pgmem_read_history(mnemo *m, const char *id, json_t **out);
int pgmem_list(mnemo *m, const mem_opts *o, double now, json_t *out);
int pgmem_count(mnemo *m, const mem_opts *o, double now, long long *n);

int pgmem_params_make(mnemo *m, const mfilter *args, int extra, params *p);

/* Appends a parameter; returns its number. */
int pgmem_params_add(params *p, const char *v);

void pgmem_params_free(params *p);

/* ----------------------------------------------------------------------
 * Interface to pgmpost.c: the memories' inverted index
 * -------------------------------------------------------------------- */

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
    params *p;              /* $1 the tenant, then the conditions' arguments */
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

#endif
