/*
 * fts.h - mnemo's glue to SQLite FTS5: the "mnemo" tokenizer (tok.c behind
 * FTS5's tokenizer interface), and auxiliary functions: mnemo_collect()
 * gathers term frequencies and lengths of matching rows so that BM25 (with
 * tunable k1 and b) is computed in C; mnemo_phrases() gathers the same for
 * a whole query from one row, reading each phrase's rows itself (the
 * search's keyword leg); mnemo_mask() tells which phrases a row matched.
 * The ranking state also keeps, per open index, what searches reuse:
 * document lengths, chunk factors and prepared statements.
 */
#ifndef MNEMO_FTS_H
#define MNEMO_FTS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "text/bm25.h"
#include "text/tok.h"
#include "util/buf.h"

#define FTS_DL_BLOCK 512

/* Document lengths of FTS_DL_BLOCK consecutive rowids (block NO), -1 for
 * rowids without a row. */
typedef struct fts_dl_block {
    int64_t no;
    int32_t len[FTS_DL_BLOCK];
} fts_dl_block;

#define FTS_STMTS 16
#define FTS_EXTRA 6 /* collector arguments kept per hit (fts_rank.extra) */

/* A chunk's ranking inputs, kept across searches (fts_factor_get). */
typedef struct fts_factor {
    int64_t chunk_id; /* 0: an empty slot */
    double when;      /* the note's date or time, Unix seconds; 0: evergreen */
    int importance;   /* 0: none */
} fts_factor;

#define FTS_FACTORS_MAX (1 << 20) /* slots */

/* The rows of one phrase, for mnemo_phrases(): ids ascending, with the
 * phrase's frequency and the row's length. */
typedef struct fts_plist {
    int64_t *id;
    int *dl;
    uint8_t *tf;
    size_t n, cap;
} fts_plist;

typedef struct fts_rank {
    bm25_hits hits;
    sqlite3 *db;
    const char *docsize_table; /* FTS5's length table; NULL: chunks_fts_docsize */
    /* Kept across queries while the index does not change (see fts.c):
     * document lengths in blocks sorted by number, and chunk factors. */
    fts_dl_block **blocks;
    size_t nblocks, cap_blocks, cur;
    int64_t data_version, changes; /* what the blocks were read at */
    int64_t miss_block;            /* the block of this query's last miss */
    int miss_count;
    int checked;                   /* blocks validated for this query */
    fts_factor *factors;           /* open addressing by chunk id */
    size_t nfactors, cap_factors;
    fts_plist plist[BM25_MAX_PHRASES];
    /* Per hit, the values of the collector's arguments after the table
     * (FTS_EXTRA at most, NULL as 0): what the caller's join read of the
     * row, kept so that it need not read the row again. */
    double *extra;
    size_t cap_extra;
    int nextra;
    sqlite3_stmt *docsize, *version;
    /* Prepared statements of the caller, by SQL text (fts_stmt). */
    const char *stmt_sql[FTS_STMTS];
    sqlite3_stmt *stmt[FTS_STMTS];
} fts_rank;

/* A prepared statement for SQL (a string that outlives R, compared by
 * content) on R's database, reset and unbound, kept until
 * fts_rank_cleanup(). NULL on error (see sqlite3_errmsg). */
sqlite3_stmt *fts_stmt(fts_rank *r, const char *sql);

/* Resets every statement fts_stmt() keeps, ending their reads. */
void fts_stmt_reset_all(fts_rank *r);

/* Drops what R keeps across queries (lengths, factors) if the index
 * changed since it was kept. Call inside the query's read transaction;
 * mnemo_collect() and mnemo_phrases() call it at their first row. */
void fts_rank_check(fts_rank *r);

/* The kept factors of CHUNK_ID, or NULL. */
const fts_factor *fts_factor_get(const fts_rank *r, int64_t chunk_id);

/* Keeps the factors of CHUNK_ID (CHUNK_ID > 0); silently not when out of
 * memory or room. */
void fts_factor_put(fts_rank *r, int64_t chunk_id, double when, int importance);

/* Prepares for a query with NPHRASE phrases. */
void fts_rank_reset(fts_rank *r, int nphrase);

/* Releases what the state holds (before its database is closed). */
void fts_rank_cleanup(fts_rank *r);

/* Tokens computed ahead of an insert (on another thread): when FTS5 asks
 * to tokenize a document equal to TEXT, the tokenizer replays TOKS (the
 * pre-tokenized form of tok.h) instead of tokenizing again. */
typedef struct fts_feed {
    const char *text;
    size_t len;
    const char *toks;
    size_t toks_len;
} fts_feed;

/* The number of rows of an FTS5 table (its data table DATA_TABLE, e.g.
 * "main.chunks_fts_data") and their average length in tokens, as
 * FTS5 keeps them (what xRowCount() and xColumnTotalSize() answer), without
 * a query. An SQLite result code. */
int fts_totals(sqlite3 *db, const char *data_table, int64_t *ndocs, double *avgdl);

/* Registers the tokenizer and ranking function on DB. RANK and FEED (may be
 * NULL) must outlive DB. Returns an SQLite result code. */
int fts_register(sqlite3 *db, fts_rank *rank, fts_feed *feed);

/* Registers another collecting function NAME (like mnemo_collect) with its
 * own state RANK, for a second FTS table. */
int fts_register_collect(sqlite3 *db, const char *name, fts_rank *rank);

#endif
